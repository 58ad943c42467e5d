package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemoveContainerResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.koordinator.HookConfig;
import io.cri4j.hook.koordinator.HookServer;
import io.cri4j.hook.koordinator.RemoteRuntimeHook;
import io.cri4j.nri.NriHost;
import io.cri4j.proxy.CriProxy;
import io.cri4j.testing.real.NriGoPlugin;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Latency of direct and proxied calls measured <em>interleaved</em> (direct, proxied, direct, …),
 * so load changes on a shared machine hit both series alike and the ratio of their percentiles
 * is meaningful even when absolute figures drift. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ProxyLatencyRatio [calls]}.
 *
 * <p>One backend in this JVM and one proxy per series in front of it: relayed (no hooks), a
 * blocking {@code Hook} (on the hook chain's workers), the same hook as an {@code AsyncHook} (on
 * the I/O thread), a blocking {@code CriInterceptor} (on the proxy's worker pool), an {@code
 * AsyncCriInterceptor}, the hook served by a {@code HookServer} and called over Koordinator's
 * protocol, and NRI's Go {@code nri-logger} connected to the proxy's NRI socket (an {@code
 * NriHost} as hook provider; {@code -Dnri=false} leaves it out). Each adds one annotation.
 * Calls whose request is changed are also compared with the changed request sent directly: the
 * runtime parses a bigger request either way.
 *
 * <p>With {@code -Dbackend=unix:///run/containerd/containerd.sock} it measures {@code Version}
 * against that runtime (direct vs through the proxy) instead of the built-in test backend.
 * With {@code -Dtrace=MILLIS} each series first runs alone for that long and prints its start and
 * end in {@code System.nanoTime()} (CLOCK_MONOTONIC), to cut a {@code perf} trace by series.
 * With {@code serve} instead of a number it only serves the backend and the proxies, for a
 * client in another process ({@code benchmarks/go/run.sh}).
 */
public final class ProxyLatencyRatio {
    /** NRI's Go plugin's index on the proxy's NRI socket, and the annotation every series adds. */
    private static final int NRI_INDEX = 50;

    static final String ANNOTATION = "bench";

    private ProxyLatencyRatio() {}

    /**
     * One proxy of a series: its name (as {@code serve} prints it), its socket, and whether it
     * changes {@code CreateContainer} (a hook or interceptor adds the annotation).
     */
    private record Proxy(String name, String socket, boolean changes) {}

    /** The proxies in front of the backend, and what they own. */
    private static final class Setup implements AutoCloseable {
        final Path dir;
        final List<Proxy> proxies = new ArrayList<>();
        final List<AutoCloseable> owned = new ArrayList<>();

        Setup(Path dir) {
            this.dir = dir;
        }

        void add(String name, String socket, boolean changes, CriProxy.Builder b)
                throws java.io.IOException {
            owned.add(
                    0,
                    b.listen(dir.resolve(socket))
                            .backend(dir.resolve("b.sock"))
                            .ioThreads(Integer.getInteger("ioThreads", 1))
                            .build()
                            .start());
            proxies.add(new Proxy(name, socket, changes));
        }

        /** Closes what it started, then removes the directory (nri-logger's log included). */
        @Override
        public void close() throws IOException {
            try {
                for (AutoCloseable c : owned) {
                    c.close();
                }
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                throw new IOException(e);
            }
            deleteTree(dir);
        }
    }

    /** @param args optional number of measured calls per series (default 20000), or serve */
    public static void main(String[] args) throws Exception {
        boolean serve = args.length > 0 && args[0].equals("serve");
        int n = args.length > 0 && !serve ? Integer.parseInt(args[0]) : 20_000;
        Path dir = Files.createTempDirectory("cri4j-ratio");
        String external = System.getProperty("backend");
        if (external != null) {
            versionAgainst(CriEndpoint.parse(external), dir, n);
            return;
        }
        try (Setup setup = start(dir)) {
            if (serve) {
                Thread.currentThread().setName("serve");
                Runtime.getRuntime()
                        .addShutdownHook(
                                new Thread(
                                        () -> {
                                            try {
                                                closeSetup(setup); // stops nri-logger, gives back
                                                // the NRI socket's link
                                            } catch (Exception e) {
                                                System.err.println("closing: " + e);
                                            }
                                        }));
                serve(dir, setup.proxies);
                return;
            }
            measure(dir, setup.proxies, n);
        }
    }

    /**
     * Starts the backend and the proxies (their order: the series' order), and NRI's Go plugin
     * on the NRI proxy's socket once that proxy listens.
     */
    private static Setup start(Path dir) throws Exception {
        Setup s = new Setup(dir);
        try {
            s.owned.add(startBackend(dir.resolve("b.sock")));
            s.add("relayed", "plain.sock", false, CriProxy.builder());
            s.add(
                    "hook",
                    "hook.sock",
                    true,
                    CriProxy.builder().addHook(new ProxyBenchmark.AnnotateHook()));
            s.add(
                    "async-hook",
                    "async-hook.sock",
                    true,
                    CriProxy.builder().addHook(new ProxyBenchmark.AsyncAnnotateHook()));
            s.add(
                    "interceptor",
                    "interceptor.sock",
                    true,
                    CriProxy.builder().addInterceptor(new ProxyBenchmark.AnnotateInterceptor()));
            s.add(
                    "async-interceptor",
                    "async-interceptor.sock",
                    true,
                    CriProxy.builder()
                            .addInterceptor(new ProxyBenchmark.AsyncAnnotateInterceptor()));
            // the same hook served by a HookServer and called over its socket, as koordlet's are
            HookServer hookServer =
                    HookServer.start(
                            dir.resolve("hook-server.sock"),
                            List.of(new ProxyBenchmark.AnnotateHook()));
            s.owned.add(0, hookServer);
            RemoteRuntimeHook remoteHook = remoteAnnotateHook(dir.resolve("hook-server.sock"));
            s.owned.add(0, remoteHook);
            s.add("remote-hook", "remote.sock", true, CriProxy.builder().addHook(remoteHook));
            if (!"false".equals(System.getProperty("nri"))) {
                CountDownLatch registered = new CountDownLatch(1);
                NriHost nri =
                        NriHost.builder(dir.resolve("nri.sock"))
                                .listener(
                                        new NriHost.Listener() {
                                            @Override
                                            public void registered(
                                                    String name,
                                                    int index,
                                                    java.util.Set<io.cri4j.hook.HookEvent> events) {
                                                registered.countDown();
                                            }
                                        })
                                .build();
                s.add(
                        "nri-logger",
                        "nri-proxy.sock",
                        true,
                        CriProxy.builder().addHookProvider(nri));
                s.owned.add(0, startNriLogger(nri.socket(), dir));
                if (!registered.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(
                            "nri-logger did not register on "
                                    + nri.socket()
                                    + "; its log: "
                                    + dir.resolve(NRI_INDEX + "-nri-logger.log"));
                }
            }
            return s;
        } catch (Exception | Error e) {
            s.close();
            throw e;
        }
    }

    /**
     * NRI's Go {@code nri-logger} on {@code socket}, subscribed to {@code CreateContainer} only
     * (as the in-process hook is) and adding the annotation. NRI v0.8's plugins dial {@code
     * /var/run/nri/nri.sock}: {@link NriGoPlugin#launch} links that path to the private socket
     * under the machine-wide lock until the plugin is closed.
     */
    static NriGoPlugin startNriLogger(Path socket, Path dir) {
        return NriGoPlugin.launch(
                socket,
                dir,
                "nri-logger",
                NRI_INDEX,
                "-events",
                "CreateContainer",
                "-add-annotation",
                ANNOTATION);
    }

    /** Runs the series interleaved and prints each one's percentiles and ratios. */
    private static void measure(Path dir, List<Proxy> proxies, int n) throws Exception {
        List<ManagedChannel> channels = new ArrayList<>();
        try {
            java.util.function.Function<String, RuntimeServiceGrpc.RuntimeServiceBlockingStub>
                    stub =
                            sock -> {
                                ManagedChannel m =
                                        KubeletLikeChannels.newChannel(
                                                CriEndpoint.unix(dir.resolve(sock)));
                                channels.add(m);
                                return RuntimeServiceGrpc.newBlockingStub(m);
                            };
            VersionRequest v = VersionRequest.newBuilder().setVersion("x".repeat(64)).build();
            CreateContainerRequest c = createRequest();
            // the request as the hooks and the interceptors change it: sent directly, it shows
            // what the bigger request costs the runtime itself (parsing the annotation map)
            CreateContainerRequest changed = ProxyBenchmark.AnnotateInterceptor.annotate(c);
            var direct = stub.apply("b.sock");
            List<String> names = new ArrayList<>();
            List<Runnable> calls = new ArrayList<>();
            // untimed, after each call: a proxy's container is removed again, as kubelet removes
            // what it created, so that the proxy's state does not grow with the run
            List<Runnable> cleanups = new ArrayList<>();
            Runnable nothing = () -> {};
            names.add("Version direct");
            calls.add(() -> direct.version(v));
            cleanups.add(nothing);
            var versionRelayed = stub.apply(proxies.get(0).socket());
            names.add("Version relayed");
            calls.add(() -> versionRelayed.version(v));
            cleanups.add(nothing);
            names.add("CreateContainer direct");
            calls.add(() -> direct.createContainer(c));
            cleanups.add(nothing);
            names.add("CreateContainer changed, direct");
            calls.add(() -> direct.createContainer(changed));
            cleanups.add(nothing);
            for (Proxy p : proxies) {
                var s = stub.apply(p.socket());
                // each series reaches the backend as its proxy's hook or interceptor ran: one
                // annotation
                remove(s, s.createContainer(c).getContainerId());
                int got = lastAnnotationCount();
                int want = p.changes() ? 1 : 0;
                if (got != want) {
                    throw new IllegalStateException(
                            p.name()
                                    + ": the backend got "
                                    + got
                                    + " annotations, expected "
                                    + want);
                }
                names.add("CreateContainer " + p.name());
                String[] created = new String[1];
                calls.add(() -> created[0] = s.createContainer(c).getContainerId());
                cleanups.add(() -> remove(s, created[0]));
            }
            String loadBefore = loadAverage();
            for (int i = 0; i < n / 2; i++) { // warm-up
                for (int k = 0; k < calls.size(); k++) {
                    calls.get(k).run();
                    cleanups.get(k).run();
                }
            }
            for (int k = 0; k < calls.size(); k++) {
                Runnable call = calls.get(k);
                Runnable cleanup = cleanups.get(k);
                TraceMarks.runAlone(
                        names.get(k),
                        () -> {
                            call.run();
                            cleanup.run();
                        });
            }
            long[][] t = new long[calls.size()][n];
            long wall0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < calls.size(); k++) {
                    long t0 = System.nanoTime();
                    calls.get(k).run();
                    t[k][i] = System.nanoTime() - t0;
                    cleanups.get(k).run();
                }
            }
            double seconds = (System.nanoTime() - wall0) / 1e9;
            for (long[] a : t) {
                Arrays.sort(a);
            }
            System.out.printf(
                    "%d rounds of %d calls in %.0f s; load average before the warm-up %s,"
                            + " after the rounds %s%n",
                    n, calls.size(), seconds, loadBefore, loadAverage());
            report("Version relayed", t[0], t[1]);
            report("CreateContainer changed, direct", t[2], t[3]);
            for (int k = 4; k < calls.size(); k++) {
                Proxy p = proxies.get(k - 4);
                if (p.changes()) {
                    report(names.get(k), t[2], t[k], t[3]);
                } else {
                    report(names.get(k), t[2], t[k]);
                }
            }
        } finally {
            for (ManagedChannel m : channels) {
                m.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** Removes {@code dir} and what is in it, as far as it can. */
    static void deleteTree(Path dir) throws java.io.IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** {@link ProxyBenchmark.AnnotateHook} as a remote hook on {@code socket} (default timeout). */
    static RemoteRuntimeHook remoteAnnotateHook(Path socket) {
        return new RemoteRuntimeHook(
                HookConfig.parse(
                        "remote-annotate",
                        "{\"remote-endpoint\": \""
                                + socket
                                + "\", \"runtime-hooks\": [\"PreCreateContainer\"]}"));
    }

    /** Version direct vs proxied against a real runtime: pass-through only, nothing is created. */
    private static void versionAgainst(CriEndpoint runtime, Path dir, int n) throws Exception {
        CriProxy proxy =
                CriProxy.builder()
                        .listen(dir.resolve("p.sock"))
                        .backend(runtime)
                        .ioThreads(Integer.getInteger("ioThreads", 1))
                        .build()
                        .start();
        ManagedChannel dc = KubeletLikeChannels.newChannel(runtime);
        ManagedChannel pc = KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve("p.sock")));
        try {
            var direct = RuntimeServiceGrpc.newBlockingStub(dc);
            var proxied = RuntimeServiceGrpc.newBlockingStub(pc);
            VersionRequest v = VersionRequest.newBuilder().setVersion("0.1.0").build();
            for (int i = 0; i < n / 2; i++) {
                direct.version(v);
                proxied.version(v);
            }
            long[][] t = new long[2][n];
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                direct.version(v);
                long t1 = System.nanoTime();
                proxied.version(v);
                long t2 = System.nanoTime();
                t[0][i] = t1 - t0;
                t[1][i] = t2 - t1;
            }
            Arrays.sort(t[0]);
            Arrays.sort(t[1]);
            report("Version pass-through to " + direct.version(v).getRuntimeName(), t[0], t[1]);
        } finally {
            pc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            dc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            proxy.close();
        }
    }

    /** The {@code CreateContainer} request every series sends (the hooks annotate it). */
    static CreateContainerRequest createRequest() {
        return CreateContainerRequest.newBuilder()
                .setPodSandboxId("pod")
                .setConfig(
                        ContainerConfig.newBuilder()
                                .setMetadata(ContainerMetadata.newBuilder().setName("app")))
                .build();
    }

    /**
     * Serves the backend and the proxies for a client in another process ({@code benchmarks/go}:
     * kubelet's own gRPC stack) until killed: prints {@code direct=SOCKET} and {@code NAME=SOCKET}
     * per proxy, and the {@code CreateContainer} request, and that request as the hooks change it,
     * in hex.
     */
    private static void serve(Path dir, List<Proxy> proxies) throws InterruptedException {
        CreateContainerRequest c = createRequest();
        CreateContainerRequest changed = ProxyBenchmark.AnnotateInterceptor.annotate(c);
        System.out.println("request=" + java.util.HexFormat.of().formatHex(c.toByteArray()));
        System.out.println("changed=" + java.util.HexFormat.of().formatHex(changed.toByteArray()));
        System.out.println("direct=" + dir.resolve("b.sock"));
        for (Proxy p : proxies) {
            System.out.println(p.name() + "=" + dir.resolve(p.socket()));
        }
        System.out.println("ready");
        System.out.flush();
        Thread.currentThread().join();
    }

    private static void report(String what, long[] direct, long[] proxied) {
        System.out.printf(
                "%-40s p50 direct %6.1f us, proxied %6.1f us, ratio %.2f | p90 %6.1f / %6.1f us, ratio %.2f%n",
                what,
                p(direct, 0.5),
                p(proxied, 0.5),
                p(proxied, 0.5) / p(direct, 0.5),
                p(direct, 0.9),
                p(proxied, 0.9),
                p(proxied, 0.9) / p(direct, 0.9));
    }

    /** Also the ratio to the changed request sent directly (what the runtime itself got). */
    private static void report(String what, long[] direct, long[] proxied, long[] changedDirect) {
        report(what, direct, proxied);
        System.out.printf(
                "%-40s   against the changed request sent directly: p50 ratio %.2f, p90 ratio %.2f%n",
                "",
                p(proxied, 0.5) / p(changedDirect, 0.5),
                p(proxied, 0.9) / p(changedDirect, 0.9));
    }

    private static double p(long[] sorted, double q) {
        return sorted[(int) Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))]
                / 1000.0;
    }

    private static void remove(RuntimeServiceGrpc.RuntimeServiceBlockingStub s, String id) {
        s.removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
    }

    /**
     * The annotations the built-in backend's last {@code CreateContainer} got, leaving out the
     * proxy's own (a hooked proxy names the container and answers its own id, so the answer's id
     * cannot tell).
     */
    private static final AtomicInteger LAST_ANNOTATIONS = new AtomicInteger(-1);

    /** How many annotations, the proxy's own left out, the last {@code CreateContainer} carried. */
    static int lastAnnotationCount() {
        return LAST_ANNOTATIONS.get();
    }

    /**
     * The built-in backend: {@code Version} echoes the version asked for, {@code CreateContainer}
     * answers the container id "c" and the number of annotations it got, and records that number
     * for {@link #lastAnnotationCount()} (1 shows one hook annotation arrived).
     */
    static CriServer startBackend(Path socket) throws java.io.IOException {
        return CriServer.builder(CriEndpoint.unix(socket))
                .addService(
                        new RuntimeServiceGrpc.RuntimeServiceImplBase() {
                            @Override
                            public void version(
                                    VersionRequest r, StreamObserver<VersionResponse> o) {
                                o.onNext(
                                        VersionResponse.newBuilder()
                                                .setVersion(r.getVersion())
                                                .build());
                                o.onCompleted();
                            }

                            @Override
                            public void removeContainer(
                                    RemoveContainerRequest r,
                                    StreamObserver<RemoveContainerResponse> o) {
                                o.onNext(RemoveContainerResponse.getDefaultInstance());
                                o.onCompleted();
                            }

                            @Override
                            public void createContainer(
                                    CreateContainerRequest r,
                                    StreamObserver<CreateContainerResponse> o) {
                                int n =
                                        (int)
                                                r.getConfig().getAnnotationsMap().keySet().stream()
                                                        .filter(
                                                                k ->
                                                                        !k.startsWith(
                                                                                "io.cri4j.proxy/"))
                                                        .count();
                                LAST_ANNOTATIONS.set(n);
                                o.onNext(
                                        CreateContainerResponse.newBuilder()
                                                .setContainerId("c" + n)
                                                .build());
                                o.onCompleted();
                            }
                        })
                .build()
                .start();
    }

    /** Closes the setup from the shutdown hook of {@code serve}. */
    private static void closeSetup(Setup setup) throws IOException {
        setup.close();
    }
}
