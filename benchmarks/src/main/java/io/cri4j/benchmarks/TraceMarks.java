package io.cri4j.benchmarks;

/**
 * With {@code -Dtrace=MILLIS}: runs a series of calls alone for that long and prints its start
 * and end in {@code System.nanoTime()} (CLOCK_MONOTONIC on Linux), so that a trace taken with
 * {@code perf record -k CLOCK_MONOTONIC} can be cut by series ({@code perf script --time}).
 */
final class TraceMarks {
    private static final long MILLIS = Long.getLong("trace", 0);

    private TraceMarks() {}

    /** Runs {@code call} alone for the traced time and prints the marks; nothing without -Dtrace. */
    static void runAlone(String series, Runnable call) {
        if (MILLIS <= 0) {
            return;
        }
        long start = System.nanoTime();
        long calls = 0;
        while (System.nanoTime() - start < MILLIS * 1_000_000L) {
            call.run();
            calls++;
        }
        System.out.printf(
                "trace %s from %d to %d calls %d%n", series, start, System.nanoTime(), calls);
    }
}
