package io.cri4j.proxy.internal.relay;

import io.cri4j.proxy.internal.relay.RelayConnection.Pair;
import io.netty.buffer.ByteBuf;
import java.util.ArrayDeque;

/**
 * One relay leg's flow control (RFC 9113 section 6.9), both ways.
 *
 * <p>Out: what the peer lets the relay send, per stream and for the connection. A stream's DATA
 * goes out at once while its windows allow, split to the peer's frame size; the rest waits on
 * the stream, with the header block or reset that must follow it, until WINDOW_UPDATE or new
 * SETTINGS open the windows. A stream held up by the connection window waits in line
 * ({@link #drainBlocked}). Every relayed DATA payload carries a credit: the bytes it took from the
 * other leg's windows, given back there once it is written here (or dropped), so a slow reader
 * on one side slows the writer on the other, and nothing piles up in the proxy.
 *
 * <p>In: what the relay lets the peer send. Bytes read and taken ({@link #consumed}) are given
 * back in WINDOW_UPDATEs of at least half the window, as gRPC does.
 */
final class FlowControl {
    /** Flow-control windows the proxy gives each peer (stream and connection): grpc-java's. */
    static final int WINDOW = 1 << 20;

    /** Every window before SETTINGS or WINDOW_UPDATE change it. */
    static final int DEFAULT_WINDOW = 65_535;

    private static final int MAX_WINDOW = Integer.MAX_VALUE;

    /** What the flow control needs of its leg. */
    interface Streams {
        /** This leg's side of stream {@code p}. */
        Half half(Pair p);

        /** {@code bytes} read on the other leg for stream {@code p} were written here: credit them. */
        void credit(Pair p, int bytes);

        /** Stream {@code p} ended both ways on this leg: forget it. */
        void closed(Pair p);

        /** Every open stream of this leg. */
        Iterable<Pair> streams();
    }

    /** One leg's side of a stream: its id there, windows, and the writes waiting for window. */
    static final class Half {
        int id;

        /** What the peer lets us send on this stream. */
        int sendWindow;

        /** Bytes taken from the peer on this stream and not yet given back. */
        int unacked;

        /** Writes waiting for flow-control window (DATA, and what must follow it). */
        ArrayDeque<Out> pending;

        /** Waits in the leg's line for connection window. */
        boolean blocked;

        /** No more writes are accepted (END_STREAM or RST_STREAM written or queued). */
        boolean ending;

        /** END_STREAM or RST_STREAM written. */
        boolean sentEnd;

        /** The peer sent END_STREAM or RST_STREAM. */
        boolean gotEnd;

        boolean idle() {
            return pending == null || pending.isEmpty();
        }
    }

    /** A write waiting for window: a DATA payload, a header block, or a reset. */
    private static final class Out {
        final byte type;
        final ByteBuf buf;
        final boolean end;
        final long code;

        /** Window to give back on the other leg once written. */
        int credit;

        Out(byte type, ByteBuf buf, boolean end, int credit, long code) {
            this.type = type;
            this.buf = buf;
            this.end = end;
            this.credit = credit;
            this.code = code;
        }
    }

    private final FrameWriter out;
    private final Streams streams;

    /** The peer's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window. */
    int peerInitialWindow = DEFAULT_WINDOW;

    /** What the peer lets us send on the connection. */
    int connWindow = DEFAULT_WINDOW;

    /** Bytes taken from the peer on the connection and not yet given back. */
    private int connUnacked;

    /** Streams with DATA waiting for connection window, in the order they ran out. */
    private final ArrayDeque<Pair> blocked = new ArrayDeque<>();

    FlowControl(FrameWriter out, Streams streams) {
        this.out = out;
        this.streams = streams;
    }

    // ---------------------------------------------------------------- writes

    /**
     * Writes DATA on stream {@code p} as its windows allow, the rest when they open;
     * {@code credit} bytes go back to the other leg once written.
     */
    void send(Pair p, ByteBuf data, boolean end, int credit) {
        Half h = streams.half(p);
        if (h.ending) {
            data.release();
            streams.credit(p, credit);
            return;
        }
        if (end) {
            h.ending = true;
        }
        int n = data.readableBytes();
        if (h.idle() && n <= h.sendWindow && n <= connWindow && n <= out.peerMaxFrame) {
            h.sendWindow -= n;
            connWindow -= n;
            out.data(h.id, data, end);
            if (end) {
                sentEnd(p, h);
            }
            streams.credit(p, credit);
            return;
        }
        enqueue(h, new Out(FrameWriter.DATA, data, end, credit, 0));
        drain(p);
    }

    /** Writes a header block on stream {@code p}, behind any DATA waiting for window. */
    void sendHeaders(Pair p, ByteBuf block, boolean end) {
        Half h = streams.half(p);
        if (h.ending) {
            block.release();
            return;
        }
        if (end) {
            h.ending = true;
        }
        if (h.idle()) {
            out.headers(h.id, block, end);
            if (end) {
                sentEnd(p, h);
            }
            return;
        }
        enqueue(h, new Out(FrameWriter.HEADERS, block, end, 0, 0));
    }

    /** Resets stream {@code p} behind what is queued on it (a graceful NO_ERROR end). */
    void sendResetAfter(Pair p, long code) {
        Half h = streams.half(p);
        if (h.sentEnd && h.gotEnd) {
            return;
        }
        h.ending = true;
        if (h.idle()) {
            out.rst(h.id, code);
            h.gotEnd = true;
            sentEnd(p, h);
            return;
        }
        enqueue(h, new Out(FrameWriter.RST_STREAM, null, true, 0, code));
    }

