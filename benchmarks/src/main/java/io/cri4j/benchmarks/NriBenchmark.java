package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.LinuxSandboxSecurityContext;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.nri.NriPlugin;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.NriGoPlugin;
import io.cri4j.testing.real.TestImage;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NRI against containerd 2.1.4 (private instance, harness of cri-testing):
 * <ul>
 *   <li>{@code latency [ROUNDS] [PER_ROUND]}: CreateContainer+StartContainer wall time with no NRI plugin,
 *       with NRI's Go {@code nri-logger} and with a no-op cri4j plugin subscribed to the same 11 events,
 *       interleaved: each round runs every mode once, in rotating order.</li>
 *   <li>{@code sync [CONTAINERS]}: containerd's Synchronize of a plugin (from its log line
 *       "synchronizing plugin" to "connected and synchronized") with that many containers, for the
 *       cri4j plugin and for nri-logger, alternating, 5 times each.</li>
 *   <li>{@code rss CLI_JAR PLUGIN_DIR [JVM_FLAGS...]}: resident memory of an idle
 *       {@code cri4j nri-plugin} process, registered, after 10 s; {@code
 *       -Dcri4j.nri.pluginArgs="--metrics-address 127.0.0.1:0"} adds options to its command.</li>
 * </ul>
 * Run: {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.NriBenchmark latency};
 * {@code -Dcri4j.nri.containerd=2.3} measures on containerd 2.3.4 (NRI v0.12) instead of 2.1.4.
 */
public final class NriBenchmark {

    private NriBenchmark() {}

    /** The events both plugins subscribe to: all of NRI v0.8's. */
    static final Set<HookEvent> LOGGER_EVENTS =
            EnumSet.of(
                    HookEvent.RUN_POD_SANDBOX,
                    HookEvent.STOP_POD_SANDBOX,
                    HookEvent.REMOVE_POD_SANDBOX,
                    HookEvent.CREATE_CONTAINER,
                    HookEvent.POST_CREATE_CONTAINER,
                    HookEvent.START_CONTAINER,
                    HookEvent.POST_START_CONTAINER,
                    HookEvent.UPDATE_CONTAINER,
                    HookEvent.POST_UPDATE_CONTAINER,
                    HookEvent.STOP_CONTAINER,
                    HookEvent.REMOVE_CONTAINER);

    /**
     * {@link #LOGGER_EVENTS} as nri-logger's {@code -events}: NRI v0.12's logger would also
     * validate every container (and a validator that just closed fails the next creation).
     */
    static final String LOGGER_EVENT_NAMES =
            LOGGER_EVENTS.stream()
                    .map(e -> e.displayName().toLowerCase(java.util.Locale.ROOT))
                    .collect(java.util.stream.Collectors.joining(","));

    /** A plugin that answers every event at once with nothing. */
    static final class NoOpHook implements AsyncHook {
        private final List<Integer> synchronizedContainers = new ArrayList<>();

        @Override
        public String name() {
            return "cri4j-noop";
        }

        @Override
        public Set<HookEvent> events() {
            return LOGGER_EVENTS;
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> synchronize(
                List<PodSandbox> pods, List<Container> cs) {
            synchronizedContainers.add(cs.size());
            return CompletableFuture.completedFuture(List.of());
        }
    }

    /**
     * The containerd measured: 2.1.4 (NRI v0.8) by default, 2.3.4 (NRI v0.12) with {@code
     * -Dcri4j.nri.containerd=2.3}.
     */
    static LocalContainerd.Builder containerd() {
        String v = System.getProperty("cri4j.nri.containerd", "2.1");
        return switch (v) {
            case "2.1" -> LocalContainerd.builder().containerd2WithNri();
            case "2.3" -> LocalContainerd.builder().containerd23WithNri();
            default ->
                    throw new IllegalArgumentException(
                            "-Dcri4j.nri.containerd must be 2.1 or 2.3, got " + v);
        };
    }

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "latency";
        switch (what) {
            case "latency" -> latency(arg(args, 1, 10), arg(args, 2, 10));
            case "sync" -> sync(arg(args, 1, 500));
            case "rss" ->
                    rss(
                            Path.of(args[1]),
                            Path.of(args[2]),
                            Arrays.copyOfRange(args, 3, args.length));
            default -> throw new IllegalArgumentException("latency | sync | rss, not " + what);
        }
        System.exit(0);
    }

