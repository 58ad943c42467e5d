package io.cri4j.streaming.internal.io;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Outbound path of writer threads (a runtime's or an application's, never an event loop): frames
 * are queued and written by one drain task on the event loop, which writes all frames queued by
 * then and flushes once, so a writer that is ahead of the event loop costs one task, one wake-up
 * and one (gathering) socket write per batch instead of per frame. After queueing, a writer waits
 * while the channel is not writable or more than {@link #QUEUE_HIGH} bytes wait for the drain, so a
 * fast producer cannot queue unbounded memory for a slow client (at most about 1.5 MiB per
 * connection with the 1 MiB high mark of the channels' outbound buffers). The connection handler calls {@link #changed()} from {@code channelWritabilityChanged}
 * and {@code channelInactive}.
 *
 * <p>Order: frames of one writer go out in the order written, and before anything the same thread
 * hands to the event loop afterwards (a FIN, a close): a drain task is always queued on the event
 * loop ahead of such a task while frames wait in the queue.
 */
public final class WriteGate {
    /** Bytes queued for the drain task above which a writer waits (as above Netty's high mark). */
    static final long QUEUE_HIGH = 512 * 1024;

    private final Channel channel;
    private final Queue<Object> pending = new ConcurrentLinkedQueue<>();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drain;
    private volatile Throwable failure;

    /** Writers in {@link #awaitWritable()}; written under this object's lock. */
    private volatile int waiters;

    private final ChannelFutureListener onWritten =
            f -> {
                if (!f.isSuccess() && failure == null) {
                    failure = f.cause();
                }
            };

    public WriteGate(Channel channel) {
        this.channel = channel;
    }

    /** Wakes writers; call on writability changes and on close. */
    public synchronized void changed() {
        notifyAll();
    }

    /**
     * Queues {@code msg} for the event loop (written and flushed with whatever else is queued),
     * then waits while the channel is not writable. Fails when the connection is closed or a
     * write on it failed; on a connection that closes meanwhile, it waits (up to 5 s) until the
     * event loop tried to write {@code msg}, so a close that lost the message is reported.
     */
    public void write(Object msg) throws IOException {
        if (!channel.isActive()) {
            ReferenceCountUtil.release(msg);
            throw new IOException("connection closed");
        }
        if (channel.eventLoop().inEventLoop()) {
            drain(); // what writer threads queued goes first
            channel.writeAndFlush(msg).addListener(onWritten);
            return; // never block an event loop
        }
        queuedBytes.addAndGet(size(msg));
        pending.add(msg);
        if (drainScheduled.compareAndSet(false, true)) {
            try {
                channel.eventLoop().execute(drainTask);
            } catch (RejectedExecutionException e) {
                discardPending();
                throw new IOException("connection closed", e);
            }
        }
        awaitWritable();
        if (!channel.isActive()) {
            awaitDrained();
        }
        Throwable f = failure;
        if (f != null) {
            throw new IOException("connection closed: " + f.getMessage(), f);
        }
    }

    /**
     * Waits until the channel is writable again (and what writers queued is below {@link
     * #QUEUE_HIGH}) or closed.
     */
    public void awaitWritable() throws IOException {
        synchronized (this) {
            waiters++; // before the check: a drain that lowers the queue after it wakes us
            try {
                while (channel.isActive()
                        && (!channel.isWritable() || queuedBytes.get() > QUEUE_HIGH)) {
                    try {
                        wait(1000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted while writing");
                    }
                }
            } finally {
                waiters--;
            }
        }
    }

    /** On the event loop: writes everything queued, then flushes once. */
    private void drain() {
        drainScheduled.set(false); // a frame queued from now on schedules another drain
        Object msg;
        long n = 0;
        boolean any = false;
        while ((msg = pending.poll()) != null) {
            n += size(msg);
            ChannelFuture f = channel.write(msg); // now counted by Netty's outbound buffer
            f.addListener(onWritten);
            any = true;
        }
        queuedBytes.addAndGet(-n);
        if (any) {
            channel.flush();
        }
        if (waiters > 0) {
            changed();
        }
    }

    private static long size(Object msg) {
        if (msg instanceof io.netty.buffer.ByteBuf b) {
            return b.readableBytes();
        }
        if (msg instanceof io.netty.buffer.ByteBufHolder h) {
            return h.content().readableBytes();
        }
        return 0;
    }

    /** After a close: waits until the event loop has tried what was queued (a closed channel fails it). */
    private void awaitDrained() {
        CountDownLatch done = new CountDownLatch(1);
        if (!Loops.run(channel, done::countDown)) {
            discardPending();
            if (failure == null) {
                failure = new IOException("event loop shut down");
            }
            return;
        }
        try {
            done.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void discardPending() {
        Object msg;
        while ((msg = pending.poll()) != null) {
            queuedBytes.addAndGet(-size(msg));
            ReferenceCountUtil.release(msg);
        }
    }
}
