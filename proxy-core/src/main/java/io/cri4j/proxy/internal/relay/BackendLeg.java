package io.cri4j.proxy.internal.relay;

import io.cri4j.proxy.internal.relay.FlowControl.Half;
import io.cri4j.proxy.internal.relay.RelayConnection.Pair;
import io.grpc.Status;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * A connection to the backend (the runtime), as an HTTP/2 client, paired with one client
 * connection on its event loop. A client stream gets its backend stream here; the runtime's
 * answer goes back on the client's stream, or to the stream's {@link Capture} when the proxy
 * collects it for an intercepted call.
 *
 * <p>Its life: CONNECTING (work for it waits, {@link #run}), READY, DRAINING after the runtime's
 * GOAWAY (its streams finish, new ones go to a new connection), CLOSED when it could not connect
 * or went away: then every call on it ends with UNAVAILABLE, and the next call connects again.
 */
final class BackendLeg extends RelayLeg {
    static final int CONNECTING = 0;
    static final int READY = 1;
    static final int DRAINING = 2;
    static final int CLOSED = 3;

    int state = CONNECTING;

    /** The runtime sent HEADERS or DATA since the client's last PING went to it. */
    boolean sentSincePing;

    private Channel ch;
    private String failure;
    private int nextId = 1;

    /** Whether the proxy closes the connection (a loss is the runtime's doing otherwise). */
    private boolean closing;

    /** Work that waits for the connection. */
    private final ArrayDeque<Runnable> pending = new ArrayDeque<>();

    private final IntObjectMap<Pair> byUp = new IntObjectHashMap<>();

    BackendLeg(RelayConnection conn) {
        super(conn, false);
    }

    @Override
    boolean mustDecode(int streamId) {
        // a collected answer's trailers (its first block only if it cannot go on as it came); a
        // relayed call's blocks never: its status, when metrics are recorded, is read from the
        // bytes of the block that ends it (onHeadersRead)
        Pair p = byUp.get(streamId);
        return p != null && p.capture != null && p.capture.gotHeaders;
    }

    @Override
    public Half half(Pair p) {
        return p.upHalf;
    }

    @Override
    RelayLeg other(Pair p) {
        return conn.down;
    }

    @Override
    Pair stream(int id) {
        return byUp.get(id);
    }

    @Override
    public Iterable<Pair> streams() {
        return byUp.values();
    }

    @Override
    public void closed(Pair p) {
        byUp.remove(p.upHalf.id);
        if (state == DRAINING && byUp.isEmpty()) {
            ch.close();
        }
    }

    @Override
    String name() {
        return "backend";
    }

    @Override
    int lastPeerStream() {
        return 0;
    }

    @Override
    boolean preface(ByteBuf in) {
        return true;
    }

    // ---------------------------------------------------------------- PINGs

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
        conn.pings.fromBackend(this, data);
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) {
        conn.pings.ackFromBackend(this, data);
    }

    // ---------------------------------------------------------------- the connection's life

    void install(Channel channel) {
        ch = channel;
        ch.pipeline().addLast(this);
        ch.closeFuture().addListener(f -> lost());
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        out.preface();
        out.settings(false, FlowControl.WINDOW, RelayConnection.MAX_HEADER_LIST);
        super.channelActive(ctx);
        ready();
    }

    /**
     * Runs {@code action} now, or once connected; a CLOSED leg runs it now (the action sees the
     * failure and answers).
     */
    void run(Runnable action) {
        switch (state) {
            case READY, DRAINING -> action.run();
            case CONNECTING -> pending.add(action);
            default -> action.run(); // CLOSED: the action sees the failure and answers
        }
    }

    private void ready() {
        if (state != CONNECTING) {
            return;
        }
        state = READY;
        conn.setup.metrics().backendConnected();
        Runnable r;
        while ((r = pending.poll()) != null) {
            r.run();
        }
        out.flush();
        conn.down.out.flush();
    }

    /** The connection could not be made: what waits for it learns {@code why}. */
    void failed(String why) {
        LOG.debug("{}", why);
        conn.setup.metrics().backendConnectFailed();
        failure = why;
        state = CLOSED;
        conn.pings.forget(this);
        Runnable r;
        while ((r = pending.poll()) != null) {
            r.run();
        }
        conn.flushSoon();
    }

    /** The connection went away: every call on it ends with UNAVAILABLE. */
    private void lost() {
        if (state == CLOSED) {
            return;
        }
        if (state == READY || state == DRAINING) {
            conn.setup.metrics().backendClosed(!closing);
        }
        if (failure == null) {
            failure = "connection to the runtime " + conn.setup.backendName() + " was lost";
        }
        state = CLOSED;
        conn.draining.remove(this);
        conn.pings.forget(this);
        Pair[] pairs = byUp.values().toArray(new Pair[0]);
        byUp.clear();
        flow.dropAllPending(Arrays.asList(pairs));
        for (Pair p : pairs) {
            conn.failCaptured(p, Status.UNAVAILABLE.withDescription(failure));
        }
        Runnable r;
        while ((r = pending.poll()) != null) {
            r.run();
        }
        conn.flushSoon();
    }

    void close() {
        closing = true;
        if (ch != null) {
            ch.close();
        }
    }

    // ---------------------------------------------------------------- client streams sent on

    /** Opens the backend stream for a client stream; owns {@code block}. */
    void open(Pair p, ByteBuf block, boolean endOfStream) {
        if (state == CLOSED || state == DRAINING || nextId < 0) {
            if (state != CLOSED) {
                // went away (or ran out of ids) between the client's headers and now: a fresh
                // connection takes it
                if (conn.up == this) {
                    conn.up = null;
                }
                p.up = conn.upstream();
                p.up.run(() -> p.up.open(p, block, endOfStream));
                return;
            }
            block.release();
            conn.failCaptured(p, Status.UNAVAILABLE.withDescription(failure));
            return;
        }
        if (conn.down.byDown.get(p.down.id) != p) {
            block.release(); // the client reset it meanwhile
            return;
        }
        Half h = p.upHalf;
        h.id = nextId;
        nextId += 2;
        h.sendWindow = flow.peerInitialWindow;
        byUp.put(h.id, p);
        flow.sendHeaders(p, block, endOfStream);
    }

    /** The client's DATA ({@code bytes} of its window) on the backend stream of {@code p}. */
    void data(Pair p, ByteBuf payload, int bytes, boolean endOfStream) {
        if (p.up != this) {
            // the stream was opened on a newer connection (this one went away meanwhile)
            BackendLeg other = p.up;
            other.run(() -> other.data(p, payload, bytes, endOfStream));
            return;
        }
        if (p.upHalf.id == 0 || byUp.get(p.upHalf.id) != p) {
            payload.release();
            conn.down.flow.consumed(p, bytes);
            return;
        }
        flow.send(p, payload, endOfStream, bytes);
    }

    /** Resets the backend stream of {@code p}: the client reset it, or its answer is not wanted. */
    void reset(Pair p, long errorCode) {
        if (p.up != this) {
            // the stream was opened on a newer connection (this one went away meanwhile)
            BackendLeg other = p.up;
            other.run(() -> other.reset(p, errorCode));
            return;
        }
        if (p.upHalf.id == 0 || byUp.get(p.upHalf.id) != p) {
            return;
        }
        if (p.capture != null && !p.capture.done) {
            p.capture.release();
        }
        flow.resetNow(p, errorCode);
    }

    @Override
    void streamError(Pair p, Http2Exception e) {
        flow.resetNow(p, e.error().code());
        conn.failCaptured(
                p,
                Status.INTERNAL.withDescription(
                        "the runtime broke HTTP/2 on the stream: " + e.getMessage()));
    }

    // ---------------------------------------------------------------- the runtime's frames

    @Override
    public void onHeadersRead(
            ChannelHandlerContext c,
            int streamId,
            Http2Headers headers,
            int padding,
            boolean endOfStream) {
        sentSincePing = true;
        ByteBuf block = blocks.take();
        Pair p = byUp.get(streamId);
        if (p == null) {
            RelayConnection.release(block);
            return;
        }
        if (endOfStream) {
            flow.gotEnd(p, p.upHalf);
        }
        if (p.capture != null) {
            p.capture.headers(headers, block, endOfStream);
            return;
        }
        if (!conn.downOpen(p)) {
            RelayConnection.release(block);
            return;
        }
        if (endOfStream && p.metric != null) {
            // a block kept to relay refers to no table entry: its status is read from its bytes
            conn.callEnded(
                    p,
                    block != null
                            ? HeaderBlocks.grpcStatus(block)
                            : RelayConnection.grpcStatus(headers));
        }
        p.responseStarted = true;
        conn.down.flow.sendHeaders(p, block != null ? block : conn.encode(headers), endOfStream);
    }

    @Override
    public int onDataRead(
            ChannelHandlerContext c, int streamId, ByteBuf data, int padding, boolean endOfStream) {
        sentSincePing = true;
        int bytes = data.readableBytes() + padding;
        Pair p = byUp.get(streamId);
        if (p == null || p.upHalf.gotEnd) {
            flow.consumed(null, bytes);
            return bytes;
        }
        if (endOfStream) {
            flow.gotEnd(p, p.upHalf);
        }
        if (p.capture != null) {
            flow.consumed(p, bytes);
            p.capture.data(data, endOfStream);
            return bytes;
        }
        if (!conn.downOpen(p)) {
            flow.consumed(p, bytes);
            return bytes;
        }
        conn.down.flow.send(p, data.retain(), endOfStream, bytes);
        return bytes;
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
        Pair p = byUp.get(streamId);
        if (p == null) {
            return;
        }
        boolean answered = p.upHalf.gotEnd;
        p.upHalf.sentEnd = true; // reset by the runtime: closed, nothing goes back on it
        p.upHalf.gotEnd = true;
        flow.resetNow(p, errorCode); // writes nothing: the stream is closed
        if (p.capture != null && p.capture.done) {
            return; // the answer is complete: the proxy finishes the call
        }
        if (p.capture != null) {
            p.capture.release();
        }
        if (conn.down.byDown.get(p.down.id) != p) {
            return; // over on the client's side too
        }
        if (answered && errorCode == RelayConnection.NO_ERROR) {
            // a complete answer, and the runtime wants no more of the request: the client gets
            // the answer, then the same word
            conn.down.flow.sendResetAfter(p, RelayConnection.NO_ERROR);
            return;
        }
        // the client learns it as the runtime said it (at a deadline: CANCEL, which the client
        // reports as its deadline passing)
        conn.callEnded(p, RelayMetrics.NO_STATUS);
        conn.down.flow.resetNow(p, errorCode);
        if (p.intercepted != null) {
            p.intercepted.cancel();
        }
    }

    @Override
    public void onGoAwayRead(
            ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
        // no new streams here; the ones up to lastStreamId finish, later ones never ran
        if (state == READY) {
            state = DRAINING;
            conn.draining.add(this);
            if (conn.up == this) {
                conn.up = null;
            }
        }
        for (Pair p : byUp.values().toArray(new Pair[0])) {
            if (p.upHalf.id > lastStreamId) {
                p.upHalf.sentEnd =
                        true; // never taken by the runtime: closed, nothing goes out on it
                p.upHalf.gotEnd = true;
                flow.resetNow(p, RelayConnection.CANCEL);
                conn.failCaptured(
                        p,
                        Status.UNAVAILABLE.withDescription(
                                "the runtime "
                                        + conn.setup.backendName()
                                        + " is going away and did not take the call"));
            }
        }
        if (state == DRAINING && byUp.isEmpty()) {
            ch.close();
        }
    }
}
