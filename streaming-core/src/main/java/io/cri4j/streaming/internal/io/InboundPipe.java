package io.cri4j.streaming.internal.io;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;

/**
 * A blocking {@link InputStream} fed from a network event loop. The event loop calls
 * {@link #offer}, {@link #finish} (EOF) or {@link #abort}; a reader thread reads. Closing the
 * stream discards what is queued. Queued bytes are accounted in an {@link InboundCredit}.
 * Buffers offered are queued as they are (no copy) and released once read or discarded.
 *
 * <p>Two costs of the hand-off are kept off the event loop: the reader copies out of a buffer
 * without holding the pipe's lock (so an offer never waits for a copy), and an offer with a
 * {@link ReaderWakeups} batch wakes a waiting reader only when the batch is flushed, once per
 * socket read instead of once per frame.
 */
public final class InboundPipe extends InputStream {
    private final InboundCredit credit;
    private final ArrayDeque<ByteBuf> chunks = new ArrayDeque<>();

    /** The chunk being read; owned by the reader while {@link #reading}. */
    private ByteBuf current;

    /** A reader is copying out of {@link #current} without the lock. */
    private boolean reading;

    private int waiters;
    private boolean wakePending;
    private boolean finished;
    private boolean closed;
    private IOException failure;

    public InboundPipe(InboundCredit credit) {
        this.credit = credit;
    }

    /** Queues bytes; dropped when the reader closed the stream or after EOF. */
    public void offer(byte[] data) {
        if (data.length > 0) {
            offer(Unpooled.wrappedBuffer(data));
        }
    }

    /**
     * Queues the readable bytes of {@code data} and takes ownership of it (it is released once
     * read, or at once when the reader closed the stream or after EOF). Wakes a waiting reader now.
     */
    public void offer(ByteBuf data) {
        offer(data, null);
    }

    /**
     * Like {@link #offer(ByteBuf)}, but a waiting reader is woken only when {@code wakeups} is
     * flushed (null: now). The caller must flush {@code wakeups} when its socket read is complete.
     */
    public void offer(ByteBuf data, ReaderWakeups wakeups) {
        int n = data.readableBytes();
        if (n > 0) {
            boolean defer = false;
            synchronized (this) {
                if (!closed && !finished && failure == null) {
                    chunks.add(data);
                    credit.buffered(n);
                    if (waiters > 0) {
                        if (wakeups == null) {
                            notifyAll();
                        } else if (!wakePending) {
                            wakePending = true;
                            defer = true;
                        }
                    }
                    data = null;
                }
            }
            if (defer) {
                wakeups.add(this);
            }
        }
        if (data != null) {
            data.release();
        }
    }

    /** Wakes a reader for bytes offered with a deferred wake-up (called by {@link ReaderWakeups}). */
    synchronized void wake() {
        wakePending = false;
        notifyAll();
    }

    /** Marks the end of the data: reads return -1 once the queue is drained. */
    public synchronized void finish() {
        finished = true;
        notifyAll();
    }

    /** Fails pending and future reads (stream reset or connection lost); queued bytes are dropped. */
    public void abort(IOException cause) {
        int dropped;
        synchronized (this) {
            if (failure != null || closed) {
                return;
            }
            failure = cause;
            dropped = dropAll();
            notifyAll();
        }
        credit.released(dropped);
    }

    /** Whether EOF was signalled by the peer. */
    public synchronized boolean isFinished() {
        return finished;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        ByteBuf c;
        synchronized (this) {
            while (true) {
                if (closed) {
                    throw new IOException("stream closed");
                }
                if (!reading) {
                    if (current == null) {
                        current = chunks.poll();
                    }
                    if (current != null) {
                        break;
                    }
                    if (failure != null) {
                        throw new IOException(failure.getMessage(), failure);
                    }
                    if (finished) {
                        return -1;
                    }
                } // else another reader copies; wait for it
                waiters++;
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while reading");
                } finally {
                    waiters--;
                }
            }
            reading = true;
            c = current;
        }
        int n = 0;
        try {
            n = Math.min(len, c.readableBytes());
            c.readBytes(b, off, n); // without the lock: offers go on meanwhile
        } finally {
            int dropped = 0;
            synchronized (this) {
                reading = false;
                if (!c.isReadable() || closed || failure != null) {
                    dropped = c.readableBytes(); // a close or abort during the copy left it to us
                    c.release();
                    current = null;
                }
                if (waiters > 0) {
                    notifyAll(); // another reader, or one that waits for a close to finish
                }
            }
            credit.released(n + dropped);
        }
        return n;
    }

    @Override
    public synchronized int available() {
        int n = current == null ? 0 : current.readableBytes();
        for (ByteBuf c : chunks) {
            n += c.readableBytes();
        }
        return n;
    }

    @Override
    public void close() {
        int dropped;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            dropped = dropAll();
            notifyAll();
        }
        credit.released(dropped);
    }

    /** Drops the queue, and the current chunk unless a reader is copying from it (it drops it then). */
    private int dropAll() {
        int n = 0;
        if (current != null && !reading) {
            n += current.readableBytes();
            current.release();
            current = null;
        }
        ByteBuf c;
        while ((c = chunks.poll()) != null) {
            n += c.readableBytes();
            c.release();
        }
        return n;
    }
}
