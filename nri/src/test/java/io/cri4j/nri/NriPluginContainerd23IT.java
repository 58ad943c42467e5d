package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.LocalContainerd;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java NRI plugins against containerd 2.3.4 (NRI v0.12.0, the long-term-support line): the cases
 * that differ per runtime ({@link NriPluginRuntimeCases}), and the reconnection after a long
 * outage.
 */
class NriPluginContainerd23IT extends NriPluginRuntimeCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd23WithNri().build();

    @TempDir static Path tmp;

    static Pods pods;

    @BeforeAll
    static void startPods() throws Exception {
        pods = new Pods(CONTAINERD.containerd(), tmp);
    }

    @AfterAll
    static void closePods() throws Exception {
        if (pods != null) {
            pods.close();
        }
    }

    @Override
    LocalContainerd containerd() {
        return CONTAINERD.containerd();
    }

    @Override
    Pods pods() {
        return pods;
    }

    @Override
    Path tmp() {
        return tmp;
    }

    @Override
    String runtimeVersion() {
        return "v2.3.4";
    }

    @Override
    void assertCalledAsThisRuntimeCallsPlugins(String fullName) throws Exception {
        String log = Files.readString(containerd().logFile());
        // the version exchange: the plugin named the NRI API it speaks
        assertThat(log)
                .contains("registered as \\\"" + fullName + "\\\" (with NRI version v0.12.2)");
        // and containerd called each event's own RPC: no fallback to StateChange
        assertThat(log)
                .doesNotContain("plugin " + fullName + " uses deprecated StateChange")
                .doesNotContain(fullName + " does not implement a dedicated");
    }

    /**
     * containerd killed and kept down for 40 s (the plugin's back-off would have grown to its cap
     * by then), then started again: the plugin, watching the socket's directory, is registered
     * within a second of the socket's return, used next to no CPU while it waited, and the next
     * container is adjusted.
     */
    @Test
    void registersWithinASecondOfTheSocketsReturnAfterAFortySecondOutage() throws Exception {
        List<Instant> registeredAt = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch disconnected = new CountDownLatch(1);
        try (NriPlugin plugin =
                NriPlugin.builder(addEnv("prompt", "CRI4J_PROMPT", "1"))
                        .socket(containerd().nriSocket()) // default back-off: 0.5 s up to 30 s
                        .listener(
                                new NriPlugin.Listener() {
                                    @Override
                                    public void registered(String name, String version) {
                                        registeredAt.add(Instant.now());
                                    }

                                    @Override
                                    public void disconnected(Throwable cause) {
                                        disconnected.countDown();
                                    }
                                })
                        .build()
                        .start()) {
            containerd().awaitNriPluginRegistrations("50-prompt", 1, Duration.ofSeconds(10));
            int before = containerd().nriPluginRegistrations("50-prompt");
            containerd().kill();
            assertThat(disconnected.await(10, TimeUnit.SECONDS)).isTrue();
            long cpuBefore = pluginCpuNanos("50-prompt");
            // the outage itself: nothing to wait for, containerd is down
            Thread.sleep(40_000);
            long waitingCpu = pluginCpuNanos("50-prompt") - cpuBefore;
            int registrationsWhileDown = registeredAt.size();
            containerd().startAgain();
            Instant socketBack = Files.getLastModifiedTime(containerd().nriSocket()).toInstant();
            containerd()
                    .awaitNriPluginRegistrations("50-prompt", before + 1, Duration.ofSeconds(20));
            assertThat(registeredAt).hasSize(registrationsWhileDown + 1);
            Duration late = Duration.between(socketBack, registeredAt.get(registeredAt.size() - 1));
            System.out.printf(
                    "NRI reconnect after a 40 s outage: registered %d ms after containerd 2.3.4's"
                            + " NRI socket was created; the waiting plugin's threads used %d ms"
                            + " of CPU in 40 s%n",
                    late.toMillis(), waitingCpu / 1_000_000);
            assertThat(late).isLessThan(Duration.ofSeconds(1));
            assertThat(Duration.ofNanos(waitingCpu)).isLessThan(Duration.ofMillis(200));
            assertThat(plugin.isRegistered()).isTrue();
            Pods.Pod pod = pods.runPod("after-outage", Map.of());
            String id = pods.start(pod, "app");
            assertThat(pods.exec(id, "env")).contains("CRI4J_PROMPT=1");
        }
    }

    /** Where an adjustment lands on containerd 2.3.4 with runc 1.1.5 (cgroup v1). */
    enum Lands {
        /** Seen inside the running container. */
        APPLIED,
        /** Written to the OCI spec, left to runc and the host (which ignore it here). */
        SPEC,
        /** Refused by containerd: CreateContainer fails with a clear error. */
        REFUSED,
        /**
         * Taken by containerd without an error but not in the OCI spec as asked (containerd 2.3.4
         * drops the removal of an env var of the container's config and a memory reservation,
         * and writes swap = limit over the plugin's swap).
         */
        LOST,
        /** In the spec, but runc would not start the container. */
        NOT_STARTED
    }

    @FunctionalInterface
    interface Check {
        boolean holds(String containerId) throws Exception;
    }

    /** One kind of adjustment: what the hook asks, how the spec and the container show it. */
    record Kind(
            String name,
            Lands expected,
            java.util.function.Consumer<io.cri4j.hook.Adjustments> adjust,
            java.util.function.Predicate<String> inSpec,
            Check inContainer) {}

    private Check output(String shell, String expected) {
        return id -> {
            try {
                return pods.exec(id, "sh", "-c", shell).contains(expected);
            } catch (RuntimeException | AssertionError e) {
                return false;
            }
        };
    }

    /**
     * The hook's 25 kinds of adjustment, each on its own container: applied and seen in the
     * container, refused by containerd with a clear error, or written to the OCI spec (info.
     * runtimeSpec of ContainerStatus verbose) and left to runc and the host.
     */
    @Test
    void eachKindOfAdjustmentLandsWhereContainerd23PutsIt() throws Exception {
        Path data = Files.createDirectories(tmp.resolve("adjust-data"));
        Files.writeString(data.resolve("hello"), "from the host\n");
        Path hookRan = tmp.resolve("oci-hook-ran");
        List<Kind> kinds =
                List.of(
                        new Kind(
                                "env",
                                Lands.APPLIED,
                                a -> a.addEnv("CRI4J_ADJ", "env"),
                                sp -> sp.contains("CRI4J_ADJ=env"),
                                output("env", "CRI4J_ADJ=env")),
                        new Kind(
                                "env-removed",
                                Lands.LOST,
                                a -> a.removeEnv("CRI4J_DROP"),
                                sp -> !sp.contains("CRI4J_DROP"),
                                id -> !pods.exec(id, "env").contains("CRI4J_DROP")),
                        new Kind(
                                "annotation",
                                Lands.SPEC,
                                a -> a.addAnnotation("cri4j.io/adj", "annotation"),
                                sp -> sp.contains("\"cri4j.io/adj\":\"annotation\""),
                                null),
                        new Kind(
                                "mount",
                                Lands.APPLIED,
                                a ->
                                        a.addMount(
                                                "/adj-data",
                                                "bind",
                                                data.toString(),
                                                "rbind",
                                                "ro"),
                                sp -> sp.contains("/adj-data"),
                                output("cat /adj-data/hello", "from the host")),
                        new Kind(
                                "args",
                                Lands.APPLIED,
                                a -> a.setArgs("sleep", "3601"),
                                sp -> sp.contains("\"3601\""),
                                output("ps -o args", "sleep 3601")),
                        new Kind(
                                "rlimit",
                                Lands.APPLIED,
                                a -> a.addRlimit("RLIMIT_NOFILE", 4321, 4321),
                                sp -> sp.contains("4321"),
                                output("cat /proc/self/limits", "4321")),
                        new Kind(
                                "device",
                                Lands.APPLIED,
                                a ->
                                        a.addDevice(
                                                io.cri4j.hook.nri.v1alpha1.LinuxDevice.newBuilder()
                                                        .setPath("/dev/cri4j-zero")
                                                        .setType("c")
                                                        .setMajor(1)
                                                        .setMinor(5)
                                                        .setFileMode(
                                                                io.cri4j.hook.nri.v1alpha1
                                                                        .OptionalFileMode
                                                                        .newBuilder()
                                                                        .setValue(0666))
                                                        .build()),
                                sp -> sp.contains("/dev/cri4j-zero"),
                                output(
                                        "test -c /dev/cri4j-zero && echo is-a-device",
                                        "is-a-device")),
                        new Kind(
                                "cdi-device",
                                Lands.REFUSED,
                                a -> a.addCdiDevice("vendor.example.com/device=one"),
                                sp -> true,
                                null),
                        new Kind(
                                "oci-hook",
                                Lands.APPLIED,
                                a ->
                                        a.addHooks(
                                                io.cri4j.hook.nri.v1alpha1.Hooks.newBuilder()
                                                        .addCreateRuntime(
                                                                io.cri4j.hook.nri.v1alpha1.Hook
                                                                        .newBuilder()
                                                                        .setPath("/bin/sh")
                                                                        .addAllArgs(
                                                                                List.of(
                                                                                        "sh",
                                                                                        "-c",
                                                                                        "echo ran > "
                                                                                                + hookRan)))
                                                        .build()),
                                sp -> sp.contains(hookRan.toString()),
                                id -> Files.exists(hookRan)),
                        new Kind(
                                "namespace",
                                Lands.SPEC,
                                a -> a.addOrReplaceNamespace("uts", ""),
                                sp -> sp.contains("{\"type\":\"uts\"}"),
                                null),
                        new Kind(
                                "sysctl",
                                Lands.APPLIED,
                                a -> a.addLinuxSysctl("kernel.shm_rmid_forced", "1"),
                                sp -> sp.contains("\"kernel.shm_rmid_forced\":\"1\""),
                                output("cat /proc/sys/kernel/shm_rmid_forced", "1")),
                        new Kind(
                                "oom-score-adj",
                                Lands.APPLIED,
                                a -> a.setLinuxOomScoreAdj(123),
                                sp -> sp.contains("\"oomScoreAdj\":123"),
                                output("cat /proc/self/oom_score_adj", "123")),
                        new Kind(
                                "io-priority",
                                Lands.SPEC,
                                a ->
                                        a.setLinuxIoPriority(
                                                io.cri4j.hook.nri.v1alpha1.IOPrioClass
                                                        .IOPRIO_CLASS_BE,
                                                3),
                                sp -> sp.contains("ioPriority"),
                                null),
                        new Kind(
                                "seccomp",
                                Lands.APPLIED,
                                a ->
                                        a.setLinuxSeccompPolicy(
                                                io.cri4j.hook.nri.v1alpha1.LinuxSeccomp.newBuilder()
                                                        .setDefaultAction("SCMP_ACT_ALLOW")
                                                        .build()),
                                sp -> sp.contains("SCMP_ACT_ALLOW"),
                                output("grep Seccomp: /proc/self/status", "2")),
                        new Kind(
                                "scheduler",
                                Lands.SPEC,
                                a ->
                                        a.setLinuxScheduler(
                                                io.cri4j.hook.nri.v1alpha1.LinuxScheduler
                                                        .newBuilder()
                                                        .setPolicy(
                                                                io.cri4j.hook.nri.v1alpha1
                                                                        .LinuxSchedulerPolicy
                                                                        .SCHED_BATCH)
                                                        .build()),
                                sp -> sp.contains("SCHED_BATCH"),
                                null),
                        new Kind(
                                "memory-policy",
                                Lands.SPEC,
                                a ->
                                        a.setLinuxMemoryPolicy(
                                                io.cri4j.hook.nri.v1alpha1.MpolMode.MPOL_PREFERRED,
                                                "0"),
                                sp -> sp.contains("MPOL_PREFERRED"),
                                null),
                        new Kind(
                                "memory-limit",
                                Lands.APPLIED,
                                a -> a.setLinuxMemoryLimit(256L << 20),
                                sp -> sp.contains("\"limit\":268435456"),
                                output(
                                        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                                        "268435456")),
                        new Kind(
                                "memory-reservation",
                                Lands.LOST,
                                a -> a.setLinuxMemoryReservation(128L << 20),
                                sp -> sp.contains("\"reservation\":134217728"),
                                output(
                                        "cat /sys/fs/cgroup/memory/memory.soft_limit_in_bytes",
                                        "134217728")),
                        new Kind(
                                "memory-swap",
                                Lands.LOST,
                                a ->
                                        a.setLinuxMemoryLimit(256L << 20)
                                                .setLinuxMemorySwap(512L << 20),
                                sp -> sp.contains("\"swap\":536870912"),
                                output(
                                        "cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes",
                                        "536870912")),
                        new Kind(
                                "cpu-shares",
                                Lands.APPLIED,
                                a -> a.setLinuxCpuShares(321),
                                sp -> sp.contains("\"shares\":321"),
                                output("cat /sys/fs/cgroup/cpu/cpu.shares", "321")),
                        new Kind(
                                "cpu-quota",
                                Lands.APPLIED,
                                a -> a.setLinuxCpuQuota(50000).setLinuxCpuPeriod(100000),
                                sp -> sp.contains("\"quota\":50000"),
                                output("cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us", "50000")),
                        new Kind(
                                "cpuset-cpus",
                                Lands.APPLIED,
                                a -> a.setLinuxCpuSetCpus("1"),
                                sp -> sp.contains("\"cpus\":\"1\""),
                                output("grep Cpus_allowed_list /proc/self/status", "\t1")),
                        new Kind(
                                "cpuset-mems",
                                Lands.SPEC,
                                a -> a.setLinuxCpuSetMems("0"),
                                sp -> sp.contains("\"mems\":\"0\""),
                                null),
                        new Kind(
                                "pids-limit",
                                Lands.APPLIED,
                                a -> a.setLinuxPidLimits(321),
                                sp -> sp.contains("\"limit\":321"),
                                output("cat /sys/fs/cgroup/pids/pids.max", "321")),
                        new Kind(
                                "blockio-class",
                                Lands.REFUSED,
                                a -> a.setLinuxBlockIoClass("gold"),
                                sp -> true,
                                null));
        assertThat(kinds).hasSize(25);
        Map<String, io.cri4j.hook.nri.v1alpha1.ContainerAdjustment> byName =
                new java.util.HashMap<>();
        for (Kind k : kinds) {
            io.cri4j.hook.Adjustments a = io.cri4j.hook.Adjustments.create();
            k.adjust().accept(a);
            byName.put("adj-" + k.name(), a.build());
        }
        io.cri4j.hook.Hook hook =
                new io.cri4j.hook.Hook() {
                    @Override
                    public String name() {
                        return "adjust";
                    }

                    @Override
                    public io.cri4j.hook.HookResult createContainer(
                            io.cri4j.hook.nri.v1alpha1.PodSandbox pod,
                            io.cri4j.hook.nri.v1alpha1.Container c) {
                        io.cri4j.hook.nri.v1alpha1.ContainerAdjustment a = byName.get(c.getName());
                        return a == null
                                ? io.cri4j.hook.HookResult.none()
                                : io.cri4j.hook.HookResult.adjust(a);
                    }
                };
        Map<String, Lands> expected = new java.util.LinkedHashMap<>();
        Map<String, String> actual = new java.util.LinkedHashMap<>();
        Map<String, Lands> landed = new java.util.LinkedHashMap<>();
        try (NriPlugin plugin =
                NriPlugin.builder(hook)
                        .socket(containerd().nriSocket())
                        .index(15)
                        .build()
                        .start()) {
            containerd().awaitNriPluginRegistrations("15-adjust", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("adjust", Map.of());
            for (Kind k : kinds) {
                expected.put(k.name(), k.expected());
                String id;
                try {
                    id = pods.create(pod, "adj-" + k.name(), Map.of("CRI4J_DROP", "x"));
                } catch (io.grpc.StatusRuntimeException e) {
                    landed.put(k.name(), Lands.REFUSED);
                    actual.put(k.name(), "REFUSED: " + e.getStatus().getDescription());
                    continue;
                }
                String spec = pods.spec(id).toString();
                if (!k.inSpec().test(spec)) {
                    landed.put(k.name(), Lands.LOST);
                    actual.put(k.name(), "LOST: " + spec);
                    continue;
                }
                try {
                    pods.start(id);
                } catch (RuntimeException e) {
                    landed.put(k.name(), Lands.NOT_STARTED);
                    actual.put(k.name(), "NOT_STARTED: " + e.getMessage());
                    continue;
                }
                Lands l =
                        k.inContainer() != null && k.inContainer().holds(id)
                                ? Lands.APPLIED
                                : Lands.SPEC;
                landed.put(k.name(), l);
                actual.put(k.name(), l.toString());
            }
        }
        StringBuilder table =
                new StringBuilder("where each adjustment lands on containerd 2.3.4:\n");
        actual.forEach((k, v) -> table.append(String.format("  %-20s %s%n", k, v)));
        System.out.print(table);
        assertThat(landed).as(table.toString()).containsExactlyEntriesOf(expected);
        assertThat(actual.get("cdi-device")).contains("vendor.example.com/device=one");
        assertThat(actual.get("blockio-class")).contains("gold");
    }

    /** CPU time of the plugin's threads (its event loop and its socket watch), in ns. */
    private static long pluginCpuNanos(String fullName) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
            if (t != null && t.getThreadName().startsWith("cri4j-nri-" + fullName)) {
                long ns = mx.getThreadCpuTime(t.getThreadId());
                if (ns > 0) {
                    sum += ns;
                }
            }
        }
        return sum;
    }

    @Test
    void aDeviceCgroupRuleReachesTheContainersOciSpec() throws Exception {
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "tun-access";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.adjust(
                                Adjustments.create()
                                        .addEnv("CRI4J_RULES", "tun")
                                        .addLinuxDeviceCgroupRule(true, "c", 10L, 200L, "rwm")
                                        .build());
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(hook)
                        .socket(CONTAINERD.containerd().nriSocket())
                        .index(10)
                        .build()) {
            plugin.start();
            CONTAINERD
                    .containerd()
                    .awaitNriPluginRegistrations("10-tun-access", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("rules", Map.of());
            String id = pods.start(pod, "app");
            assertThat(pods.exec(id, "env")).contains("CRI4J_RULES=tun");

            // ContainerStatus (verbose): info.runtimeSpec.linux.resources.devices
            JsonObject spec = pods.spec(id);
            List<String> rules = new ArrayList<>();
            for (JsonElement e :
                    spec.getAsJsonObject("linux")
                            .getAsJsonObject("resources")
                            .getAsJsonArray("devices")) {
                JsonObject r = e.getAsJsonObject();
                rules.add(
                        r.get("allow").getAsBoolean()
                                + " "
                                + (r.has("type") ? r.get("type").getAsString() : "a")
                                + " "
                                + (r.has("major") ? r.get("major").getAsString() : "*")
                                + ":"
                                + (r.has("minor") ? r.get("minor").getAsString() : "*")
                                + " "
                                + r.get("access").getAsString());
            }
            assertThat(rules)
                    .as("the OCI spec's device cgroup rules")
                    .contains("true c 10:200 rwm");
        }
    }
}
