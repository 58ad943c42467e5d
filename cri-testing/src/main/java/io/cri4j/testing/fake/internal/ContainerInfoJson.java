package io.cri4j.testing.fake.internal;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.Mount;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.cri4j.testing.fake.internal.FakeState.SandboxRecord;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The {@code info} entry of a verbose {@code ContainerStatus}, shaped as containerd's: {@code
 * sandboxID}, {@code pid}, {@code removing}, {@code snapshotKey}, {@code snapshotter}, {@code
 * runtimeType}, {@code config} (the CRI config as requested) and {@code runtimeSpec} (an OCI runtime
 * spec of what the container runs with: the config after hooks adjusted it, with its process args
 * and env, mounts, resources and devices, and as annotations the ones hooks set plus containerd's
 * {@code io.kubernetes.cri.*}: containerd does not copy a container config's own annotations into
 * the spec).
 */
final class ContainerInfoJson {

    private ContainerInfoJson() {}

    static String of(ContainerRecord c, SandboxRecord sandbox) {
        JsonObject info = new JsonObject();
        info.addProperty("sandboxID", c.sandboxId);
        info.addProperty("pid", c.pid);
        info.addProperty("removing", false);
        info.addProperty("snapshotKey", c.id);
        info.addProperty("snapshotter", "overlayfs");
        info.addProperty("runtimeType", "io.containerd.runc.v2");
        info.add("config", config(c.requested));
        info.add("runtimeSpec", runtimeSpec(c, sandbox));
        return info.toString();
    }

    /** The CRI config in the JSON field names containerd's Go types marshal to. */
    private static JsonObject config(ContainerConfig config) {
        JsonObject o = new JsonObject();
        JsonObject metadata = new JsonObject();
        metadata.addProperty("name", config.getMetadata().getName());
        metadata.addProperty("attempt", config.getMetadata().getAttempt());
        o.add("metadata", metadata);
        JsonObject image = new JsonObject();
        image.addProperty("image", config.getImage().getImage());
        o.add("image", image);
        o.add("command", strings(config.getCommandList()));
        o.add("args", strings(config.getArgsList()));
        if (!config.getWorkingDir().isEmpty()) {
            o.addProperty("working_dir", config.getWorkingDir());
        }
        JsonArray envs = new JsonArray();
        for (KeyValue kv : config.getEnvsList()) {
            JsonObject e = new JsonObject();
            e.addProperty("key", kv.getKey());
            e.addProperty("value", kv.getValue().toString(StandardCharsets.UTF_8));
            envs.add(e);
        }
        o.add("envs", envs);
        JsonArray mounts = new JsonArray();
        for (Mount m : config.getMountsList()) {
            JsonObject j = new JsonObject();
            j.addProperty("container_path", m.getContainerPath());
            j.addProperty("host_path", m.getHostPath());
            if (m.getReadonly()) {
                j.addProperty("readonly", true);
            }
            mounts.add(j);
        }
        o.add("mounts", mounts);
        o.add("labels", map(config.getLabelsMap()));
        o.add("annotations", map(config.getAnnotationsMap()));
        if (!config.getLogPath().isEmpty()) {
            o.addProperty("log_path", config.getLogPath());
        }
        JsonObject linux = new JsonObject();
        linux.add("resources", criResources(config.getLinux().getResources()));
        o.add("linux", linux);
        return o;
    }

    private static JsonObject criResources(LinuxContainerResources r) {
        JsonObject o = new JsonObject();
        o.addProperty("cpu_period", r.getCpuPeriod());
        o.addProperty("cpu_quota", r.getCpuQuota());
        o.addProperty("cpu_shares", r.getCpuShares());
        o.addProperty("memory_limit_in_bytes", r.getMemoryLimitInBytes());
        o.addProperty("oom_score_adj", r.getOomScoreAdj());
        o.addProperty("cpuset_cpus", r.getCpusetCpus());
        o.addProperty("cpuset_mems", r.getCpusetMems());
        return o;
    }

