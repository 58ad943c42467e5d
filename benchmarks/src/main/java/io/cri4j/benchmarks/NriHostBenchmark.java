package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.hook.HookEvent;
import io.cri4j.nri.NriHost;
import io.cri4j.nri.NriPlugin;
import io.cri4j.proxy.CriProxy;
import io.cri4j.testing.fake.FakeCriServer;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.NriGoPlugin;
import io.cri4j.testing.real.TestImage;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * What an NRI host adds, the cri4j proxy's against containerd's own:
 *
 * <ul>
 *   <li>{@code latency [ROUNDS] [PER_ROUND]}: {@code CreateContainer} + {@code StartContainer} at
 *       the CRI client through the proxy (in process, its {@link NriHost} on a socket of its own)
 *       in front of containerd 1.6, and straight to containerd 2.3.4 (its own NRI, v0.12), each
 *       with NRI's Go {@code nri-logger} v0.12 on the NRI socket and with no plugin: four series,
 *       each round runs them all in a rotating order. {@code -Dcri4j.bench.loggerEvents=LIST}
 *       subscribes the logger to other events than its default (e.g. {@code removepodsandbox}: a
 *       plugin attached that no create or start reaches, to tell its presence from its events).
 *   <li>{@code idle CLI_JAR [CONTAINERS] [SECONDS]}: the CPU time (user + system, from {@code
 *       /proc/PID/stat}) of an idle {@code cri4j proxy} process in front of containerd 1.6 with
 *       {@code CONTAINERS} running containers, with {@code --nri-socket} (its NRI host follows
 *       container exits: containerd 1.6 has no event stream, so it polls) against without,
 *       alternating, twice each.
 *
 *   <li>{@code fake [ROUNDS] [PER_ROUND]}: the NRI host's own cost, with nothing slow behind it:
 *       the proxy in front of cri-testing's fake runtime, {@code CreateContainer} + {@code
 *       StartContainer} with {@code nri-logger} on the proxy's NRI socket against with no plugin,
 *       alternating per round.
 * </ul>
 *
 * Run: {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.NriHostBenchmark
 * latency}.
 */
public final class NriHostBenchmark {

