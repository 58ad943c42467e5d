package io.cri4j.benchmarks;

import io.cri4j.streaming.StreamingClient;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Exec stdout throughput over SPDY and WebSocket as a ratio to a raw loopback TCP copy of the same
 * bytes, measured <em>interleaved</em>: every round runs one raw copy, one SPDY exec and one
 * WebSocket exec of {@code mib} MiB (in a rotating order), so load changes on a shared machine
 * hit all three series alike. Reports the median MiB/s of each series and the median of the
 * per-round ratios, the JVM's CPU per MiB of each series, and how much of that CPU the JIT
 * compiler threads took during the measured rounds (with the {@link CompilationMXBean}'s
 * compilation time and the GC time), so that a run on a young JVM says that it measured warm-up.
 * Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.StreamingThroughputRatio [rounds] [mib] [warmup]}.
 *
 * <p>Warm-up ({@code warmup}, or {@code -Dwarmup=}): a number of rounds, default {@code max(5,
 * rounds/3)}; or {@code quiet}: rounds until one whole round added less than {@value
 * #QUIET_COMPILE_MS} ms of compilation time ({@link CompilationMXBean#getTotalCompilationTime()})
 * {@value #QUIET_ROUNDS} times in a row, at least 5 and at most {@value #QUIET_MAX_ROUNDS}. The
 * compiler threads' CPU (the compiles run in the background and cannot be told apart by series: it is read before and after all measured
 * rounds and reported per MiB copied by any series).
 */
public final class StreamingThroughputRatio {
    /** Compilation time of one warm-up round under which {@code quiet} stops warming up. */
    static final long QUIET_COMPILE_MS = 5;

    /** How many rounds in a row {@code quiet} wants under {@link #QUIET_COMPILE_MS}. */
    static final int QUIET_ROUNDS = 3;

    /** Most warm-up rounds of {@code quiet}. */
    static final int QUIET_MAX_ROUNDS = 400;

    private StreamingThroughputRatio() {}

    /**
     * @param args optional rounds (default 30), MiB per copy (default 32) and warm-up (rounds, or
     *     {@code quiet}; default {@code max(5, rounds/3)})
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        String warmup =
                args.length > 2
                        ? args[2]
                        : System.getProperty("warmup", Integer.toString(Math.max(5, rounds / 3)));
        boolean quiet = warmup.equals("quiet");
        int warmupRounds = quiet ? QUIET_MAX_ROUNDS : Integer.parseInt(warmup);
        long bytes = (long) mib << 20;
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long jvmStart = ManagementFactory.getRuntimeMXBean().getStartTime();
        try (StreamingFixture f = new StreamingFixture(1000);
                StreamingClient spdy = StreamingClient.builder().build();
                StreamingClient ws =
                        StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .build()) {
            Copy[] copies = {
                () -> f.rawCopy(bytes), () -> f.execCopy(spdy, bytes), () -> f.execCopy(ws, bytes),
            };
            int warmed = 0;
            int quietRounds = 0;
            long lastRoundCompileMs = -1;
            while (warmed < warmupRounds) {
                long j0 = jit.getTotalCompilationTime();
                for (Copy c : copies) {
                    StreamingFixture.check(bytes, c.run());
                }
                warmed++;
                lastRoundCompileMs = jit.getTotalCompilationTime() - j0;
                quietRounds = lastRoundCompileMs < QUIET_COMPILE_MS ? quietRounds + 1 : 0;
                if (quiet && warmed >= 5 && quietRounds >= QUIET_ROUNDS) {
                    break;
                }
            }
            com.sun.management.OperatingSystemMXBean os =
                    (com.sun.management.OperatingSystemMXBean)
                            ManagementFactory.getOperatingSystemMXBean();
            double[][] mibPerSec = new double[3][rounds];
            long[] cpuNanos = new long[3];
            long jvmAgeMs = System.currentTimeMillis() - jvmStart;
            long compileMs0 = jit.getTotalCompilationTime();
            long gcMs0 = gcMillis();
            long jitCpu0 = compilerCpuNanos();
            long wall0 = System.nanoTime();
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 3; k++) {
                    int which = (r + k) % 3;
                    long c0 = os.getProcessCpuTime();
                    long t0 = System.nanoTime();
                    StreamingFixture.check(bytes, copies[which].run());
                    mibPerSec[which][r] = mib / ((System.nanoTime() - t0) / 1e9);
                    cpuNanos[which] += os.getProcessCpuTime() - c0;
                }
            }
            double measuredSec = (System.nanoTime() - wall0) / 1e9;
            long compileMs = jit.getTotalCompilationTime() - compileMs0;
            long gcMs = gcMillis() - gcMs0;
            double jitCpuPerMib = (compilerCpuNanos() - jitCpu0) / 1e6 / rounds / mib / 3;
            double[] spdyRatio = new double[rounds];
            double[] wsRatio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                spdyRatio[r] = mibPerSec[1][r] / mibPerSec[0][r];
                wsRatio[r] = mibPerSec[2][r] / mibPerSec[0][r];
            }
            System.out.printf(
                    "%d rounds of %d MiB; median MiB/s (p25..p75); CPU of this JVM per MiB: raw %.2f ms, SPDY %.2f ms, WebSocket %.2f ms%n",
                    rounds,
                    mib,
                    cpuNanos[0] / 1e6 / rounds / mib,
                    cpuNanos[1] / 1e6 / rounds / mib,
                    cpuNanos[2] / 1e6 / rounds / mib);
            System.out.printf(
                    "  of which the JIT compiler threads took %.2f ms per MiB copied (all three series"
                            + " together, so a third each if spread evenly); without that third:"
                            + " raw %.2f ms, SPDY %.2f ms (%.2fx), WebSocket %.2f ms (%.2fx)%n",
                    jitCpuPerMib,
                    cpuNanos[0] / 1e6 / rounds / mib - jitCpuPerMib,
                    cpuNanos[1] / 1e6 / rounds / mib - jitCpuPerMib,
                    (cpuNanos[1] / 1e6 / rounds / mib - jitCpuPerMib)
                            / (cpuNanos[0] / 1e6 / rounds / mib - jitCpuPerMib),
                    cpuNanos[2] / 1e6 / rounds / mib - jitCpuPerMib,
                    (cpuNanos[2] / 1e6 / rounds / mib - jitCpuPerMib)
                            / (cpuNanos[0] / 1e6 / rounds / mib - jitCpuPerMib));
            System.out.printf(
                    "warm-up %d rounds%s (compilation in the last one: %d ms); measured %.1f s from a"
                            + " JVM %.1f s old: JIT compilation %d ms (%.1f %% of the wall time),"
                            + " GC %d ms%n",
                    warmed,
                    quiet ? " (until quiet)" : "",
                    lastRoundCompileMs,
                    measuredSec,
                    jvmAgeMs / 1e3,
                    compileMs,
                    compileMs / 10.0 / measuredSec,
                    gcMs);
            System.out.printf(
                    "raw loopback TCP copy  %7.0f (%5.0f..%5.0f)%n",
                    q(mibPerSec[0], .5), q(mibPerSec[0], .25), q(mibPerSec[0], .75));
            System.out.printf(
                    "exec stdout, SPDY      %7.0f (%5.0f..%5.0f)  ratio to raw: median %.2f (p25 %.2f, p75 %.2f)%n",
                    q(mibPerSec[1], .5),
                    q(mibPerSec[1], .25),
                    q(mibPerSec[1], .75),
                    q(spdyRatio, .5),
                    q(spdyRatio, .25),
                    q(spdyRatio, .75));
            System.out.printf(
                    "exec stdout, WebSocket %7.0f (%5.0f..%5.0f)  ratio to raw: median %.2f (p25 %.2f, p75 %.2f)%n",
                    q(mibPerSec[2], .5),
                    q(mibPerSec[2], .25),
                    q(mibPerSec[2], .75),
                    q(wsRatio, .5),
                    q(wsRatio, .25),
                    q(wsRatio, .75));
        }
    }

    private interface Copy {
        long run() throws Exception;
    }

    /**
     * CPU time of the JIT compiler threads alive now, from {@code /proc/self/task} (the JDK hides
     * them from {@code ThreadMXBean}; the kernel names them {@code C1/C2 CompilerThre}).
     */
    static long compilerCpuNanos() {
        long ticks = 0;
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                try {
                    String stat = Files.readString(task.resolve("stat"));
                    int close = stat.lastIndexOf(')');
                    if (!stat.substring(stat.indexOf('(') + 1, close).contains("CompilerThre")) {
                        continue;
                    }
                    String[] f = stat.substring(close + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
                } catch (IOException e) {
                    // the thread exited meanwhile
                }
            }
        } catch (IOException e) {
            return 0; // no /proc: reported as 0
        }
        return ticks * (1_000_000_000L / 100); // USER_HZ is 100 on Linux
    }

    private static long gcMillis() {
        long sum = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            sum += Math.max(0, gc.getCollectionTime());
        }
        return sum;
    }

    private static double q(double[] values, double q) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
    }
}
