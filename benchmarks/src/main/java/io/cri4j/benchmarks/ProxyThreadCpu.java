package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * CPU per proxied {@code CreateContainer} call of the proxy's own threads (its I/O thread
 * {@code cri4j-proxy-io-*}, workers {@code cri4j-proxy-worker-*}, hook threads {@code cri4j-hook-*}):
 * {@code calls} calls after as many warm-up calls, against a built-in backend in the same JVM,
 * through a proxy without hooks ({@code none}), with an in-process {@code CreateContainer}
 * hook that never blocks ({@code inline}, an {@code AsyncHook}) or a blocking one on a hook worker
 * ({@code thread}), or with an interceptor that
 * annotates the container: a blocking {@code ForwardingCriInterceptor} ({@code interceptor}) or a
 * {@code ForwardingAsyncCriInterceptor} ({@code async}), or the hook served by a {@code HookServer} in the
 * same JVM and called over its unix socket ({@code remote}; the server's threads count as the
 * client's and the runtime's do: not at all), and the bytes those threads allocate per call.
 * Less noisy than latency on a shared machine: other load changes how long a call waits, not how
 * much CPU it costs. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ProxyThreadCpu [none|inline|thread|interceptor|async|remote] [calls]}.
 */
public final class ProxyThreadCpu {
    private ProxyThreadCpu() {
    }

    /** @param args what the proxy runs (none, inline, thread, interceptor, async; default inline), calls (20000) */
    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "inline";
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        Path dir = Files.createTempDirectory("cri4j-proxy-cpu");
        CriServer backend = ProxyLatencyRatio.startBackend(dir.resolve("b.sock"));
        CriProxy.Builder b = CriProxy.builder().listen(dir.resolve("p.sock"))
                .backend(dir.resolve("b.sock")).ioThreads(1);
        switch (kind) {
            case "none" -> { }
            case "inline" -> b.addHook(new ProxyBenchmark.InlineAnnotateHook());
            case "thread" -> b.addHook(new ProxyBenchmark.AnnotateHook());
            case "interceptor" -> b.addInterceptor(new ProxyBenchmark.AnnotateInterceptor());
            case "async" -> b.addInterceptor(new ProxyBenchmark.AsyncAnnotateInterceptor());
            case "remote" -> {
                io.cri4j.hook.HookServer.start(dir.resolve("hook.sock"),
                        java.util.List.of(new ProxyBenchmark.AnnotateHook()));
                b.addHook(ProxyLatencyRatio.remoteAnnotateHook(dir.resolve("hook.sock")));
            }
            default -> throw new IllegalArgumentException(
                    "none, inline, thread, interceptor, async or remote: " + kind);
        }
        CriProxy proxy = b.build().start();
        ManagedChannel ch = KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve("p.sock")));
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub s = RuntimeServiceGrpc.newBlockingStub(ch);
            CreateContainerRequest c = ProxyLatencyRatio.createRequest();
            for (int i = 0; i < n; i++) {
                s.createContainer(c);
            }
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            com.sun.management.ThreadMXBean alloc = (com.sun.management.ThreadMXBean) mx;
            Map<Long, Long> before = new HashMap<>();
            Map<Long, Long> allocBefore = new HashMap<>();
            for (long id : mx.getAllThreadIds()) {
                before.put(id, mx.getThreadCpuTime(id));
                allocBefore.put(id, alloc.getThreadAllocatedBytes(id));
            }
            com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                    ManagementFactory.getOperatingSystemMXBean();
            long process0 = os.getProcessCpuTime();
            long wall0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                s.createContainer(c);
            }
            double process = (os.getProcessCpuTime() - process0) / 1e3 / n;
            double wall = (System.nanoTime() - wall0) / 1e3 / n;
            Map<String, Double> perCall = new TreeMap<>();
            long proxyAllocated = 0;
            for (ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
                if (ti == null) {
                    continue;
                }
                String name = ti.getThreadName();
                String group = name.startsWith("cri4j-proxy-io") ? "io"
                        : name.startsWith("cri4j-proxy") ? "workers"
                        : name.startsWith("cri4j-hook") ? "hooks"
                        : Boolean.getBoolean("allThreads") ? "other:" + name.replaceAll("[0-9-]+$", "") : null;
                if (group != null) {
                    long d = mx.getThreadCpuTime(ti.getThreadId())
                            - before.getOrDefault(ti.getThreadId(), 0L);
                    perCall.merge(group, d / 1e3 / n, Double::sum);
                    if (!group.startsWith("other:")) {
                        proxyAllocated += alloc.getThreadAllocatedBytes(ti.getThreadId())
                                - allocBefore.getOrDefault(ti.getThreadId(), 0L);
                    }
                }
            }
            StringBuilder sb = new StringBuilder(kind + ": CPU per call");
            double total = 0;
            for (Map.Entry<String, Double> e : perCall.entrySet()) {
                sb.append(String.format(" %s %.1f us,", e.getKey(), e.getValue()));
                total += e.getValue();
            }
            // the whole process: also the client, the backend, and the JVM's own threads
            System.out.printf("%s total %.1f us; whole process %.1f us, wall time %.1f us;"
                    + " the proxy's threads allocate %d bytes per call%n", sb, total, process, wall,
                    proxyAllocated / n);
        } finally {
            ch.shutdownNow();
            proxy.close();
            backend.close();
        }
    }
}
