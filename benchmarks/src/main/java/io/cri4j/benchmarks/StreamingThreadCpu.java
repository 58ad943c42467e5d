package io.cri4j.benchmarks;

import io.cri4j.streaming.StreamingClient;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where the CPU of exec stdout goes, per thread: runs {@code copies} copies of 32 MiB (after 30
 * warm-up copies) of one kind, a raw loopback TCP copy, a SPDY exec or a WebSocket exec (as in
 * {@link StreamingThroughputRatio}), and prints the CPU per MiB of the whole process (with JIT
 * and GC) and of each group of application threads (by name: the client's event loop
 * {@code cri4j-streaming-client}, the server's event loops {@code cri4j-streaming-io}, the
 * runtime {@code cri4j-streaming}, the reader {@code main}; the raw copy's writer
 * {@code raw-copy}), and the JIT compiler threads' share of the process's. Less noisy than throughput on a shared machine, since other load does not
 * change how much CPU a byte costs. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.StreamingThreadCpu [raw|spdy|ws] [copies]}.
 */
public final class StreamingThreadCpu {
    private StreamingThreadCpu() {}

    /** @param args kind (raw, spdy or ws; default spdy) and copies (default 150) */
    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "spdy";
        int copies = args.length > 1 ? Integer.parseInt(args[1]) : 150;
        int mib = 32;
        long bytes = (long) mib << 20;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean();
        try (StreamingFixture f = new StreamingFixture(1000);
                StreamingClient client =
                        StreamingClient.builder()
                                .transport(
                                        kind.equals("ws")
                                                ? StreamingClient.Transport.WEBSOCKET
                                                : StreamingClient.Transport.SPDY)
                                .build()) {
            for (int i = 0; i < 30; i++) {
                copy(f, client, kind, bytes);
            }
            Map<Long, Long> before = cpu(threads);
            long process0 = os.getProcessCpuTime();
            long jit0 = StreamingThroughputRatio.compilerCpuNanos();
            long t0 = System.nanoTime();
            for (int i = 0; i < copies; i++) {
                copy(f, client, kind, bytes);
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            double totalMib = (double) copies * mib;
            long process = os.getProcessCpuTime() - process0;
            long jit = StreamingThroughputRatio.compilerCpuNanos() - jit0;
            Map<String, Double> byGroup = new TreeMap<>();
            double app = 0;
            for (Map.Entry<Long, Long> e : cpu(threads).entrySet()) {
                ThreadInfo info = threads.getThreadInfo(e.getKey());
                if (info == null
                        || info.getThreadName().contains("Compiler")
                        || info.getThreadName().startsWith("GC")) {
                    continue;
                }
                double ms = (e.getValue() - before.getOrDefault(e.getKey(), 0L)) / 1e6 / totalMib;
                byGroup.merge(info.getThreadName().replaceAll("(-[0-9]+)+$", ""), ms, Double::sum);
                app += ms;
            }
            System.out.printf(
                    "%s: %d copies of %d MiB, %.0f MiB/s; CPU per MiB: process %.3f ms (JIT compiler threads %.3f ms), application threads %.3f ms%n",
                    kind,
                    copies,
                    mib,
                    totalMib / seconds,
                    process / 1e6 / totalMib,
                    jit / 1e6 / totalMib,
                    app);
            byGroup.forEach(
                    (name, ms) -> {
                        if (ms >= 0.005) {
                            System.out.printf("  %-24s %.3f ms/MiB%n", name, ms);
                        }
                    });
        }
    }

    private static void copy(StreamingFixture f, StreamingClient client, String kind, long bytes)
            throws Exception {
        StreamingFixture.check(
                bytes, kind.equals("raw") ? f.rawCopy(bytes) : f.execCopy(client, bytes));
    }

    private static Map<Long, Long> cpu(ThreadMXBean threads) {
        Map<Long, Long> m = new HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            long t = threads.getThreadCpuTime(id);
            if (t >= 0) {
                m.put(id, t);
            }
        }
        return m;
    }
}