    private static int arg(String[] args, int i, int dflt) {
        return args.length > i ? Integer.parseInt(args[i]) : dflt;
    }

    /** A host-network pod (no CNI needed), its logs under {@code logDir}. */
    static PodSandboxConfig pod(String name, Path logDir) {
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace("bench")
                                .setUid(UUID.randomUUID().toString()))
                .setLogDirectory(logDir.toString())
                .setLinux(
                        LinuxPodSandboxConfig.newBuilder()
                                .setSecurityContext(
                                        LinuxSandboxSecurityContext.newBuilder()
                                                .setNamespaceOptions(
                                                        NamespaceOption.newBuilder()
                                                                .setNetwork(NamespaceMode.NODE))))
                .build();
    }

    /** A container that sleeps an hour. */
    static ContainerConfig container(String name, String image) {
        return ContainerConfig.newBuilder()
                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                .setImage(ImageSpec.newBuilder().setImage(image))
                .addCommand("sleep")
                .addArgs("3600")
                .setLogPath(name + ".log")
                .build();
    }

    // --- latency ---------------------------------------------------------------------------

    static void latency(int rounds, int perRound) throws Exception {
        Path logs = Files.createTempDirectory("cri4j-nri-bench");
        try (LocalContainerd containerd = containerd().start()) {
            ManagedChannel ch = CriChannels.newChannel(containerd.endpoint());
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                    RuntimeServiceGrpc.newBlockingStub(ch);
            String image = containerd.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(ch)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            PodSandboxConfig podConfig = pod("latency", logs);
            String podId =
                    rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(podConfig).build())
                            .getPodSandboxId();
            String[] modes = {"none", "nri-logger (Go)", "cri4j no-op"};
            Map<String, List<Long>> samples = new LinkedHashMap<>();
            for (String m : modes) {
                samples.put(m, new ArrayList<>());
            }
            int n = 0;
            for (int round = -1; round < rounds; round++) { // round -1 warms up and is not counted
                for (int k = 0; k < modes.length; k++) {
                    String mode = modes[(Math.max(round, 0) + k) % modes.length];
                    AutoCloseable plugin =
                            switch (mode) {
                                case "nri-logger (Go)" ->
                                        NriGoPlugin.logger(
                                                containerd, 20, "-events", LOGGER_EVENT_NAMES);
                                case "cri4j no-op" -> {
                                    int before = containerd.nriPluginRegistrations("20-cri4j-noop");
                                    NriPlugin p =
                                            NriPlugin.builder(new NoOpHook())
                                                    .socket(containerd.nriSocket())
                                                    .index(20)
                                                    .build()
                                                    .start();
                                    containerd.awaitNriPluginRegistrations(
                                            "20-cri4j-noop", before + 1, Duration.ofSeconds(10));
                                    yield p;
                                }
                                default -> () -> {};
                            };
                    try {
                        for (int i = 0; i < perRound; i++) {
                            String name = "c" + n++;
                            long t0 = System.nanoTime();
                            String id =
                                    rt.createContainer(
                                                    CreateContainerRequest.newBuilder()
                                                            .setPodSandboxId(podId)
                                                            .setSandboxConfig(podConfig)
                                                            .setConfig(container(name, image))
                                                            .build())
                                            .getContainerId();
                            rt.startContainer(
                                    StartContainerRequest.newBuilder().setContainerId(id).build());
                            long t = System.nanoTime() - t0;
                            if (round >= 0) {
                                samples.get(mode).add(t);
                            }
                            rt.stopContainer(
                                    StopContainerRequest.newBuilder()
                                            .setContainerId(id)
                                            .setTimeout(0)
                                            .build());
                            rt.removeContainer(
                                    RemoveContainerRequest.newBuilder().setContainerId(id).build());
                        }
                    } finally {
                        plugin.close();
                    }
                }
            }
            System.out.printf(
                    "CreateContainer+StartContainer against containerd %s, %d rounds x %d per mode%n",
                    System.getProperty("cri4j.nri.containerd", "2.1"), rounds, perRound);
            double base = median(samples.get("none"));
            for (Map.Entry<String, List<Long>> e : samples.entrySet()) {
                double med = median(e.getValue());
                System.out.printf(
                        "  %-16s p50 %7.1f ms  mean %7.1f ms  p90 %7.1f ms  x%.2f of none%n",
                        e.getKey(),
                        med / 1e6,
                        mean(e.getValue()) / 1e6,
                        pct(e.getValue(), 0.9) / 1e6,
                        med / base);
            }
            System.out.printf(
                    "  cri4j no-op / nri-logger p50: %.2f%n",
                    median(samples.get("cri4j no-op")) / median(samples.get("nri-logger (Go)")));
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    // --- sync ------------------------------------------------------------------------------

    private static final Pattern TIME = Pattern.compile("time=\"([^\"]+)\"");

    static void sync(int containers) throws Exception {
        Path logs = Files.createTempDirectory("cri4j-nri-bench");
        try (LocalContainerd containerd = containerd().start()) {
            ManagedChannel ch = CriChannels.newChannel(containerd.endpoint());
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                    RuntimeServiceGrpc.newBlockingStub(ch);
            String image = containerd.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(ch)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            NoOpHook hook = new NoOpHook();
            int registrations = 0;
            List<Long> empty = new ArrayList<>();
            for (int i = 0; i < 6; i++) { // the first warms up
                try (NriPlugin p =
                        NriPlugin.builder(hook)
                                .socket(containerd.nriSocket())
                                .index(20)
                                .build()
                                .start()) {
                    containerd.awaitNriPluginRegistrations(
                            p.fullName(), ++registrations, Duration.ofSeconds(30));
                }
                if (i > 0) {
                    empty.add(syncTime(containerd, "20-cri4j-noop"));
                }
            }
            int pods = Math.max(1, containers / 50);
            long t0 = System.nanoTime();
            for (int p = 0; p < pods; p++) {
                PodSandboxConfig podConfig = pod("sync-" + p, logs);
                String podId =
                        rt.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(podConfig)
                                                .build())
                                .getPodSandboxId();
                for (int c = p; c < containers; c += pods) {
                    rt.createContainer(
                            CreateContainerRequest.newBuilder()
                                    .setPodSandboxId(podId)
                                    .setSandboxConfig(podConfig)
                                    .setConfig(container("c" + c, image))
                                    .build());
                }
            }
            System.out.printf(
                    "created %d pods and %d containers in %.1f s%n",
                    pods, containers, (System.nanoTime() - t0) / 1e9);
            List<Long> java = new ArrayList<>();
            List<Long> go = new ArrayList<>();
            for (int i = 0; i < 6; i++) { // the first pair warms up
                try (NriPlugin p =
                        NriPlugin.builder(hook)
                                .socket(containerd.nriSocket())
                                .index(20)
                                .build()
                                .start()) {
                    containerd.awaitNriPluginRegistrations(
                            p.fullName(), ++registrations, Duration.ofSeconds(30));
                }
                long j = syncTime(containerd, "20-cri4j-noop");
                String logger;
                try (NriGoPlugin g =
                        NriGoPlugin.logger(containerd, 20, "-events", LOGGER_EVENT_NAMES)) {
                    logger = g.fullName(); // started returns once containerd registered it
                }
                long g = syncTime(containerd, logger);
                if (i > 0) {
                    java.add(j);
                    go.add(g);
                }
            }
            System.out.printf(
                    "Synchronize with %d containers (containerd's log, 'synchronizing plugin' to "
                            + "'connected and synchronized'), 5 each:%n",
                    containers);
            System.out.printf(
                    "  cri4j no-op   p50 %7.1f ms (hook saw %s containers)%n",
                    median(java) / 1e6,
                    hook.synchronizedContainers.get(hook.synchronizedContainers.size() - 1));
            System.out.printf(
                    "  cri4j no-op, no containers yet  p50 %7.1f ms%n", median(empty) / 1e6);
            System.out.printf(
                    "  nri-logger    p50 %7.1f ms (it logs every pod and container)%n",
                    median(go) / 1e6);
            System.out.printf(
                    "  cri4j 500 / cri4j empty: %.2f; cri4j / nri-logger: %.2f%n",
                    median(java) / median(empty), median(java) / median(go));
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** The last Synchronize of {@code plugin}, from containerd's log timestamps. */
    private static long syncTime(LocalContainerd containerd, String plugin) throws Exception {
        List<String> lines = Files.readAllLines(containerd.logFile());
        Instant start = null;
        Instant end = null;
        for (String l : lines) {
            if (l.contains("synchronizing plugin " + plugin)) {
                start = time(l);
            } else if (l.contains("plugin \\\"" + plugin + "\\\" connected and synchronized")) {
                end = time(l);
            }
        }
        if (start == null || end == null) {
            throw new IllegalStateException(
                    "no Synchronize of " + plugin + " in " + containerd.logFile());
        }
        return Duration.between(start, end).toNanos();
    }

    private static Instant time(String line) {
        Matcher m = TIME.matcher(line);
        if (!m.find()) {
            throw new IllegalStateException("no time in " + line);
        }
        return Instant.parse(m.group(1));
    }

    // --- rss -------------------------------------------------------------------------------

    static void rss(Path cliJar, Path pluginDir, String[] jvmFlags) throws Exception {
        try (LocalContainerd containerd = containerd().start()) {
            for (String[] flags : List.of(new String[0], jvmFlags)) {
                List<String> cmd = new ArrayList<>();
                cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
                cmd.addAll(List.of(flags));
                cmd.addAll(
                        List.of(
                                "-jar",
                                cliJar.toString(),
                                "nri-plugin",
                                "--socket",
                                "unix://" + containerd.nriSocket(),
                                "--plugins",
                                pluginDir.toString(),
                                "--name",
                                "rss"));
                String extra = System.getProperty("cri4j.nri.pluginArgs", "").strip();
                if (!extra.isEmpty()) {
                    cmd.addAll(List.of(extra.split("\\s+")));
                }
                int before = containerd.nriPluginRegistrations("50-rss");
                Process p =
                        new ProcessBuilder(cmd)
                                .redirectErrorStream(true)
                                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                                .start();
                try {
                    containerd.awaitNriPluginRegistrations(
                            "50-rss", before + 1, Duration.ofSeconds(30));
                    p.waitFor(10, TimeUnit.SECONDS); // idle: nothing happens on the node meanwhile
                    String status =
                            Files.readString(Path.of("/proc", Long.toString(p.pid()), "status"));
                    String rss =
                            status.lines()
                                    .filter(l -> l.startsWith("VmRSS:"))
                                    .findFirst()
                                    .orElseThrow();
                    String threads =
                            status.lines()
                                    .filter(l -> l.startsWith("Threads:"))
                                    .findFirst()
                                    .orElseThrow();
                    System.out.printf(
                            "idle cri4j nri-plugin, JVM flags [%s]: %s, %s%n",
                            String.join(" ", flags),
                            rss.replaceAll("\\s+", " "),
                            threads.replaceAll("\\s+", " "));
                } finally {
                    p.toHandle().destroy();
                    p.waitFor(30, TimeUnit.SECONDS);
                }
            }
        }
    }

    // --- statistics ------------------------------------------------------------------------

    static double median(List<Long> v) {
        return pct(v, 0.5);
    }

    static double pct(List<Long> v, double q) {
        List<Long> s = new ArrayList<>(v);
        s.sort(null);
        return s.get(Math.min(s.size() - 1, (int) Math.floor(q * (s.size() - 1) + 0.5)));
    }

    static double mean(List<Long> v) {
        return v.stream().mapToLong(Long::longValue).average().orElse(0);
    }
}
