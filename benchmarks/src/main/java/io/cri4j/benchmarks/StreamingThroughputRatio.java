package io.cri4j.benchmarks;

import io.cri4j.streaming.StreamingClient;
import java.util.Arrays;

/**
 * Exec stdout throughput over SPDY and WebSocket as a ratio to a raw loopback TCP copy of the same
 * bytes, measured <em>interleaved</em>: every round runs one raw copy, one SPDY exec and one
 * WebSocket exec of {@code mib} MiB (in a rotating order), so load changes on a shared machine
 * hit all three series alike. Reports the median MiB/s of each series and the median of the
 * per-round ratios. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.StreamingThroughputRatio [rounds] [mib]}.
 */
public final class StreamingThroughputRatio {
    private StreamingThroughputRatio() {}

    /** @param args optional rounds (default 30) and MiB per copy (default 32) */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        long bytes = (long) mib << 20;
        try (StreamingFixture f = new StreamingFixture(1000);
                StreamingClient spdy = StreamingClient.builder().build();
                StreamingClient ws =
                        StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .build()) {
            Copy[] copies = {
                () -> f.rawCopy(bytes), () -> f.execCopy(spdy, bytes), () -> f.execCopy(ws, bytes),
            };
            for (int i = 0; i < Math.max(5, rounds / 3); i++) { // warm-up
                for (Copy c : copies) {
                    StreamingFixture.check(bytes, c.run());
                }
            }
            com.sun.management.OperatingSystemMXBean os =
                    (com.sun.management.OperatingSystemMXBean)
                            java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            double[][] mibPerSec = new double[3][rounds];
            long[] cpuNanos = new long[3];
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

    private static double q(double[] values, double q) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
    }
}
