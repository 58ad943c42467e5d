package io.cri4j.testing.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a runtime reports about a container beyond CRI's fields: the {@code info} entry of a verbose
 * {@code ContainerStatus}, read the same from containerd (1.6 to 2.3) and the fake runtime. Above
 * all its {@link #runtimeSpec() runtimeSpec}, the OCI spec the container runs with, where an NRI
 * hook's adjustments land: {@code ContainerStatus}'s own annotations, mounts and resources are the
 * CRI config as requested, on containerd and on the fake.
 *
 * <pre>{@code
 * ContainerInfo info = ContainerInfo.read(runtimeStub, containerId);   // ContainerStatus, verbose
 * assertThat(info.runtimeSpec().annotations()).containsEntry("hook/seen", "yes");
 * assertThat(info.runtimeSpec().env()).containsEntry("FROM_HOOK", "1");
 * assertThat(info.runtimeSpec().cpuShares()).isEqualTo(512);
 * }</pre>
 */
public final class ContainerInfo {

    private final String sandboxId;
    private final long pid;
    private final RuntimeSpec runtimeSpec;
    private final String json;

    private ContainerInfo(String sandboxId, long pid, RuntimeSpec runtimeSpec, String json) {
        this.sandboxId = sandboxId;
        this.pid = pid;
        this.runtimeSpec = runtimeSpec;
        this.json = json;
    }

    /**
     * Asks the runtime for the container's verbose status and reads its {@code info}.
     *
     * @throws IllegalArgumentException when the runtime answers no {@code info} or not containerd's
     *     shape of it
     */
    public static ContainerInfo read(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime, String containerId) {
        return of(
                runtime.containerStatus(
                        ContainerStatusRequest.newBuilder()
                                .setContainerId(containerId)
                                .setVerbose(true)
                                .build()));
    }

    /**
     * Reads the {@code info} of a verbose {@code ContainerStatus} answer.
     *
     * @throws IllegalArgumentException when it has no {@code info} (not asked verbosely) or not
     *     containerd's shape of it
     */
    public static ContainerInfo of(ContainerStatusResponse response) {
        String info = response.getInfoMap().get("info");
        if (info == null) {
            throw new IllegalArgumentException(
                    "ContainerStatus has no \"info\" (ask with verbose=true): keys "
                            + response.getInfoMap().keySet());
        }
        return parse(info);
    }

    /**
     * Reads the JSON of a verbose {@code ContainerStatus}'s {@code info} entry.
     *
     * @throws IllegalArgumentException when it is not JSON of containerd's shape
     */
    public static ContainerInfo parse(String json) {
        Objects.requireNonNull(json, "json");
        JsonObject o;
        try {
            o = JsonParser.parseString(json).getAsJsonObject();
        } catch (JsonParseException | IllegalStateException e) {
            throw new IllegalArgumentException("container info is not a JSON object: " + e, e);
        }
        JsonElement spec = o.get("runtimeSpec");
        if (spec == null || !spec.isJsonObject()) {
            throw new IllegalArgumentException(
                    "container info has no \"runtimeSpec\" object: keys " + o.keySet());
        }
        return new ContainerInfo(
                string(o, "sandboxID"),
                o.has("pid") ? o.get("pid").getAsLong() : 0,
                RuntimeSpec.of(spec.getAsJsonObject()),
                json);
    }

    /** The container's pod sandbox id. */
    public String sandboxId() {
        return sandboxId;
    }

    /** The container's process id on the host (0 when it runs none). */
    public long pid() {
        return pid;
    }

    /** The OCI spec the container runs with: the CRI config after the runtime's hooks. */
    public RuntimeSpec runtimeSpec() {
        return runtimeSpec;
    }

    /** The {@code info} JSON as the runtime answered it, for what the typed view leaves out. */
    public String json() {
        return json;
    }

    /**
     * The parts of an OCI runtime spec hooks change (what NRI can adjust and CRI can carry).
     *
     * @param args the process's arguments
     * @param env the process's environment
     * @param annotations the spec's annotations: the ones hooks set and the runtime's own (e.g.
     *     {@code io.kubernetes.cri.container-name}); containerd does not copy the CRI config's
     *     annotations into the spec
     * @param mounts the mounts, destinations in order
     * @param devices the device nodes
     * @param cpuShares {@code linux.resources.cpu.shares}, 0 when unset
     * @param cpuQuota {@code linux.resources.cpu.quota}, 0 when unset
     * @param cpuPeriod {@code linux.resources.cpu.period}, 0 when unset
     * @param cpusetCpus {@code linux.resources.cpu.cpus}, empty when unset
     * @param cpusetMems {@code linux.resources.cpu.mems}, empty when unset
     * @param memoryLimit {@code linux.resources.memory.limit}, 0 when unset
     * @param oomScoreAdj {@code process.oomScoreAdj}, 0 when unset
     */
    public record RuntimeSpec(
            List<String> args,
            Map<String, String> env,
            Map<String, String> annotations,
            List<SpecMount> mounts,
            List<SpecDevice> devices,
            long cpuShares,
            long cpuQuota,
            long cpuPeriod,
            String cpusetCpus,
            String cpusetMems,
            long memoryLimit,
            long oomScoreAdj) {

        /** The spec; the collections copied. */
        public RuntimeSpec {
            args = List.copyOf(args);
            env = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(env));
            annotations = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
            mounts = List.copyOf(mounts);
            devices = List.copyOf(devices);
        }

        static RuntimeSpec of(JsonObject spec) {
            JsonObject process = object(spec, "process");
            List<String> args = new ArrayList<>();
            array(process, "args").forEach(a -> args.add(a.getAsString()));
            Map<String, String> env = new LinkedHashMap<>();
            for (JsonElement e : array(process, "env")) {
                String kv = e.getAsString();
                int eq = kv.indexOf('=');
                env.put(eq < 0 ? kv : kv.substring(0, eq), eq < 0 ? "" : kv.substring(eq + 1));
            }
            Map<String, String> annotations = new LinkedHashMap<>();
            object(spec, "annotations")
                    .entrySet()
                    .forEach(e -> annotations.put(e.getKey(), e.getValue().getAsString()));
            List<SpecMount> mounts = new ArrayList<>();
            for (JsonElement e : array(spec, "mounts")) {
                JsonObject m = e.getAsJsonObject();
                List<String> options = new ArrayList<>();
                array(m, "options").forEach(x -> options.add(x.getAsString()));
                mounts.add(
                        new SpecMount(
                                string(m, "destination"),
                                string(m, "source"),
                                string(m, "type"),
                                options));
            }
            JsonObject linux = object(spec, "linux");
            List<SpecDevice> devices = new ArrayList<>();
            for (JsonElement e : array(linux, "devices")) {
                JsonObject d = e.getAsJsonObject();
                devices.add(
                        new SpecDevice(
                                string(d, "path"),
                                string(d, "type"),
                                number(d, "major"),
                                number(d, "minor")));
            }
            JsonObject resources = object(linux, "resources");
            JsonObject cpu = object(resources, "cpu");
            JsonObject memory = object(resources, "memory");
            return new RuntimeSpec(
                    args,
                    env,
                    annotations,
                    mounts,
                    devices,
                    number(cpu, "shares"),
                    number(cpu, "quota"),
                    number(cpu, "period"),
                    string(cpu, "cpus"),
                    string(cpu, "mems"),
                    number(memory, "limit"),
                    number(process, "oomScoreAdj"));
        }
    }

    /**
     * A mount of the spec.
     *
     * @param destination the path in the container
     * @param source the host path
     * @param type e.g. {@code bind}
     * @param options e.g. {@code rbind}, {@code rprivate}, {@code ro}
     */
    public record SpecMount(String destination, String source, String type, List<String> options) {
        /** The mount; the options copied. */
        public SpecMount {
            options = List.copyOf(options);
        }
    }

    /**
     * A device node of the spec.
     *
     * @param path the path in the container
     * @param type {@code c} or {@code b}
     * @param major the major number
     * @param minor the minor number
     */
    public record SpecDevice(String path, String type, long major, long minor) {}

    private static JsonObject object(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e != null && e.isJsonObject() ? e.getAsJsonObject() : new JsonObject();
    }

    private static JsonArray array(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e != null && e.isJsonArray() ? e.getAsJsonArray() : new JsonArray();
    }

    private static String string(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? "" : e.getAsString();
    }

    private static long number(JsonObject o, String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? 0 : e.getAsLong();
    }
}
