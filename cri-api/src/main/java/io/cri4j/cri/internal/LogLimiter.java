package io.cri4j.cri.internal;

import java.time.Duration;

/**
 * Bounds how many lines of one kind reach the log: at most {@code burst} per window; the lines
 * past that are counted, and the next line let through says how many were left out. Thread-safe.
 * Not API.
 */
public final class LogLimiter {
    private final int burst;
    private final long windowNanos;
    private long windowStart;
    private int inWindow;
    private long suppressed;
    private boolean started;

    /**
     * @param burst lines let through per window
     * @param window the window
     */
    public LogLimiter(int burst, Duration window) {
        if (burst < 1 || window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("burst must be at least 1 and window positive");
        }
        this.burst = burst;
        this.windowNanos = window.toNanos();
    }

    /**
     * Asks to log one line now.
     *
     * @return null when the line is to be left out; otherwise what to append to it: empty, or
     *     {@code " (N more like it not logged)"}
     */
    public String admit() {
        return admit(System.nanoTime());
    }

    synchronized String admit(long now) {
        if (!started || now - windowStart >= windowNanos) {
            started = true;
            windowStart = now;
            inWindow = 0;
        }
        if (inWindow >= burst) {
            suppressed++;
            return null;
        }
        inWindow++;
        if (suppressed == 0) {
            return "";
        }
        String more = " (" + suppressed + " more like it not logged)";
        suppressed = 0;
        return more;
    }
}