    private static JsonObject runtimeSpec(ContainerRecord c, SandboxRecord sandbox) {
        ContainerConfig config = c.config;
        JsonObject spec = new JsonObject();
        spec.addProperty("ociVersion", "1.2.1");
        JsonObject process = new JsonObject();
        process.addProperty("terminal", config.getTty());
        JsonArray args = strings(config.getCommandList());
        strings(config.getArgsList()).forEach(args::add);
        process.add("args", args);
        JsonArray env = new JsonArray();
        env.add("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        for (KeyValue kv : config.getEnvsList()) {
            env.add(kv.getKey() + "=" + kv.getValue().toString(StandardCharsets.UTF_8));
        }
        process.add("env", env);
        process.addProperty("cwd", config.getWorkingDir().isEmpty() ? "/" : config.getWorkingDir());
        LinuxContainerResources r =
                c.resources == null ? LinuxContainerResources.getDefaultInstance() : c.resources;
        if (r.getOomScoreAdj() != 0) {
            process.addProperty("oomScoreAdj", r.getOomScoreAdj());
        }
        spec.add("process", process);
        JsonObject root = new JsonObject();
        root.addProperty("path", "rootfs");
        spec.add("root", root);
        JsonArray mounts = new JsonArray();
        for (Mount m : config.getMountsList()) {
            JsonObject j = new JsonObject();
            j.addProperty("destination", m.getContainerPath());
            j.addProperty("type", "bind");
            j.addProperty("source", m.getHostPath());
            JsonArray options = new JsonArray();
            options.add("rbind");
            options.add(
                    switch (m.getPropagation()) {
                        case PROPAGATION_BIDIRECTIONAL -> "rshared";
                        case PROPAGATION_HOST_TO_CONTAINER -> "rslave";
                        default -> "rprivate";
                    });
            options.add(m.getRecursiveReadOnly() ? "rro" : m.getReadonly() ? "ro" : "rw");
            j.add("options", options);
            mounts.add(j);
        }
        spec.add("mounts", mounts);
        // like containerd: the spec carries the annotations hooks set, not the CRI config's own
        JsonObject annotations = new JsonObject();
        c.annotations.forEach(
                (k, v) -> {
                    if (!v.equals(c.requested.getAnnotationsMap().get(k))) {
                        annotations.addProperty(k, v);
                    }
                });
        annotations.addProperty("io.kubernetes.cri.container-type", "container");
        annotations.addProperty("io.kubernetes.cri.container-name", config.getMetadata().getName());
        annotations.addProperty("io.kubernetes.cri.sandbox-id", c.sandboxId);
        annotations.addProperty("io.kubernetes.cri.image-name", config.getImage().getImage());
        if (sandbox != null) {
            var m = sandbox.config.getMetadata();
            annotations.addProperty("io.kubernetes.cri.sandbox-name", m.getName());
            annotations.addProperty("io.kubernetes.cri.sandbox-namespace", m.getNamespace());
            annotations.addProperty("io.kubernetes.cri.sandbox-uid", m.getUid());
        }
        spec.add("annotations", annotations);
        JsonObject linux = new JsonObject();
        JsonObject resources = new JsonObject();
        JsonArray allowed = new JsonArray();
        JsonObject denyAll = new JsonObject();
        denyAll.addProperty("allow", false);
        denyAll.addProperty("access", "rwm");
        allowed.add(denyAll);
        JsonArray devices = new JsonArray();
        for (Device d : config.getDevicesList()) {
            long[] majorMinor = majorMinor(d.getHostPath());
            JsonObject dev = new JsonObject();
            dev.addProperty("path", d.getContainerPath());
            dev.addProperty("type", "c");
            dev.addProperty("major", majorMinor[0]);
            dev.addProperty("minor", majorMinor[1]);
            devices.add(dev);
            JsonObject allow = new JsonObject();
            allow.addProperty("allow", true);
            allow.addProperty("type", "c");
            allow.addProperty("major", majorMinor[0]);
            allow.addProperty("minor", majorMinor[1]);
            allow.addProperty("access", d.getPermissions().isEmpty() ? "rwm" : d.getPermissions());
            allowed.add(allow);
        }
        resources.add("devices", allowed);
        JsonObject memory = new JsonObject();
        if (r.getMemoryLimitInBytes() != 0) {
            memory.addProperty("limit", r.getMemoryLimitInBytes());
        }
        if (r.getMemorySwapLimitInBytes() != 0) {
            memory.addProperty("swap", r.getMemorySwapLimitInBytes());
        }
        resources.add("memory", memory);
        JsonObject cpu = new JsonObject();
        if (r.getCpuShares() != 0) {
            cpu.addProperty("shares", r.getCpuShares());
        }
        if (r.getCpuQuota() != 0) {
            cpu.addProperty("quota", r.getCpuQuota());
        }
        if (r.getCpuPeriod() != 0) {
            cpu.addProperty("period", r.getCpuPeriod());
        }
        if (!r.getCpusetCpus().isEmpty()) {
            cpu.addProperty("cpus", r.getCpusetCpus());
        }
        if (!r.getCpusetMems().isEmpty()) {
            cpu.addProperty("mems", r.getCpusetMems());
        }
        resources.add("cpu", cpu);
        linux.add("resources", resources);
        linux.add("devices", devices);
        spec.add("linux", linux);
        return spec;
    }

    /** A host device node's major and minor number (0, 0 when it is not a device here). */
    private static long[] majorMinor(String hostPath) {
        try {
            Object rdev = Files.getAttribute(Path.of(hostPath), "unix:rdev");
            long dev = ((Number) rdev).longValue();
            return new long[] {
                ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL),
                (dev & 0xff) | ((dev >>> 12) & ~0xffL)
            };
        } catch (Exception e) {
            return new long[] {0, 0};
        }
    }

    private static JsonArray strings(Iterable<String> values) {
        JsonArray a = new JsonArray();
        values.forEach(a::add);
        return a;
    }

    private static JsonObject map(Map<String, String> values) {
        JsonObject o = new JsonObject();
        values.forEach(o::addProperty);
        return o;
    }
}
