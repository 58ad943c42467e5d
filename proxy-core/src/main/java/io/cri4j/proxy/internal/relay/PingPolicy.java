package io.cri4j.proxy.internal.relay;

import java.util.concurrent.TimeUnit;

/**
 * The client's PING policy: grpc-go's server keepalive enforcement with the defaults containerd
 * runs with. A PING less than {@link #PING_MIN_INTERVAL_NANOS} after the last (or, with no stream
 * open, less than {@link #PING_IDLE_INTERVAL_NANOS}) and with no HEADERS or DATA written to the
 * client since is a strike; more than {@link #MAX_PING_STRIKES} strikes end the connection (with
 * GOAWAY ENHANCE_YOUR_CALM "too_many_pings", as at containerd). A PING after HEADERS or DATA
 * clears the strikes.
 */
final class PingPolicy {
    static final int MAX_PING_STRIKES = 2;
    static final long PING_MIN_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(5);
    static final long PING_IDLE_INTERVAL_NANOS = TimeUnit.HOURS.toNanos(2);

    private boolean pinged;
    private long lastPingAt;
    private int strikes;

    /**
     * Judges a client PING (after it was answered, as grpc-go does).
     *
     * @param now {@link System#nanoTime()} at the PING
     * @param answered HEADERS or DATA went to the client since its last PING
     * @param idle no stream is open
     * @return true when the client sent too many: the connection ends
     */
    boolean tooMany(long now, boolean answered, boolean idle) {
        boolean first = !pinged;
        long last = lastPingAt;
        pinged = true;
        lastPingAt = now;
        if (answered) {
            strikes = 0;
            return false;
        }
        long min = idle ? PING_IDLE_INTERVAL_NANOS : PING_MIN_INTERVAL_NANOS;
        if (!first && now - last < min) {
            strikes++;
        }
        return strikes > MAX_PING_STRIKES;
    }
}
