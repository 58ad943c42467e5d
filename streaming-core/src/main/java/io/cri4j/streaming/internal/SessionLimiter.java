package io.cri4j.streaming.internal;

import java.util.concurrent.atomic.AtomicInteger;

/** Bounds the number of concurrently served streaming connections. */
public final class SessionLimiter {
    private final int max;
    private final AtomicInteger active = new AtomicInteger();
    private volatile StreamingMeters meters = StreamingMeters.NONE;

    /** Where sessions (and streaming URLs) are recorded. */
    public StreamingMeters meters() {
        return meters;
    }

    /** Where sessions started and refused are recorded. */
    public void meters(StreamingMeters m) {
        this.meters = m;
    }

    /** Takes a slot for a session of {@code kind}, recording it; false (recorded) when all are taken. */
    public boolean tryAcquire(
            io.cri4j.streaming.StreamKind kind, String transport, String protocol) {
        if (!tryAcquire()) {
            meters.rejected(kind, transport);
            return false;
        }
        meters.started(kind, transport, protocol);
        return true;
    }

    public SessionLimiter(int max) {
        this.max = max;
    }

    /** Takes a slot; false when all are taken. */
    public boolean tryAcquire() {
        while (true) {
            int n = active.get();
            if (n >= max) {
                return false;
            }
            if (active.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    public void release() {
        active.decrementAndGet();
    }

    public int active() {
        return active.get();
    }

    public int max() {
        return max;
    }
}
