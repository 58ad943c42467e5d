package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * Throughput of {@code Version} with 16 concurrent callers on one channel, direct and through the
 * proxy, measured in <em>alternating</em> rounds (direct, proxied, direct, …) so load changes on a
 * shared machine hit both series alike; reports the median calls/s of each and the median of the
 * per-round ratios. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ProxyThroughputRatio [rounds] [seconds]}.
 * With {@code -Dbackend=unix:///PATH} it measures against that runtime instead of a built-in
 * backend in the same JVM.
 */
public final class ProxyThroughputRatio {
    private static final int CALLERS = 16;

    private ProxyThroughputRatio() {}

    /** @param args optional rounds (default 10) and seconds per round (default 2) */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 2;
        Path dir = Files.createTempDirectory("cri4j-tput");
        String external = System.getProperty("backend");
        CriServer builtIn = null;
        CriEndpoint runtime;
        if (external != null) {
            runtime = CriEndpoint.parse(external);
        } else {
            runtime = CriEndpoint.unix(dir.resolve("b.sock"));
            builtIn =
                    CriServer.builder(runtime)
                            .addService(
                                    new RuntimeServiceGrpc.RuntimeServiceImplBase() {
                                        @Override
                                        public void version(
                                                VersionRequest r,
                                                StreamObserver<VersionResponse> o) {
                                            o.onNext(
                                                    VersionResponse.newBuilder()
                                                            .setVersion(r.getVersion())
                                                            .build());
                                            o.onCompleted();
                                        }
                                    })
                            .build()
                            .start();
        }
        CriProxy proxy =
                CriProxy.builder()
                        .listen(dir.resolve("p.sock"))
                        .backend(runtime)
                        .ioThreads(Integer.getInteger("ioThreads", 1))
                        .build()
                        .start();
        ManagedChannel dc = KubeletLikeChannels.newChannel(runtime);
        ManagedChannel pc = KubeletLikeChannels.newChannel(proxy.listenEndpoint());
        try {
            VersionRequest v = VersionRequest.newBuilder().setVersion("0.1.0").build();
            var direct = RuntimeServiceGrpc.newBlockingStub(dc);
            var proxied = RuntimeServiceGrpc.newBlockingStub(pc);
            run(direct, v, 1.0); // warm-up
            run(proxied, v, 1.0);
            double[] d = new double[rounds];
            double[] p = new double[rounds];
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                d[r] = run(direct, v, seconds);
                p[r] = run(proxied, v, seconds);
                ratio[r] = p[r] / d[r];
            }
            Arrays.sort(d);
            Arrays.sort(p);
            Arrays.sort(ratio);
            System.out.printf(
                    "Version, %d callers: direct %.0f calls/s, proxied %.0f calls/s (medians of %d"
                            + " rounds); ratio median %.2f (min %.2f, max %.2f)%n",
                    CALLERS,
                    d[rounds / 2],
                    p[rounds / 2],
                    rounds,
                    ratio[rounds / 2],
                    ratio[0],
                    ratio[rounds - 1]);
        } finally {
            pc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            dc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            proxy.close();
            if (builtIn != null) {
                builtIn.close();
            }
        }
    }

    /** Calls/s of {@link #CALLERS} threads calling as fast as they can for {@code seconds}. */
    private static double run(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub stub, VersionRequest v, double seconds)
            throws InterruptedException {
        LongAdder calls = new LongAdder();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch done = new CountDownLatch(CALLERS);
        for (int i = 0; i < CALLERS; i++) {
            Thread t =
                    new Thread(
                            () -> {
                                try {
                                    while (!stop.get()) {
                                        stub.version(v);
                                        calls.increment();
                                    }
                                } finally {
                                    done.countDown();
                                }
                            });
            t.setDaemon(true);
            t.start();
        }
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000)); // the measuring window itself, not synchronisation
        stop.set(true);
        long n = calls.sum();
        long elapsed = System.nanoTime() - t0;
        done.await(30, TimeUnit.SECONDS);
        return n / (elapsed / 1e9);
    }
}