    /**
     * Resets stream {@code p} now: what waits on it is dropped (its credit given back), and
     * RST_STREAM goes out unless the stream is closed here (ended both ways, reset either way) or
     * never opened. A stream whose END_STREAM went out and whose answer is still coming (every
     * unary call once its request is sent) is half-closed, not closed: the reset goes out, so a
     * client's cancel or deadline reaches the peer.
     */
    void resetNow(Pair p, long code) {
        Half h = streams.half(p);
        dropPending(p, h);
        if (h.id != 0 && !(h.sentEnd && h.gotEnd)) {
            out.rst(h.id, code);
        }
        h.ending = true;
        h.gotEnd = true;
        sentEnd(p, h);
    }

    private static void enqueue(Half h, Out o) {
        if (h.pending == null) {
            h.pending = new ArrayDeque<>(2);
        }
        h.pending.add(o);
    }

    /** Writes what waits on stream {@code p} as far as the windows allow. */
    void drain(Pair p) {
        Half h = streams.half(p);
        ArrayDeque<Out> q = h.pending;
        while (q != null && !q.isEmpty()) {
            Out o = q.peek();
            if (o.type == FrameWriter.DATA) {
                int n = o.buf.readableBytes();
                int allowed = Math.min(Math.min(h.sendWindow, connWindow), out.peerMaxFrame);
                if (n > 0 && allowed <= 0) {
                    if (!h.blocked) {
                        h.blocked = true;
                        blocked.add(p);
                    }
                    return;
                }
                if (n <= allowed || n == 0) {
                    q.poll();
                    h.sendWindow -= n;
                    connWindow -= n;
                    out.data(h.id, o.buf, o.end);
                    streams.credit(p, o.credit);
                    if (o.end) {
                        sentEnd(p, h);
                    }
                } else {
                    h.sendWindow -= allowed;
                    connWindow -= allowed;
                    out.data(h.id, o.buf.readRetainedSlice(allowed), false);
                    int c = Math.min(o.credit, allowed);
                    o.credit -= c;
                    streams.credit(p, c);
                }
            } else {
                q.poll();
                if (o.type == FrameWriter.HEADERS) {
                    out.headers(h.id, o.buf, o.end);
                } else {
                    out.rst(h.id, o.code);
                    h.gotEnd = true;
                }
                if (o.end) {
                    sentEnd(p, h);
                }
            }
        }
    }

    private void dropPending(Pair p, Half h) {
        if (h.pending == null) {
            return;
        }
        Out o;
        while ((o = h.pending.poll()) != null) {
            if (o.buf != null) {
                o.buf.release();
            }
            if (o.credit > 0) {
                streams.credit(p, o.credit);
            }
        }
    }

    /** Drops what waits on every stream of {@code pairs} (the connection is gone). */
    void dropAllPending(Iterable<Pair> pairs) {
        for (Pair p : pairs) {
            dropPending(p, streams.half(p));
        }
        blocked.clear();
    }

    private void sentEnd(Pair p, Half h) {
        h.sentEnd = true;
        if (h.gotEnd) {
            streams.closed(p);
        }
    }

    /** The peer ended its side of stream {@code p} (END_STREAM). */
    void gotEnd(Pair p, Half h) {
        h.gotEnd = true;
        if (h.sentEnd) {
            streams.closed(p);
        }
    }

    // ---------------------------------------------------------------- windows opened by the peer

    /** The peer's WINDOW_UPDATE on the connection. */
    void connectionWindowUpdate(int increment) {
        connWindow = (int) Math.min(MAX_WINDOW, (long) connWindow + increment);
        drainBlocked();
    }

    /** The peer's WINDOW_UPDATE on stream {@code p}. */
    void streamWindowUpdate(Pair p, int increment) {
        Half h = streams.half(p);
        h.sendWindow = (int) Math.min(MAX_WINDOW, (long) h.sendWindow + increment);
        drain(p);
    }

    /** The peer's SETTINGS_INITIAL_WINDOW_SIZE: every open stream's window moves by the change. */
    void initialWindow(int initial) {
        int delta = initial - peerInitialWindow;
        peerInitialWindow = initial;
        if (delta != 0) {
            for (Pair p : streams.streams()) {
                Half h = streams.half(p);
                h.sendWindow = (int) Math.min(MAX_WINDOW, (long) h.sendWindow + delta);
            }
            if (delta > 0) {
                drainBlocked();
            }
        }
    }

    /** Writes on the streams waiting for connection window, in turn, while there is some. */
    private void drainBlocked() {
        for (int i = blocked.size(); i > 0 && connWindow > 0; i--) {
            Pair p = blocked.poll();
            streams.half(p).blocked = false;
            drain(p);
        }
    }

    // ---------------------------------------------------------------- windows given back

    /**
     * {@code bytes} read on stream {@code p} (null: on no stream the relay still knows) were taken
     * (written on the other leg, or kept by the proxy): give the peer its window back, in steps of
     * half the window like gRPC.
     */
    void consumed(Pair p, int bytes) {
        if (bytes <= 0) {
            return;
        }
        connUnacked += bytes;
        if (connUnacked >= WINDOW / 2) {
            out.windowUpdate(0, connUnacked);
            connUnacked = 0;
        }
        Half h = p == null ? null : streams.half(p);
        if (h != null && h.id != 0 && !h.gotEnd) {
            h.unacked += bytes;
            if (h.unacked >= WINDOW / 2) {
                out.windowUpdate(h.id, h.unacked);
                h.unacked = 0;
            }
        }
    }
}
