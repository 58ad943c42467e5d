package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.HookConfig;
import io.cri4j.hook.HookServer;
import io.cri4j.hook.RemoteRuntimeHook;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Latency of direct and proxied calls measured <em>interleaved</em> (direct, proxied, direct, …),
 * so load changes on a shared machine hit both series alike and the ratio of their percentiles
 * is meaningful even when absolute figures drift. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ProxyLatencyRatio [calls]}.
 * Calls whose hook or interceptor adds an annotation are also compared with the changed request
 * sent directly: the runtime parses a bigger request either way.
 * With {@code -Dbackend=unix:///run/containerd/containerd.sock} it measures {@code Version}
 * against that runtime (direct vs through the proxy) instead of the built-in test backend.
 * With {@code -Dtrace=MILLIS} each series first runs alone for that long and prints its start and
 * end in {@code System.nanoTime()} (CLOCK_MONOTONIC), to cut a {@code perf} trace by series.
 * With {@code serve} instead of a number it only serves the backend and the proxies, for a
 * client in another process ({@code benchmarks/go/run.sh}).
 */
public final class ProxyLatencyRatio {
    private ProxyLatencyRatio() {
    }

    /** @param args optional number of measured calls per series (default 20000) */
    public static void main(String[] args) throws Exception {
        boolean serve = args.length > 0 && args[0].equals("serve");
        int n = args.length > 0 && !serve ? Integer.parseInt(args[0]) : 20_000;
        Path dir = Files.createTempDirectory("cri4j-ratio");
        String external = System.getProperty("backend");
        if (external != null) {
            versionAgainst(CriEndpoint.parse(external), dir, n);
            return;
        }
        CriServer backend = startBackend(dir.resolve("b.sock"));
        int io = Integer.getInteger("ioThreads", 1);
        // three proxies on the same backend: no hooks (everything relayed), a blocking Hook (run
        // on a hook worker), the same hook as an AsyncHook (called on the I/O thread)
        CriProxy plain = CriProxy.builder().listen(dir.resolve("plain.sock"))
                .backend(dir.resolve("b.sock")).ioThreads(io).build().start();
        CriProxy hooked = CriProxy.builder().listen(dir.resolve("hooked.sock"))
                .backend(dir.resolve("b.sock")).addHook(new ProxyBenchmark.AnnotateHook())
                .ioThreads(io).build().start();
        CriProxy inline = CriProxy.builder().listen(dir.resolve("inline.sock"))
                .backend(dir.resolve("b.sock")).addHook(new ProxyBenchmark.InlineAnnotateHook())
                .ioThreads(io).build().start();
        // and two with an interceptor annotating each container: blocking, and asynchronous
        CriProxy intercepted = CriProxy.builder().listen(dir.resolve("interceptor.sock"))
                .backend(dir.resolve("b.sock"))
                .addInterceptor(new ProxyBenchmark.AnnotateInterceptor())
                .ioThreads(io).build().start();
        CriProxy async = CriProxy.builder().listen(dir.resolve("async.sock"))
                .backend(dir.resolve("b.sock"))
                .addInterceptor(new ProxyBenchmark.AsyncAnnotateInterceptor())
                .ioThreads(io).build().start();
        // and one with the same hook served by a HookServer and called over its socket, as koordlet
        HookServer hookServer = HookServer.start(dir.resolve("hook.sock"),
                java.util.List.of(new ProxyBenchmark.AnnotateHook()));
        RemoteRuntimeHook remoteHook = remoteAnnotateHook(dir.resolve("hook.sock"));
        CriProxy remote = CriProxy.builder().listen(dir.resolve("remote.sock"))
                .backend(dir.resolve("b.sock")).addHook(remoteHook).ioThreads(io).build().start();
        String[] socks = {"b.sock", "plain.sock", "hooked.sock", "inline.sock", "interceptor.sock",
            "async.sock", "remote.sock"};
        if (serve) {
            serve(dir, socks);
            return;
        }
        ManagedChannel[] ch = new ManagedChannel[socks.length];
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub[] s =
                    new RuntimeServiceGrpc.RuntimeServiceBlockingStub[socks.length];
            for (int k = 0; k < socks.length; k++) {
                ch[k] = KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve(socks[k])));
                s[k] = RuntimeServiceGrpc.newBlockingStub(ch[k]);
            }
            VersionRequest v = VersionRequest.newBuilder().setVersion("x".repeat(64)).build();
            CreateContainerRequest c = createRequest();
            // the request as the hook and the interceptors change it: sent directly, it shows what
            // the bigger request costs the runtime itself (parsing the annotation map)
            CreateContainerRequest changed = ProxyBenchmark.AnnotateInterceptor.annotate(c);
            // series: Version direct, Version relayed, CreateContainer direct, relayed,
            // with the hook on a hook thread, with the hook inline, with the blocking interceptor,
            // with the asynchronous one, and the changed request direct
            Runnable[] calls = {
                () -> s[0].version(v), () -> s[2].version(v),
                () -> s[0].createContainer(c), () -> s[1].createContainer(c),
                () -> s[2].createContainer(c), () -> s[3].createContainer(c),
                () -> s[4].createContainer(c), () -> s[5].createContainer(c),
                () -> s[0].createContainer(changed), () -> s[6].createContainer(c),
            };
            for (int i = 0; i < n / 2; i++) { // warm-up
                for (Runnable r : calls) {
                    r.run();
                }
            }
            for (int k = 0; k < calls.length; k++) {
                TraceMarks.runAlone("series-" + k, calls[k]);
            }
            long[][] t = new long[calls.length][n];
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < calls.length; k++) {
                    long t0 = System.nanoTime();
                    calls[k].run();
                    t[k][i] = System.nanoTime() - t0;
                }
            }
            for (long[] a : t) {
                Arrays.sort(a);
            }
            report("Version relayed", t[0], t[1]);
            report("CreateContainer relayed (no hooks)", t[2], t[3]);
            report("CreateContainer changed, direct", t[2], t[8]);
            report("CreateContainer + hook (hook thread)", t[2], t[4], t[8]);
            report("CreateContainer + hook (inline)", t[2], t[5], t[8]);
            report("CreateContainer + interceptor", t[2], t[6], t[8]);
            report("CreateContainer + async interceptor", t[2], t[7], t[8]);
            report("CreateContainer + remote hook", t[2], t[9], t[8]);
        } finally {
            for (ManagedChannel m : ch) {
                if (m != null) {
                    m.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            }
            plain.close();
            hooked.close();
            inline.close();
            intercepted.close();
            async.close();
            remote.close();
            remoteHook.close();
            hookServer.close();
            backend.close();
        }
    }

    /** {@link ProxyBenchmark.AnnotateHook} as a remote hook on {@code socket} (default timeout). */
    static RemoteRuntimeHook remoteAnnotateHook(Path socket) {
        return new RemoteRuntimeHook(HookConfig.parse("remote-annotate",
                "{\"remote-endpoint\": \"" + socket + "\", \"runtime-hooks\": [\"PreCreateContainer\"]}"));
    }

    /** Version direct vs proxied against a real runtime: pass-through only, nothing is created. */
    private static void versionAgainst(CriEndpoint runtime, Path dir, int n) throws Exception {
        CriProxy proxy = CriProxy.builder().listen(dir.resolve("p.sock")).backend(runtime)
                .ioThreads(Integer.getInteger("ioThreads", 1)).build().start();
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
        return CreateContainerRequest.newBuilder().setPodSandboxId("pod")
                .setConfig(ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))).build();
    }

    /**
     * Serves the backend and the proxies for a client in another process ({@code benchmarks/go}:
     * kubelet's own gRPC stack) until killed: prints {@code NAME=SOCKET} per proxy, and the
     * {@code CreateContainer} request, and that request as the hook changes it, in hex.
     */
    private static void serve(Path dir, String[] socks) throws InterruptedException {
        String[] names = {"direct", "relayed", "hook-thread", "inline-hook", "interceptor",
            "async-interceptor", "remote-hook"};
        CreateContainerRequest c = createRequest();
        CreateContainerRequest changed = ProxyBenchmark.AnnotateInterceptor.annotate(c);
        System.out.println("request=" + java.util.HexFormat.of().formatHex(c.toByteArray()));
        System.out.println("changed=" + java.util.HexFormat.of().formatHex(changed.toByteArray()));
        for (int k = 0; k < socks.length; k++) {
            System.out.println(names[k] + "=" + dir.resolve(socks[k]));
        }
        System.out.flush();
        Thread.currentThread().join();
    }

    private static void report(String what, long[] direct, long[] proxied) {
        System.out.printf("%-36s p50 direct %6.1f us, proxied %6.1f us, ratio %.2f | p90 %6.1f / %6.1f us, ratio %.2f%n",
                what, p(direct, 0.5), p(proxied, 0.5), p(proxied, 0.5) / p(direct, 0.5),
                p(direct, 0.9), p(proxied, 0.9), p(proxied, 0.9) / p(direct, 0.9));
    }

    /** Also the ratio to the changed request sent directly (what the runtime itself got). */
    private static void report(String what, long[] direct, long[] proxied, long[] changedDirect) {
        report(what, direct, proxied);
        System.out.printf("%-36s   against the changed request sent directly: p50 ratio %.2f, p90 ratio %.2f%n",
                "", p(proxied, 0.5) / p(changedDirect, 0.5), p(proxied, 0.9) / p(changedDirect, 0.9));
    }

    private static double p(long[] sorted, double q) {
        return sorted[(int) Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))] / 1000.0;
    }

    /**
     * The built-in backend: {@code Version} echoes the version asked for, {@code CreateContainer}
     * answers the container id "c" and the number of annotations it got (so "c1" shows one hook
     * annotation arrived).
     */
    static CriServer startBackend(Path socket) throws java.io.IOException {
        return CriServer.builder(CriEndpoint.unix(socket))
                .addService(new RuntimeServiceGrpc.RuntimeServiceImplBase() {
                    @Override
                    public void version(VersionRequest r, StreamObserver<VersionResponse> o) {
                        o.onNext(VersionResponse.newBuilder().setVersion(r.getVersion()).build());
                        o.onCompleted();
                    }

                    @Override
                    public void createContainer(CreateContainerRequest r,
                            StreamObserver<CreateContainerResponse> o) {
                        o.onNext(CreateContainerResponse.newBuilder()
                                .setContainerId("c" + r.getConfig().getAnnotationsCount()).build());
                        o.onCompleted();
                    }
                }).build().start();
    }
}
