package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the proxy's metrics cost a call: latency and allocation of the same calls through a proxy
 * without a registry and through one recording into a Prometheus registry (as {@code ./cri4j proxy
 * --metrics-address} does), measured <em>interleaved</em> (direct, off, on, direct, ...) in one
 * JVM, so load changes on a shared machine hit every series alike. Series: {@code Version}
 * relayed as frames, and {@code CreateContainer} with an in-process {@code AsyncHook}. Allocation
 * is every thread's allocated bytes (the JVM's per-thread counters) over blocks of calls of one
 * series, per call; the client and the backend allocate alike in both series, so the difference
 * on against off is what the metrics allocate. The same is counted for the proxies' I/O threads
 * alone (the relay's; only the proxy of the block's series works then). Run: {@code java -cp benchmarks/target/benchmarks.jar
 * io.cri4j.benchmarks.ProxyMetricsOverhead [calls]}.
 */
public final class ProxyMetricsOverhead {
    private ProxyMetricsOverhead() {}

    /** @param args optional number of measured calls per series (default 20000) */
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        Path dir = Files.createTempDirectory("cri4j-metrics-overhead");
        // one registry per proxy, as each ./cri4j proxy has its own
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        PrometheusMeterRegistry hookRegistry =
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        List<AutoCloseable> owned = new ArrayList<>();
        List<ManagedChannel> channels = new ArrayList<>();
        try {
            owned.add(0, ProxyLatencyRatio.startBackend(dir.resolve("b.sock")));
            owned.add(0, proxy(dir, "off.sock", CriProxy.builder()));
            owned.add(0, proxy(dir, "on.sock", CriProxy.builder().meterRegistry(registry)));
            owned.add(
                    0,
                    proxy(
                            dir,
                            "hook-off.sock",
                            CriProxy.builder().addHook(new ProxyBenchmark.AsyncAnnotateHook())));
            owned.add(
                    0,
                    proxy(
                            dir,
                            "hook-on.sock",
                            CriProxy.builder()
                                    .meterRegistry(hookRegistry)
                                    .addHook(new ProxyBenchmark.AsyncAnnotateHook())));
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
            CreateContainerRequest c = ProxyLatencyRatio.createRequest();
            var direct = stub.apply("b.sock");
            var off = stub.apply("off.sock");
            var on = stub.apply("on.sock");
            var hookOff = stub.apply("hook-off.sock");
            var hookOn = stub.apply("hook-on.sock");
            String[] names = {
                "Version direct",
                "Version relayed, metrics off",
                "Version relayed, metrics on",
                "CreateContainer direct",
                "CreateContainer AsyncHook, metrics off",
                "CreateContainer AsyncHook, metrics on"
            };
            Runnable[] calls = {
                () -> direct.version(v),
                () -> off.version(v),
                () -> on.version(v),
                () -> direct.createContainer(c),
                () -> hookOff.createContainer(c),
                () -> hookOn.createContainer(c)
            };
            String loadBefore = load();
            for (int i = 0; i < n / 2; i++) { // warm-up
                for (Runnable r : calls) {
                    r.run();
                }
            }
            long[][] t = new long[calls.length][n];
            long wall0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < calls.length; k++) {
                    long t0 = System.nanoTime();
                    calls[k].run();
                    t[k][i] = System.nanoTime() - t0;
                }
            }
            double seconds = (System.nanoTime() - wall0) / 1e9;
            // allocation: blocks of one series at a time, the series interleaved block by block
            int block = 1000;
            int blocks = Math.max(1, n / block / 2);
            long[] allocated = new long[calls.length];
            long[] proxyAllocated = new long[calls.length];
            long[] proxyThreads = proxyThreads();
            for (int b = 0; b < blocks; b++) {
                for (int k = 0; k < calls.length; k++) {
                    long a0 = allocatedBytes();
                    long p0 = allocatedBytes(proxyThreads);
                    for (int i = 0; i < block; i++) {
                        calls[k].run();
                    }
                    proxyAllocated[k] += allocatedBytes(proxyThreads) - p0;
                    allocated[k] += allocatedBytes() - a0;
                }
            }
            for (long[] a : t) {
                Arrays.sort(a);
            }
            System.out.printf(
                    "%d rounds of %d calls in %.0f s; load average before %s, after %s%n",
                    n, calls.length, seconds, loadBefore, load());
            for (int k = 0; k < calls.length; k++) {
                System.out.printf(
                        "%-40s p50 %6.1f us  p90 %6.1f us  %7.0f B allocated a call (all threads),"
                                + " %6.0f B by the proxies' I/O threads%n",
                        names[k],
                        p(t[k], 0.5),
                        p(t[k], 0.9),
                        allocated[k] / (double) (blocks * block),
                        proxyAllocated[k] / (double) (blocks * block));
            }
            ratios("Version", t[0], t[1], t[2], allocated[1], allocated[2], blocks * block);
            ratios("CreateContainer", t[3], t[4], t[5], allocated[4], allocated[5], blocks * block);
            System.out.printf(
                    "the proxies' I/O threads, on − off: Version %+.0f B a call, CreateContainer"
                            + " %+.0f B a call (%d threads)%n",
                    (proxyAllocated[2] - proxyAllocated[1]) / (double) (blocks * block),
                    (proxyAllocated[5] - proxyAllocated[4]) / (double) (blocks * block),
                    proxyThreads.length);
            System.out.printf("scraped text: %d bytes%n", registry.scrape().length());
        } finally {
            for (ManagedChannel m : channels) {
                m.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            for (AutoCloseable a : owned) {
                a.close();
            }
            ProxyLatencyRatio.deleteTree(dir);
        }
    }

    private static void ratios(
            String what,
            long[] direct,
            long[] off,
            long[] on,
            long allocOff,
            long allocOn,
            int calls) {
        double offRatio = p(off, 0.5) / p(direct, 0.5);
        double onRatio = p(on, 0.5) / p(direct, 0.5);
        System.out.printf(
                "%-16s against direct, p50: off %.3f×, on %.3f×, on − off %+.3f×; p90: off %.3f×,"
                        + " on %.3f×; on/off p50 %.3f×; allocation on − off %+.0f B a call%n",
                what,
                offRatio,
                onRatio,
                onRatio - offRatio,
                p(off, 0.9) / p(direct, 0.9),
                p(on, 0.9) / p(direct, 0.9),
                p(on, 0.5) / p(off, 0.5),
                (allocOn - allocOff) / (double) calls);
    }

    private static AutoCloseable proxy(Path dir, String socket, CriProxy.Builder b)
            throws java.io.IOException {
        return b.listen(dir.resolve(socket)).backend(dir.resolve("b.sock")).build().start();
    }

    private static double p(long[] sorted, double q) {
        return sorted[(int) Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))]
                / 1000.0;
    }

    /**
     * The ids of the proxies' I/O threads (their event loops, {@code cri4j-proxy-io-*}), where
     * the relay runs: while a block of one series runs, the others' are idle.
     */
    private static long[] proxyThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(th -> th.getName().startsWith("cri4j-proxy-io"))
                .mapToLong(Thread::getId)
                .toArray();
    }

    /** Bytes allocated so far by the threads {@code ids} (those still alive). */
    private static long allocatedBytes(long[] ids) {
        com.sun.management.ThreadMXBean mx =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (long a : mx.getThreadAllocatedBytes(ids)) {
            if (a > 0) {
                sum += a;
            }
        }
        return sum;
    }

    /** Bytes allocated so far by every live thread of this JVM. */
    private static long allocatedBytes() {
        com.sun.management.ThreadMXBean mx =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (long a : mx.getThreadAllocatedBytes(mx.getAllThreadIds())) {
            if (a > 0) {
                sum += a;
            }
        }
        return sum;
    }

    private static String load() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
