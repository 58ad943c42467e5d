package io.cri4j.nri.internal.plugin;

import java.time.Duration;

/**
 * When to say again that reconnection still fails: the first failure of an outage is logged by the
 * caller, then one line per period (a minute, or twenty of the longest back-offs when that is
 * shorter, at least a second) instead of one per attempt or none at all.
 */
final class StillFailing {
    private final long periodNanos;
    private long since;
    private long last;

    StillFailing(Duration maxBackoff) {
        long twenty = maxBackoff.toNanos() * 20;
        this.periodNanos =
                Math.min(
                        Duration.ofMinutes(1).toNanos(),
                        Math.max(Duration.ofSeconds(1).toNanos(), twenty));
    }

    /** The first failed attempt of an outage. */
    synchronized void started() {
        since = System.nanoTime();
        last = since;
    }

    /**
     * @return the seconds the outage has lasted when a "still failing" line is due now, else -1
     */
    synchronized long due() {
        long now = System.nanoTime();
        if (now - last < periodNanos) {
            return -1;
        }
        last = now;
        return Duration.ofNanos(now - since).toSeconds();
    }
}
