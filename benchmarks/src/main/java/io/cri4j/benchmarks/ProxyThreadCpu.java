package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.HookEvent;
import io.cri4j.nri.NriHost;
import io.cri4j.proxy.CriProxy;
import io.cri4j.testing.real.NriGoPlugin;
import io.grpc.ManagedChannel;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * CPU per proxied {@code CreateContainer} call of the proxy's own threads (its I/O thread
 * {@code cri4j-proxy-io-*}, workers {@code cri4j-proxy-worker-*}, hook threads {@code cri4j-hook-*},
 * the NRI host's thread {@code cri4j-nri-host-*}): {@code calls} calls after as many warm-up calls,
 * against a built-in backend in the same JVM, through a proxy without hooks ({@code none}), with
 * an in-process {@code CreateContainer} hook that annotates the container: an {@code AsyncHook}
 * ({@code async-hook}, on the I/O thread) or a blocking {@code Hook} ({@code hook}, on the hook
 * chain's workers); with an interceptor adding the same annotation: a blocking {@code
 * ForwardingCriInterceptor} ({@code interceptor}, on the proxy's workers) or a {@code
 * ForwardingAsyncCriInterceptor} ({@code async}); with the hook served by a {@code HookServer} in
 * the same JVM and called over its unix socket ({@code remote}; the server's hook threads count in
 * the hooks group); or with NRI's Go {@code nri-logger} on the proxy's NRI socket ({@code nri}; its
 * process's CPU is printed apart, from {@code /proc}); and the bytes those threads allocate per
 * call. The client's and the backend's threads are not counted. Less noisy than latency on a
 * shared machine: other load changes how long a call waits, not how much CPU it costs. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ProxyThreadCpu
 * [none|async-hook|hook|interceptor|async|remote|nri] [calls]}.
 */
public final class ProxyThreadCpu {
    private ProxyThreadCpu() {}

    /** @param args what the proxy runs (default async-hook, see above), calls (default 20000) */
    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "async-hook";
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        Path dir = Files.createTempDirectory("cri4j-proxy-cpu");
        CriServer backend = ProxyLatencyRatio.startBackend(dir.resolve("b.sock"));
        CriProxy.Builder b =
                CriProxy.builder()
                        .listen(dir.resolve("p.sock"))
                        .backend(dir.resolve("b.sock"))
                        .ioThreads(1);
        List<AutoCloseable> owned = new ArrayList<>();
        CountDownLatch registered = new CountDownLatch(1);
        switch (kind) {
            case "none" -> {}
            case "async-hook" -> b.addHook(new ProxyBenchmark.AsyncAnnotateHook());
            case "hook" -> b.addHook(new ProxyBenchmark.AnnotateHook());
            case "interceptor" -> b.addInterceptor(new ProxyBenchmark.AnnotateInterceptor());
            case "async" -> b.addInterceptor(new ProxyBenchmark.AsyncAnnotateInterceptor());
            case "remote" -> {
                owned.add(
                        io.cri4j.hook.koordinator.HookServer.start(
                                dir.resolve("hook.sock"),
                                List.of(new ProxyBenchmark.AnnotateHook())));
                b.addHook(ProxyLatencyRatio.remoteAnnotateHook(dir.resolve("hook.sock")));
            }
            case "nri" ->
                    b.addHookProvider(
                            NriHost.builder(dir.resolve("nri.sock"))
                                    .listener(
                                            new NriHost.Listener() {
                                                @Override
                                                public void registered(
                                                        String name,
                                                        int index,
                                                        Set<HookEvent> events) {
                                                    registered.countDown();
                                                }
                                            })
                                    .build());
            default ->
                    throw new IllegalArgumentException(
                            "none, async-hook, hook, interceptor, async, remote or nri: " + kind);
        }
        CriProxy proxy = b.build().start();
        owned.add(0, proxy);
        NriGoPlugin plugin = null;
        if (kind.equals("nri")) {
            plugin = ProxyLatencyRatio.startNriLogger(dir.resolve("nri.sock"), dir);
            owned.add(0, plugin);
            if (!registered.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "nri-logger did not register; its log: " + plugin.logFile());
            }
        }
        ManagedChannel ch = KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve("p.sock")));
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub s =
                    RuntimeServiceGrpc.newBlockingStub(ch);
            CreateContainerRequest c = ProxyLatencyRatio.createRequest();
            s.createContainer(c);
            int got = ProxyLatencyRatio.lastAnnotationCount();
            if (got != (kind.equals("none") ? 0 : 1)) {
                throw new IllegalStateException(kind + ": the backend got " + got + " annotations");
            }
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
            com.sun.management.OperatingSystemMXBean os =
                    (com.sun.management.OperatingSystemMXBean)
                            ManagementFactory.getOperatingSystemMXBean();
            long process0 = os.getProcessCpuTime();
            long plugin0 = plugin == null ? 0 : ticks(plugin.pid());
            long wall0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                s.createContainer(c);
            }
            double process = (os.getProcessCpuTime() - process0) / 1e3 / n;
            double wall = (System.nanoTime() - wall0) / 1e3 / n;
            long pluginTicks = plugin == null ? 0 : ticks(plugin.pid()) - plugin0;
            Map<String, Double> perCall = new TreeMap<>();
            long proxyAllocated = 0;
            for (ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
                if (ti == null) {
                    continue;
                }
                String name = ti.getThreadName();
                String group =
                        name.startsWith("cri4j-proxy-io")
                                ? "io"
                                : name.startsWith("cri4j-proxy")
                                        ? "workers"
                                        : name.startsWith("cri4j-hook")
                                                ? "hooks"
                                                : name.startsWith("cri4j-nri-host")
                                                        ? "nri-host"
                                                        : Boolean.getBoolean("allThreads")
                                                                ? "other:"
                                                                        + name.replaceAll(
                                                                                "[0-9-]+$", "")
                                                                : null;
                if (group != null) {
                    long d =
                            mx.getThreadCpuTime(ti.getThreadId())
                                    - before.getOrDefault(ti.getThreadId(), 0L);
                    perCall.merge(group, d / 1e3 / n, Double::sum);
                    if (!group.startsWith("other:")) {
                        proxyAllocated +=
                                alloc.getThreadAllocatedBytes(ti.getThreadId())
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
            System.out.printf(
                    "%s total %.1f us; whole process %.1f us, wall time %.1f us;"
                            + " the proxy's threads allocate %d bytes per call%n",
                    sb, total, process, wall, proxyAllocated / n);
            if (plugin != null) {
                // clock ticks of 10 ms: a figure for many calls only
                System.out.printf(
                        "nri-logger's process: CPU per call %.1f us%n", pluginTicks * 10_000.0 / n);
            }
        } finally {
            ch.shutdownNow();
            for (AutoCloseable o : owned) {
                o.close();
            }
            backend.close();
            ProxyLatencyRatio.deleteTree(dir);
        }
    }

    /** utime + stime of a process, in clock ticks (USER_HZ, 100 a second). */
    private static long ticks(long pid) throws java.io.IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }
}
