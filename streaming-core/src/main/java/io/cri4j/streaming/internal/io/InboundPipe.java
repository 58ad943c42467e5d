package io.cri4j.streaming.internal.io;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;

/**
 * A blocking {@link InputStream} fed from a network event loop. The event loop calls
 * {@link #offer}, {@link #finish} (EOF) or {@link #abort}; a reader thread reads. Closing the
 * stream discards what is queued. Queued bytes are accounted in an {@link InboundCredit}.
 */
public final class InboundPipe extends InputStream {
    private final InboundCredit credit;
    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    private byte[] current;
    private int pos;
    private boolean finished;
    private boolean closed;
    private IOException failure;

    public InboundPipe(InboundCredit credit) {
        this.credit = credit;
    }

    /** Queues bytes; dropped when the reader closed the stream or after EOF. */
    public void offer(byte[] data) {
        if (data.length == 0) {
            return;
        }
        synchronized (this) {
            if (!closed && !finished && failure == null) {
                chunks.add(data);
                credit.buffered(data.length);
                notifyAll();
                return;
            }
        }
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
                    pos = 0;
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
            n = Math.min(len, current.length - pos);
            System.arraycopy(current, pos, b, off, n);
            pos += n;
            if (pos == current.length) {
                current = null;
            }
        }
        credit.released(n);
        return n;
    }

    @Override
    public synchronized int available() {
        int n = current == null ? 0 : current.length - pos;
        for (byte[] c : chunks) {
            n += c.length;
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
        int n = current == null ? 0 : current.length - pos;
        current = null;
        for (byte[] c : chunks) {
            n += c.length;
        }
        chunks.clear();
        return n;
    }
}
