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
 */
public final class InboundPipe extends InputStream {
    private final InboundCredit credit;
    private final ArrayDeque<ByteBuf> chunks = new ArrayDeque<>();
    private ByteBuf current;
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
     * read, or at once when the reader closed the stream or after EOF).
     */
    public void offer(ByteBuf data) {
        int n = data.readableBytes();
        if (n > 0) {
            synchronized (this) {
                if (!closed && !finished && failure == null) {
                    chunks.add(data);
                    credit.buffered(n);
                    notifyAll();
                    return;
                }
            }
        }
        data.release();
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
        if (len == 0) {
            return 0;
        }
        int n;
        synchronized (this) {
            while (true) {
                if (closed) {
                    throw new IOException("stream closed");
                }
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
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while reading");
                }
            }
            n = Math.min(len, current.readableBytes());
            current.readBytes(b, off, n);
            if (!current.isReadable()) {
                current.release();
                current = null;
            }
        }
        credit.released(n);
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

    private int dropAll() {
        int n = 0;
        if (current != null) {
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
