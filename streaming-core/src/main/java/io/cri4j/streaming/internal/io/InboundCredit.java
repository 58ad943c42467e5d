package io.cri4j.streaming.internal.io;

import io.netty.channel.Channel;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Connection-level back-pressure for inbound bytes, in place of SPDY flow control (Go's spdystream
 * never sends WINDOW_UPDATE, so like spdystream we rely on TCP): when more than {@code high} bytes
 * are buffered for slow readers, reading from the socket stops until readers drained below
 * {@code low}.
 */
public final class InboundCredit {
    private final Channel channel;
    private final long high;
    private final long low;
    private final AtomicLong buffered = new AtomicLong();
    private volatile boolean paused;

    public InboundCredit(Channel channel, long high, long low) {
        this.channel = channel;
        this.high = high;
        this.low = low;
    }

    /** Called on the event loop when {@code n} bytes were queued for a reader. */
    public void buffered(int n) {
        if (buffered.addAndGet(n) > high && !paused) {
            paused = true;
            channel.config().setAutoRead(false);
        }
    }

    /** Called by any thread when {@code n} queued bytes were consumed or discarded. */
    public void released(int n) {
        if (n == 0) {
            return;
        }
        if (buffered.addAndGet(-n) < low && paused) {
            Loops.run(
                    channel,
                    () -> {
                        if (paused && buffered.get() < low) {
                            paused = false;
                            channel.config().setAutoRead(true);
                            channel.read();
                        }
                    });
        }
    }

    /** Bytes queued but not yet read. */
    public long bufferedBytes() {
        return buffered.get();
    }
}
