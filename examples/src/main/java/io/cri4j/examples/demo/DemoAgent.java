package io.cri4j.examples.demo;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriEnv;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ExecSyncResponse;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.LinuxSandboxSecurityContext;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.imagepull.CriImagePullBackend;
import io.cri4j.imagepull.ImagePrewarmer;
import io.cri4j.imagepull.ImagePuller;
import io.cri4j.imagepull.LayerProgress;
import io.cri4j.imagepull.PrewarmStatus;
import io.cri4j.imagepull.PrewarmTag;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.proxy.CriProxy;
import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingClient;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * The demo node agent: everything cri4j offers, composed the way a user's agent would.
 *
 * <ol>
 *   <li>a runtime: the embedded fake CRI server (or a real one, e.g. containerd);</li>
 *   <li>the CRI proxy in front of it with an interceptor ({@link PodStampInterceptor}) and an
 *   in-process hook ({@link EnvAndCpusetHook});</li>
 *   <li>two images pre-warmed through the proxy with live progress (the fake downloads them at
 *   {@link #FAKE_PULL_RATE}), and the same pulls as the proxy follows them, per layer;</li>
 *   <li>a pod and a container run through the proxy, and the hook's effect shown;</li>
 *   <li>a live exec through the runtime's streaming server with the Java streaming client;</li>
 *   <li>everything removed again, and a summary.</li>
 * </ol>
 */
public final class DemoAgent {

    /** How fast the embedded fake downloads layers, so the pre-warming bars move. */
    public static final long FAKE_PULL_RATE = 48L << 20;

    /** Images pre-warmed by default: the fake pulls any reference. */
    public static final List<String> DEFAULT_IMAGES =
            List.of("docker.io/library/busybox:1.36", "registry.k8s.io/pause:3.9");

    /** What the demo did, for the summary and for tests. */
    public record Summary(
            String runtime,
            String proxyEndpoint,
            List<String> imagesPresent,
            String podStamp,
            String hookedEnv,
            String cpuset,
            String execOutput,
            int execExitCode,
            String execProtocol,
            Duration elapsed,
            DemoMetrics metrics) {}

    /**
     * What the demo's proxy recorded in its registry: calls through it (relayed as frames and
     * intercepted), the hook's calls with their median and 99th percentile latency, and the
     * hook's outcomes.
     */
    public record DemoMetrics(
            long relayedCalls,
            long interceptedCalls,
            long hookCalls,
            Duration hookP50,
            Duration hookP99,
            java.util.SortedMap<String, Long> hookOutcomes) {

        /** Reads them from {@code registry}. */
        static DemoMetrics of(MeterRegistry registry) {
            long relayed = 0;
            long intercepted = 0;
            for (Counter c : registry.find("cri4j.proxy.calls").counters()) {
                if ("intercepted".equals(c.getId().getTag("kind"))) {
                    intercepted += (long) c.count();
                } else {
                    relayed += (long) c.count();
                }
            }
            long hookCalls = 0;
            double p50 = 0;
            double p99 = 0;
            java.util.SortedMap<String, Long> outcomes = new java.util.TreeMap<>();
            for (Timer t : registry.find("cri4j.hook.duration").timers()) {
                hookCalls += t.count();
                outcomes.merge(t.getId().getTag("outcome"), t.count(), Long::sum);
                for (ValueAtPercentile v : t.takeSnapshot().percentileValues()) {
                    if (v.percentile() == 0.5) {
                        p50 = Math.max(p50, v.value(TimeUnit.NANOSECONDS));
                    } else if (v.percentile() == 0.99) {
                        p99 = Math.max(p99, v.value(TimeUnit.NANOSECONDS));
                    }
                }
            }
            return new DemoMetrics(
                    relayed,
                    intercepted,
                    hookCalls,
                    Duration.ofNanos((long) p50),
                    Duration.ofNanos((long) p99),
                    java.util.Collections.unmodifiableSortedMap(outcomes));
        }
    }

    /**
     * A registry that also keeps the median and 99th percentile of each hook's latency, for the
     * summary.
     */
    static SimpleMeterRegistry demoRegistry() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        r.config()
                .meterFilter(
                        new MeterFilter() {
                            @Override
                            public DistributionStatisticConfig configure(
                                    Meter.Id id, DistributionStatisticConfig config) {
                                if (id.getName().equals("cri4j.hook.duration")) {
                                    return DistributionStatisticConfig.builder()
                                            .percentiles(0.5, 0.99)
                                            .build()
                                            .merge(config);
                                }
                                return config;
                            }
                        });
        return r;
    }

    private final PrintWriter out;
    private final Optional<CriEndpoint> runtime;
    private final List<String> images;
    private final Duration timeout;

    /**
     * @param out where the demo narrates
     * @param runtime a real runtime to use, or empty for the embedded fake
     * @param images two (or more) images to pre-warm; the first runs the container
     * @param timeout bound for each step
     */
    public DemoAgent(
            PrintWriter out, Optional<CriEndpoint> runtime, List<String> images, Duration timeout) {
        this.out = Objects.requireNonNull(out, "out");
        this.runtime = Objects.requireNonNull(runtime, "runtime");
        if (images.isEmpty()) {
            throw new IllegalArgumentException("the demo needs at least one image");
        }
        this.images = List.copyOf(images);
        this.timeout = timeout;
    }

    /**
     * Runs the demo to the end.
     *
     * @return the summary
     * @throws Exception when a step fails; everything started is stopped again
     */
    public Summary run() throws Exception {
        long t0 = System.nanoTime();
        Path dir = Files.createTempDirectory("cri4j-demo");
        FakeCriServer fake = null;
        try {
            CriEndpoint backend;
            if (runtime.isPresent()) {
                backend = runtime.get();
                step("1", "runtime: " + backend);
            } else {
                fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                                .streamingAddress("127.0.0.1", 0)
                                .pullRate(FAKE_PULL_RATE)
                                .build()
                                .start();
                backend = fake.endpoint();
                step(
                        "1",
                        "runtime: embedded fake CRI server on "
                                + backend
                                + fake.streamingBaseUrl()
                                        .map(a -> ", streaming on " + a)
                                        .orElse(""));
            }
            SimpleMeterRegistry metrics = demoRegistry();
            try (PullObserver pulls = PullObserver.builder(backend).build();
                    CriProxy proxy =
                            CriProxy.builder()
                                    .meterRegistry(metrics)
                                    .listen(CriEndpoint.unix(dir.resolve("proxy.sock")))
                                    .backend(backend)
                                    .addInterceptor(new PodStampInterceptor())
                                    .addHook(new EnvAndCpusetHook("yes"))
                                    .observePulls(pulls)
                                    .build()
                                    .start()) {
                CriEndpoint front = proxy.listenEndpoint();
                step(
                        "2",
                        "proxy on "
                                + front
                                + " -> "
                                + backend
                                + ", interceptor labelling pods at RunPodSandbox,"
                                + " in-process hook 'demo-env-cpuset' at CreateContainer, following every image pull");
                ManagedChannel channel = CriChannels.newChannel(front);
                try {
                    return drive(front, channel, pulls, t0, metrics);
                } finally {
                    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            }
        } finally {
            if (fake != null) {
                fake.close();
            }
            deleteTree(dir);
        }
    }

    private Summary drive(
            CriEndpoint front,
            ManagedChannel channel,
            PullObserver pulls,
            long t0,
            MeterRegistry metrics)
            throws Exception {
        var rt = RuntimeServiceGrpc.newBlockingStub(channel);
        VersionResponse version =
                rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                        .version(VersionRequest.newBuilder().setVersion("0.1.0").build());
        String runtimeName = version.getRuntimeName() + " " + version.getRuntimeVersion();
        out.println(
                "   runtime answers through the proxy: "
                        + runtimeName
                        + " ("
                        + version.getRuntimeApiVersion()
                        + ")");

        List<String> present = prewarm(front, pulls);

        step("4", "run a pod and a container through the proxy");
        String podName = "cri4j-demo-" + UUID.randomUUID().toString().substring(0, 8);
        PodSandboxConfig pod =
                PodSandboxConfig.newBuilder()
                        .setMetadata(
                                PodSandboxMetadata.newBuilder()
                                        .setName(podName)
                                        .setNamespace("default")
                                        .setUid(UUID.randomUUID().toString()))
                        .putAnnotations(EnvAndCpusetHook.CPUSET_ANNOTATION, "0")
                        .putLabels("app", "cri4j-demo")
                        .setLinux(
                                LinuxPodSandboxConfig.newBuilder()
                                        .setSecurityContext(
                                                LinuxSandboxSecurityContext.newBuilder()
                                                        .setNamespaceOptions(
                                                                NamespaceOption.newBuilder()
                                                                        .setNetwork(
                                                                                NamespaceMode.NODE)
                                                                        .setPid(NamespaceMode.POD)
                                                                        .setIpc(
                                                                                NamespaceMode
                                                                                        .POD))))
                        .build();
        var deadlined = rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
        String podId =
                deadlined
                        .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        String containerId = null;
        try {
            out.println(
                    "   pod "
                            + podName
                            + " ("
                            + shortId(podId)
                            + ") annotated "
                            + EnvAndCpusetHook.CPUSET_ANNOTATION
                            + "=0");
            String podStamp =
                    rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                            .podSandboxStatus(
                                    PodSandboxStatusRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build())
                            .getStatus()
                            .getLabelsMap()
                            .getOrDefault(PodStampInterceptor.LABEL, "");
            out.println(
                    "   PodSandboxStatus label "
                            + PodStampInterceptor.LABEL
                            + ": "
                            + quote(podStamp)
                            + " (set by the interceptor)");
            ContainerConfig config =
                    ContainerConfig.newBuilder()
                            .setMetadata(ContainerMetadata.newBuilder().setName("demo"))
                            .setImage(ImageSpec.newBuilder().setImage(images.get(0)))
                            .addAllCommand(List.of("sleep", "3600"))
                            .addEnvs(CriEnv.of("DEMO_USER", "node-engineer"))
                            .build();
            containerId =
                    rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                            .createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setConfig(config)
                                            .setSandboxConfig(pod)
                                            .build())
                            .getContainerId();
            rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .startContainer(
                            StartContainerRequest.newBuilder().setContainerId(containerId).build());
            ContainerStatus status =
                    rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                            .containerStatus(
                                    ContainerStatusRequest.newBuilder()
                                            .setContainerId(containerId)
                                            .build())
                            .getStatus();
            out.println(
                    "   container demo ("
                            + shortId(containerId)
                            + ") from "
                            + images.get(0)
                            + ": "
                            + status.getState());

            step("5", "the hook's effect");
            ExecSyncResponse env =
                    rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                            .execSync(
                                    ExecSyncRequest.newBuilder()
                                            .setContainerId(containerId)
                                            .addAllCmd(
                                                    List.of(
                                                            "sh",
                                                            "-c",
                                                            "echo $" + EnvAndCpusetHook.ENV_NAME))
                                            .setTimeout(Math.max(1, timeout.toSeconds()))
                                            .build());
            String hooked = env.getStdout().toStringUtf8().strip();
            out.println(
                    "   ExecSync 'echo $"
                            + EnvAndCpusetHook.ENV_NAME
                            + "' in the container: "
                            + quote(hooked)
                            + " (exit "
                            + env.getExitCode()
                            + ")");
            String cpuset =
                    status.hasResources() && status.getResources().hasLinux()
                            ? status.getResources().getLinux().getCpusetCpus()
                            : "";
            out.println(
                    "   ContainerStatus resources.linux.cpuset_cpus: "
                            + (cpuset.isEmpty()
                                    ? "(not reported by this runtime)"
                                    : quote(cpuset)));

            step("6", "live exec through the streaming server with the Java client");
            String url =
                    rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                            .exec(
                                    ExecRequest.newBuilder()
                                            .setContainerId(containerId)
                                            .addAllCmd(
                                                    List.of(
                                                            "sh",
                                                            "-c",
                                                            "read who; echo \"hello $who, hooked=$"
                                                                    + EnvAndCpusetHook.ENV_NAME
                                                                    + "\"; exit 7"))
                                            .setStdin(true)
                                            .setStdout(true)
                                            .setStderr(true)
                                            .build())
                            .getUrl();
            out.println("   Exec answered a streaming URL on " + URI.create(url).getAuthority());
            String[] exec = execLive(url);
            out.println(
                    "   stdin 'cri4j' -> stdout "
                            + quote(exec[0])
                            + ", exit code "
                            + exec[1]
                            + " over "
                            + exec[2]);

            stopAndRemove(rt, podId, containerId);
            containerId = null;
            podId = null;
            Duration elapsed = Duration.ofNanos(System.nanoTime() - t0);
            Summary summary =
                    new Summary(
                            runtimeName,
                            front.toString(),
                            present,
                            podStamp,
                            hooked,
                            cpuset,
                            exec[0],
                            Integer.parseInt(exec[1]),
                            exec[2],
                            elapsed,
                            DemoMetrics.of(metrics));
            printSummary(summary);
            return summary;
        } finally {
            if (podId != null) {
                try {
                    stopAndRemove(rt, podId, containerId);
                } catch (RuntimeException e) {
                    out.println("   cleanup: " + e.getMessage());
                }
            }
        }
    }

    private List<String> prewarm(CriEndpoint front, PullObserver pulls) throws Exception {
        step(
                "3",
                "pre-warm "
                        + images.size()
                        + " images through the proxy (bars: the puller's own progress;"
                        + " 'proxy saw': the same pulls as the proxy follows them, per layer)");
        Map<String, List<PrewarmTag>> desired = new LinkedHashMap<>();
        for (String image : images) {
            int slash = image.lastIndexOf('/');
            int colon = image.lastIndexOf(':');
            String name = colon > slash ? image.substring(0, colon) : image;
            String tag = colon > slash ? image.substring(colon + 1) : "latest";
            desired.computeIfAbsent(name, k -> new ArrayList<>()).add(PrewarmTag.of(tag, "v1"));
        }
        CompletableFuture<PrewarmStatus> done = new CompletableFuture<>();
        Map<String, String> lastLine = new LinkedHashMap<>();
        Map<String, Integer> observedStep = new LinkedHashMap<>();
        // what the proxy saw of the same pulls: a line with per-layer bytes every quarter, and at
        // the end
        PullObserver.Watch watch =
                pulls.watch(
                        null,
                        p -> {
                            int quarter = p.phase().terminal() ? 4 : Math.max(0, p.percent()) / 25;
                            synchronized (lastLine) {
                                Integer before = observedStep.put(p.image(), quarter);
                                if (before == null || before < quarter) {
                                    out.println("   proxy saw " + observed(p));
                                    out.flush();
                                }
                                lastLine.notifyAll();
                            }
                        });
        try (watch;
                ImagePuller puller =
                        ImagePuller.builder(CriImagePullBackend.builder(front).build()).build();
                ImagePrewarmer prewarmer = ImagePrewarmer.create(puller)) {
            prewarmer.addListener(
                    status -> {
                        synchronized (lastLine) {
                            for (List<PrewarmStatus.TagStatus> tags : status.images().values()) {
                                for (PrewarmStatus.TagStatus t : tags) {
                                    // a line when the bar moves by a tenth, or the phase changes
                                    String line =
                                            "   "
                                                    + bar(t.progress())
                                                    + " "
                                                    + t.image()
                                                    + ":"
                                                    + t.tag()
                                                    + " "
                                                    + t.phase()
                                                    + (t.message().isEmpty()
                                                                    || t.phase()
                                                                            == PrewarmStatus.Phase
                                                                                    .SUCCEEDED
                                                            ? ""
                                                            : " (" + t.message() + ")");
                                    String key = t.image() + ":" + t.tag();
                                    String change =
                                            t.phase()
                                                    + "/"
                                                    + (t.progress() < 0 ? -1 : t.progress() / 10);
                                    if (!change.equals(lastLine.get(key))) {
                                        lastLine.put(key, change);
                                        out.println(line);
                                        out.flush();
                                    }
                                }
                            }
                        }
                        if (status.desired() > 0
                                && status.succeeded() + status.failed() == status.desired()) {
                            done.complete(status);
                        }
                    });
            prewarmer.apply(desired);
            PrewarmStatus finalStatus;
            try {
                finalStatus = done.get(timeout.toMillis() * 2, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new IllegalStateException(
                        "pre-warming did not finish in "
                                + timeout.multipliedBy(2).toSeconds()
                                + " s: "
                                + prewarmer.status());
            }
            if (finalStatus.failed() > 0) {
                throw new IllegalStateException("pre-warming failed: " + finalStatus.images());
            }
            awaitObservedEnds(lastLine, observedStep);
            List<String> present = new ArrayList<>();
            finalStatus
                    .images()
                    .values()
                    .forEach(tags -> tags.forEach(t -> present.add(t.image() + ":" + t.tag())));
            out.println(
                    "   "
                            + finalStatus.succeeded()
                            + "/"
                            + finalStatus.desired()
                            + " images present");
            return present;
        }
    }

    /**
     * The proxy follows a pull from beside it, so its last word on a pull may come a moment after the puller's:
     * waits (a few seconds at most) until every pull the proxy reported on has ended there too.
     */
    private static void awaitObservedEnds(Object lock, Map<String, Integer> observedStep)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        synchronized (lock) {
            while (observedStep.values().stream().anyMatch(quarter -> quarter < 4)) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    return;
                }
                lock.wait(left);
            }
        }
    }

    private String[] execLive(String url)
            throws IOException, InterruptedException, ExecutionException, TimeoutException {
        try (StreamingClient client = StreamingClient.builder().timeout(timeout).build();
                RemoteCommand command =
                        client.exec(URI.create(url), new CommandOptions(true, true, true, false))) {
            CompletableFuture<byte[]> stdout =
                    CompletableFuture.supplyAsync(() -> readAll(command.stdout()));
            CompletableFuture<byte[]> stderr =
                    CompletableFuture.supplyAsync(() -> readAll(command.stderr()));
            try (OutputStream stdin = command.stdin()) {
                stdin.write("cri4j\n".getBytes(StandardCharsets.UTF_8));
            }
            int exit = command.exitCode().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            String text =
                    new String(
                                    stdout.get(timeout.toMillis(), TimeUnit.MILLISECONDS),
                                    StandardCharsets.UTF_8)
                            .strip();
            stderr.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return new String[] {text, Integer.toString(exit), command.protocol()};
        }
    }

    private static byte[] readAll(InputStream in) {
        try {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private void stopAndRemove(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt, String podId, String containerId) {
        var d = rt.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (containerId != null) {
            d.stopContainer(
                    StopContainerRequest.newBuilder()
                            .setContainerId(containerId)
                            .setTimeout(0)
                            .build());
            d.removeContainer(
                    RemoveContainerRequest.newBuilder().setContainerId(containerId).build());
        }
        d.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        d.removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        out.println("   container and pod stopped and removed");
    }

    private void printSummary(Summary s) {
        out.println();
        out.println("Summary");
        out.println(
                "  runtime            "
                        + s.runtime()
                        + (runtime.isPresent() ? "" : " (embedded fake)"));
        out.println(
                "  proxy              "
                        + s.proxyEndpoint()
                        + " with an interceptor and hook demo-env-cpuset");
        out.println(
                "  interceptor        pod label "
                        + PodStampInterceptor.LABEL
                        + "="
                        + quote(s.podStamp()));
        out.println("  images pre-warmed  " + String.join(", ", s.imagesPresent()));
        out.println(
                "  hook: env          "
                        + EnvAndCpusetHook.ENV_NAME
                        + "="
                        + quote(s.hookedEnv())
                        + " seen inside the container");
        out.println(
                "  hook: cpuset       "
                        + (s.cpuset().isEmpty() ? "(runtime does not report it)" : s.cpuset()));
        out.println(
                "  live exec          "
                        + quote(s.execOutput())
                        + ", exit "
                        + s.execExitCode()
                        + " over "
                        + s.execProtocol());
        DemoMetrics m = s.metrics();
        out.println(
                "  metrics            "
                        + (m.relayedCalls() + m.interceptedCalls())
                        + " calls through the proxy ("
                        + m.interceptedCalls()
                        + " intercepted, "
                        + m.relayedCalls()
                        + " relayed as frames); hook calls "
                        + m.hookCalls()
                        + ", latency p50 "
                        + millis(m.hookP50())
                        + " p99 "
                        + millis(m.hookP99())
                        + ", outcomes "
                        + m.hookOutcomes());
        out.println(
                "  took               "
                        + String.format(
                                java.util.Locale.ROOT, "%.1f s", s.elapsed().toMillis() / 1000.0));
        out.flush();
    }

    private static String millis(Duration d) {
        return String.format(java.util.Locale.ROOT, "%.2f ms", d.toNanos() / 1e6);
    }

    private void step(String n, String text) {
        out.println(n + ". " + text);
        out.flush();
    }

    /** A pull as the proxy followed it: percent, bytes and each layer's bytes. */
    private static String observed(PullProgress p) {
        StringBuilder sb =
                new StringBuilder(p.image())
                        .append(' ')
                        .append(p.percentKnown() ? p.percent() + "%" : "?%");
        if (p.bytesTotal() > 0) {
            sb.append(' ')
                    .append(mib(p.bytesDone()))
                    .append('/')
                    .append(mib(p.bytesTotal()))
                    .append(" MiB");
        }
        if (!p.layers().isEmpty()) {
            sb.append(", layers");
            for (LayerProgress l : p.layers()) {
                String id =
                        l.id().startsWith("sha256:")
                                ? l.id().substring(7, Math.min(19, l.id().length()))
                                : l.id();
                sb.append(' ')
                        .append(id)
                        .append(' ')
                        .append(mib(l.done()))
                        .append('/')
                        .append(l.total() < 0 ? "?" : mib(l.total()));
            }
        }
        if (!p.percentKnown() && !p.message().isEmpty()) {
            sb.append(" (").append(p.message()).append(')');
        }
        return sb.toString();
    }

    private static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f", bytes / 1048576.0);
    }

    private static String bar(int percent) {
        if (percent < 0) {
            return "[" + "?".repeat(20) + "]  ?%";
        }
        int filled = Math.min(20, percent / 5);
        return "["
                + "#".repeat(filled)
                + ".".repeat(20 - filled)
                + "] "
                + String.format("%3d%%", percent);
    }

    private static String quote(String s) {
        return "\"" + s + "\"";
    }

    private static String shortId(String id) {
        return id.length() > 12 ? id.substring(0, 12) : id;
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder())
                    .forEach(
                            p -> {
                                try {
                                    Files.deleteIfExists(p);
                                } catch (IOException e) {
                                    // best effort: temp files
                                }
                            });
        } catch (IOException e) {
            // already gone
        }
    }
}