    private NriHostBenchmark() {}

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "latency";
        switch (what) {
            case "latency" -> latency(arg(args, 1, 10), arg(args, 2, 10));
            case "idle" -> idle(Path.of(args[1]), arg(args, 2, 100), arg(args, 3, 30));
            case "fake" -> fake(arg(args, 1, 10), arg(args, 2, 20));
            default -> throw new IllegalArgumentException("latency | idle | fake, not " + what);
        }
        System.exit(0);
    }

    private static int arg(String[] args, int i, int dflt) {
        return args.length > i ? Integer.parseInt(args[i]) : dflt;
    }

    // --- latency ---------------------------------------------------------------------------

    /** One runtime as the client sees it, with its NRI socket and how to know a plugin is in. */
    private record Target(
            String name,
            CriEndpoint endpoint,
            Path nriSocket,
            Semaphore registered,
            LocalContainerd containerd) {}

    /** The events the logger subscribes to in {@code latency}. */
    private static final String LATENCY_LOGGER_EVENTS =
            System.getProperty("cri4j.bench.loggerEvents", NriBenchmark.LOGGER_EVENT_NAMES);

    static void latency(int rounds, int perRound) throws Exception {
        Path work = Files.createTempDirectory("cri4j-nri-host-bench");
        Semaphore proxyRegistered = new Semaphore(0);
        Path proxyNri = work.resolve("proxy-nri.sock");
        try (LocalContainerd ctrd16 = LocalContainerd.builder().start();
                LocalContainerd ctrd23 = LocalContainerd.builder().containerd23WithNri().start();
                CriProxy proxy =
                        CriProxy.builder()
                                .listen(work.resolve("proxy.sock"))
                                .backend(ctrd16.endpoint())
                                .addHookProvider(
                                        NriHost.builder(proxyNri)
                                                .listener(countingRegistrations(proxyRegistered))
                                                .build())
                                .build()
                                .start()) {
            List<Target> targets =
                    List.of(
                            new Target(
                                    "proxy + containerd 1.6",
                                    proxy.listenEndpoint(),
                                    proxyNri,
                                    proxyRegistered,
                                    ctrd16),
                            new Target(
                                    "containerd 2.3.4",
                                    ctrd23.endpoint(),
                                    ctrd23.nriSocket(),
                                    null,
                                    ctrd23));
            Map<String, List<Long>> samples = new LinkedHashMap<>();
            List<String> series = new ArrayList<>();
            Map<String, Runner> runners = new LinkedHashMap<>();
            for (Target t : targets) {
                Runner r = new Runner(t, work);
                runners.put(t.name(), r);
                for (String mode : List.of("none", "nri-logger")) {
                    String s = t.name() + ", " + mode;
                    series.add(s);
                    samples.put(s, new ArrayList<>());
                }
            }
            for (int round = -1; round < rounds; round++) { // round -1 warms up, not counted
                for (int k = 0; k < series.size(); k++) {
                    String s = series.get((Math.max(round, 0) + k) % series.size());
                    String target = s.substring(0, s.lastIndexOf(", "));
                    boolean logger = s.endsWith("nri-logger");
                    List<Long> times = runners.get(target).run(logger, perRound, work);
                    if (round >= 0) {
                        samples.get(s).addAll(times);
                    }
                }
            }
            System.out.printf(
                    "CreateContainer+StartContainer, %d rounds x %d per series%n",
                    rounds, perRound);
            for (Map.Entry<String, List<Long>> e : samples.entrySet()) {
                System.out.printf(
                        "  %-36s p50 %7.1f ms  mean %7.1f ms  p90 %7.1f ms%n",
                        e.getKey(),
                        NriBenchmark.median(e.getValue()) / 1e6,
                        NriBenchmark.mean(e.getValue()) / 1e6,
                        NriBenchmark.pct(e.getValue(), 0.9) / 1e6);
            }
            double[] added = new double[targets.size()];
            for (int i = 0; i < targets.size(); i++) {
                String t = targets.get(i).name();
                double none = NriBenchmark.median(samples.get(t + ", none"));
                double withLogger = NriBenchmark.median(samples.get(t + ", nri-logger"));
                added[i] = withLogger - none;
                System.out.printf(
                        "  %-24s with nri-logger x%.2f of no plugin (adds %.1f ms at p50)%n",
                        t, withLogger / none, added[i] / 1e6);
            }
            System.out.printf(
                    "  what the proxy's NRI host adds / what containerd 2.3.4's adds: %.2f%n",
                    added[0] / added[1]);
            for (Runner r : runners.values()) {
                r.close();
            }
        }
    }

    /** A pod on one target, and create+start timed there. */
    private static final class Runner implements AutoCloseable {
        private final Target target;
        private final ManagedChannel channel;
        private final RuntimeServiceGrpc.RuntimeServiceBlockingStub rt;
        private final String image;
        private final PodSandboxConfig podConfig;
        private final String podId;
        private int n;

        Runner(Target target, Path work) throws IOException {
            this.target = target;
            this.channel = CriChannels.newChannel(target.endpoint());
            this.rt = RuntimeServiceGrpc.newBlockingStub(channel);
            this.image = target.containerd().registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(channel)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            Path logs = Files.createDirectories(work.resolve("logs-" + UUID.randomUUID()));
            this.podConfig = NriBenchmark.pod("nri-host-bench", logs);
            this.podId =
                    rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(podConfig).build())
                            .getPodSandboxId();
        }

        List<Long> run(boolean logger, int count, Path work) throws Exception {
            NriGoPlugin plugin = logger ? startLogger(work) : null;
            try {
                List<Long> times = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    times.add(createAndStart(rt, podId, podConfig, "c" + n++, image));
                }
                return times;
            } finally {
                if (plugin != null) {
                    plugin.close();
                }
            }
        }

        /** NRI v0.12's nri-logger on the target's NRI socket, registered before it returns. */
        private NriGoPlugin startLogger(Path work) throws Exception {
            if (target.registered() == null) {
                return NriGoPlugin.logger(
                        target.containerd(), 20, "-events", LATENCY_LOGGER_EVENTS);
            }
            NriGoPlugin p =
                    NriGoPlugin.launchV012(
                            target.nriSocket(),
                            work,
                            "nri-logger",
                            20,
                            "-events",
                            LATENCY_LOGGER_EVENTS);
            if (!target.registered().tryAcquire(30, TimeUnit.SECONDS)) {
                p.close();
                throw new IllegalStateException("nri-logger did not register with the proxy");
            }
            return p;
        }

        @Override
        public void close() {
            rt.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            rt.removePodSandbox(
                    RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            channel.shutdownNow();
        }
    }

    /**
     * Creates and starts a sleeping container in the pod, then stops and removes it; the time of
     * the create and start pair, in nanoseconds.
     */
    private static long createAndStart(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt,
            String podId,
            PodSandboxConfig podConfig,
            String name,
            String image) {
        long t0 = System.nanoTime();
        String id =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(podConfig)
                                        .setConfig(NriBenchmark.container(name, image))
                                        .build())
                        .getContainerId();
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        long t = System.nanoTime() - t0;
        rt.stopContainer(
                StopContainerRequest.newBuilder().setContainerId(id).setTimeout(0).build());
        rt.removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
        return t;
    }

    /** Releases {@code registered} once for each plugin the host lists. */
    private static NriHost.Listener countingRegistrations(Semaphore registered) {
        return new NriHost.Listener() {
            @Override
            public void registered(String name, int index, Set<HookEvent> events) {
                registered.release();
            }
        };
    }

    // --- fake --------------------------------------------------------------------------------

    static void fake(int rounds, int perRound) throws Exception {
        Path work = Files.createTempDirectory("cri4j-nri-host-fake");
        Semaphore registered = new Semaphore(0);
        Path nri = work.resolve("nri.sock");
        String image = "example.test/busybox:1";
        try (FakeCriServer fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(work.resolve("fake.sock")))
                                .pullRate(0)
                                .build()
                                .start();
                CriProxy proxy =
                        CriProxy.builder()
                                .listen(work.resolve("proxy.sock"))
                                .backend(fake.endpoint())
                                .addHookProvider(
                                        NriHost.builder(nri)
                                                .listener(countingRegistrations(registered))
                                                .build())
                                .build()
                                .start()) {
            fake.runtime().addImage(image);
            ManagedChannel ch = CriChannels.newChannel(proxy.listenEndpoint());
            var rt = RuntimeServiceGrpc.newBlockingStub(ch);
            PodSandboxConfig podConfig = NriBenchmark.pod("fake", work);
            String podId =
                    rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(podConfig).build())
                            .getPodSandboxId();
            Map<String, List<Long>> samples = new LinkedHashMap<>();
            samples.put("none", new ArrayList<>());
            samples.put("nri-logger", new ArrayList<>());
            int n = 0;
            for (int round = -1; round < rounds; round++) {
                for (int k = 0; k < 2; k++) {
                    boolean logger = (Math.max(round, 0) + k) % 2 == 1;
                    AutoCloseable plugin = null;
                    if (logger && Boolean.getBoolean("cri4j.bench.javaPlugin")) {
                        plugin =
                                NriPlugin.builder(new NriBenchmark.NoOpHook())
                                        .socket(nri)
                                        .index(20)
                                        .build()
                                        .start();
                        if (!registered.tryAcquire(30, TimeUnit.SECONDS)) {
                            plugin.close();
                            throw new IllegalStateException("the no-op plugin did not register");
                        }
                    } else if (logger) {
                        plugin =
                                NriGoPlugin.launchV012(
                                        nri,
                                        work,
                                        "nri-logger",
                                        20,
                                        "-events",
                                        NriBenchmark.LOGGER_EVENT_NAMES);
                        if (!registered.tryAcquire(30, TimeUnit.SECONDS)) {
                            plugin.close();
                            throw new IllegalStateException("nri-logger did not register");
                        }
                    }
                    try {
                        for (int i = 0; i < perRound; i++) {
                            long t = createAndStart(rt, podId, podConfig, "c" + n++, image);
                            if (round >= 0) {
                                samples.get(logger ? "nri-logger" : "none").add(t);
                            }
                        }
                    } finally {
                        if (plugin != null) {
                            plugin.close();
                        }
                    }
                }
            }
            double none = NriBenchmark.median(samples.get("none"));
            double withLogger = NriBenchmark.median(samples.get("nri-logger"));
            System.out.printf(
                    "proxy in front of the fake runtime, CreateContainer+StartContainer, %d rounds x %d:"
                            + " no plugin p50 %.2f ms, nri-logger p50 %.2f ms (adds %.2f ms, mean"
                            + " %.2f against %.2f ms)%n",
                    rounds,
                    perRound,
                    none / 1e6,
                    withLogger / 1e6,
                    (withLogger - none) / 1e6,
                    NriBenchmark.mean(samples.get("nri-logger")) / 1e6,
                    NriBenchmark.mean(samples.get("none")) / 1e6);
            ch.shutdownNow();
        }
    }

    // --- idle ------------------------------------------------------------------------------

    static void idle(Path cliJar, int containers, int seconds) throws Exception {
        Path work = Files.createTempDirectory("cri4j-nri-host-idle");
        try (LocalContainerd ctrd16 = LocalContainerd.builder().start()) {
            String image = ctrd16.registry().push(TestImage.busybox()).reference();
            Map<String, List<Double>> cpu = new LinkedHashMap<>();
            cpu.put("without --nri-socket", new ArrayList<>());
            cpu.put("with --nri-socket", new ArrayList<>());
            for (int run = 0; run < 4; run++) {
                boolean nri = run % 2 == 1;
                Path dir = Files.createDirectories(work.resolve("run" + run));
                List<String> cmd = new ArrayList<>();
                cmd.addAll(
                        List.of(
                                ProcessHandle.current().info().command().orElse("java"),
                                "-jar",
                                cliJar.toString(),
                                "proxy",
                                "--listen",
                                "unix://" + dir.resolve("proxy.sock"),
                                "--backend",
                                ctrd16.endpoint().toString(),
                                "--no-observe-pulls"));
                if (nri) {
                    cmd.addAll(List.of("--nri-socket", "unix://" + dir.resolve("nri.sock")));
                }
                Process p =
                        new ProcessBuilder(cmd)
                                .redirectErrorStream(true)
                                .redirectOutput(dir.resolve("proxy.log").toFile())
                                .start();
                try {
                    CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("proxy.sock"));
                    awaitSocket(dir.resolve("proxy.sock"));
                    ManagedChannel ch = CriChannels.newChannel(endpoint);
                    var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                    ImageServiceGrpc.newBlockingStub(ch)
                            .pullImage(
                                    PullImageRequest.newBuilder()
                                            .setImage(ImageSpec.newBuilder().setImage(image))
                                            .build());
                    PodSandboxConfig podConfig = NriBenchmark.pod("idle" + run, dir);
                    String podId =
                            rt.runPodSandbox(
                                            RunPodSandboxRequest.newBuilder()
                                                    .setConfig(podConfig)
                                                    .build())
                                    .getPodSandboxId();
                    for (int i = 0; i < containers; i++) {
                        String id =
                                rt.createContainer(
                                                CreateContainerRequest.newBuilder()
                                                        .setPodSandboxId(podId)
                                                        .setSandboxConfig(podConfig)
                                                        .setConfig(
                                                                NriBenchmark.container(
                                                                        "c" + i, image))
                                                        .build())
                                        .getContainerId();
                        rt.startContainer(
                                StartContainerRequest.newBuilder().setContainerId(id).build());
                    }
                    long before = cpuTicks(p.pid());
                    long t0 = System.nanoTime();
                    Thread.sleep(seconds * 1000L); // the idle time measured, not a synchronisation
                    long ticks = cpuTicks(p.pid()) - before;
                    double wall = (System.nanoTime() - t0) / 1e9;
                    double share = ticks / 100.0 / wall;
                    cpu.get(nri ? "with --nri-socket" : "without --nri-socket").add(share);
                    System.out.printf(
                            "  run %d %s: %.2f%% of a core over %.0f s with %d containers%n",
                            run,
                            nri ? "with --nri-socket" : "without --nri-socket",
                            share * 100,
                            wall,
                            containers);
                    rt.stopPodSandbox(
                            StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
                    rt.removePodSandbox(
                            RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
                    ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                } finally {
                    p.destroy();
                    p.waitFor(10, TimeUnit.SECONDS);
                    p.destroyForcibly();
                }
            }
            double without =
                    cpu.get("without --nri-socket").stream()
                            .mapToDouble(d -> d)
                            .average()
                            .orElse(0);
            double with =
                    cpu.get("with --nri-socket").stream().mapToDouble(d -> d).average().orElse(0);
            System.out.printf(
                    "idle proxy with %d running containers: %.2f%% of a core with --nri-socket,"
                            + " %.2f%% without (x%.2f)%n",
                    containers, with * 100, without * 100, with / without);
        }
    }

    private static void awaitSocket(Path socket) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(socket)) {
            if (System.nanoTime() > end) {
                throw new IllegalStateException("the proxy did not create " + socket);
            }
            Thread.sleep(20);
        }
    }

    /** utime + stime of a process, in clock ticks (100 a second on Linux). */
    private static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }
}
