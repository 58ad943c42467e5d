package io.cri4j.streaming.internal.io;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import java.io.IOException;
import java.io.InterruptedIOException;

/**
 * Outbound back-pressure: a writer thread (never an event loop) waits after a write while the
 * channel is not writable, so a fast producer cannot queue unbounded memory for a slow client.
 * The connection handler calls {@link #changed()} from {@code channelWritabilityChanged} and
 * {@code channelInactive}.
 */
public final class WriteGate {
    private final Channel channel;

    public WriteGate(Channel channel) {
        this.channel = channel;
    }

    /** Wakes writers; call on writability changes and on close. */
    public synchronized void changed() {
        notifyAll();
    }

    /**
     * Writes and flushes {@code msg}, then waits while the channel is not writable. Fails only
     * when the message itself could not be written (a close after it went out is not an error).
     */
    public void write(Object msg) throws IOException {
        if (!channel.isActive()) {
            io.netty.util.ReferenceCountUtil.release(msg);
            throw new IOException("connection closed");
        }
        ChannelFuture f = channel.writeAndFlush(msg);
        if (channel.eventLoop().inEventLoop()) {
            return; // never block an event loop
        }
        awaitWritable();
        if (!f.isDone() && !channel.isActive()) {
            f.awaitUninterruptibly(5000); // a closed channel fails what it could not write
        }
        if (f.isDone() && !f.isSuccess()) {
            throw new IOException("connection closed: " + f.cause().getMessage(), f.cause());
        }
    }

    /** Waits until the channel is writable again or closed. */
    public void awaitWritable() throws IOException {
        synchronized (this) {
            while (channel.isActive() && !channel.isWritable()) {
                try {
                    wait(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while writing");
                }
            }
        }
    }
}
