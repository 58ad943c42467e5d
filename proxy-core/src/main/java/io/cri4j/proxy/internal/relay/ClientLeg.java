package io.cri4j.proxy.internal.relay;

import io.cri4j.proxy.internal.interception.InterceptedService;
import io.cri4j.proxy.internal.interception.InterceptedStream;
import io.cri4j.proxy.internal.relay.FlowControl.Half;
import io.cri4j.proxy.internal.relay.RelayConnection.Pair;
import io.grpc.MethodDescriptor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * The client leg: kubelet's connection to the proxy, as an HTTP/2 server. A request opens a
 * {@link Pair}: relayed to the backend leg (its header block as it came), or answered by an
 * {@link InterceptedStream} when an interceptor wants its method. The client's DATA, resets and
 * PINGs go where its stream or the {@link PingRelay} says.
 *
 * <p>Connection rules, as at containerd (grpc-go): HEADERS that would open a stream on an even
 * id, or on an id not above every earlier one, end the connection with GOAWAY PROTOCOL_ERROR; a
 * flood of PINGs ({@link PingPolicy}) ends it with GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
 */
final class ClientLeg extends RelayLeg {
    /** Every stream of the client connection that is being relayed or answered, by its id. */
    final IntObjectMap<Pair> byDown = new IntObjectHashMap<>();

    /** {@code :path} values as this client encodes them: {@code RELAYED} or the method. */
    private final Map<ByteBuffer, Object> knownPaths = new HashMap<>();

    private final PingPolicy pingPolicy = new PingPolicy();
    private int prefaceRead;
    private int lastStream;

    ClientLeg(RelayConnection conn) {
        super(conn, true);
    }

    @Override
    public Half half(Pair p) {
        return p.down;
    }

    @Override
    RelayLeg other(Pair p) {
        return p.up != null ? p.up : this;
    }

    @Override
    Pair stream(int id) {
        return byDown.get(id);
    }

    @Override
    public Iterable<Pair> streams() {
        return byDown.values();
    }

    @Override
    public void closed(Pair p) {
        byDown.remove(p.down.id);
        RelayConnection.release(p.requestBlock);
        p.requestBlock = null;
    }

    @Override
    String name() {
        return "client";
    }

    @Override
    int lastPeerStream() {
        return lastStream;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        out.settings(true, FlowControl.WINDOW, RelayConnection.MAX_HEADER_LIST);
        out.flush();
        super.channelActive(ctx);
    }

    @Override
    boolean preface(ByteBuf in) throws Http2Exception {
        byte[] preface = FrameWriter.PREFACE;
        while (prefaceRead < preface.length) {
            if (!in.isReadable()) {
                return false;
            }
            if (in.readByte() != preface[prefaceRead++]) {
                throw Http2Exception.connectionError(
                        Http2Error.PROTOCOL_ERROR, "not an HTTP/2 connection preface");
            }
        }
        return true;
    }

    @Override
    void streamError(Pair p, Http2Exception e) {
        resetFromClient(p, e.error().code());
        out.rst(p.down.id, e.error().code());
    }

    // ---------------------------------------------------------------- PINGs

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
        conn.pings.fromClient(data);
        // judged after it was answered, as grpc-go does
        boolean answered = out.answeredSincePing;
        out.answeredSincePing = false;
        if (pingPolicy.tooMany(System.nanoTime(), answered, byDown.isEmpty())) {
            LOG.debug("client connection: too many PINGs; GOAWAY ENHANCE_YOUR_CALM");
            out.goAway(lastStream, Http2Error.ENHANCE_YOUR_CALM, "too_many_pings");
            out.flush();
            ctx.close();
        }
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) {
        conn.pings.ackFromClient(data);
    }

    // ---------------------------------------------------------------- streams

    @Override
    public void onHeadersRead(
            ChannelHandlerContext ctx,
            int streamId,
            Http2Headers headers,
            int padding,
            boolean endOfStream)
            throws Http2Exception {
        ByteBuf block = blocks.take();
        if ((streamId & 1) == 0 || streamId <= lastStream) {
            // a new stream must have an odd id above every earlier one (RFC 9113 5.1.1), and a
            // gRPC client sends one header block per call: grpc-go (containerd) ends the
            // connection on any other HEADERS, and so does the proxy
            RelayConnection.release(block);
            throw Http2Exception.connectionError(
                    Http2Error.PROTOCOL_ERROR, "received an illegal stream id: %d", streamId);
        }
        lastStream = streamId;
        Pair p = new Pair(streamId);
        p.down.sendWindow = flow.peerInitialWindow;
        byDown.put(streamId, p);
        if (endOfStream) {
            p.down.gotEnd = true;
        }
        // no headers decoded: a method known by its encoded path, relayed or intercepted
        Object known = blocks.takeKnown();
        InterceptedService intercepted = conn.setup.intercepted();
        MethodDescriptor<?, ?> m =
                known instanceof MethodDescriptor<?, ?> k
                        ? k
                        : known != null ? null : intercepted.method(headers.path());
        RelayMetrics metrics = conn.setup.metrics();
        Object metric = null;
        if (metrics.enabled()) {
            // a relayed path is remembered with its metrics handle: found again without decoding
            metric =
                    m != null
                            ? metrics.forMethod(m)
                            : known != null && known != RelayConnection.RELAYED
                                    ? known
                                    : metrics.forPath(headers.path());
        }
        if (known == null && block != null) {
            remember(block, m != null ? m : metric != null ? metric : RelayConnection.RELAYED);
        }
        conn.callStarted(p, metric);
        if (m != null) {
            p.requestBlock = block; // sent on as it came if the chain forwards the call
            p.intercepted =
                    new InterceptedStream(
                            conn,
                            streamId,
                            m,
                            known != null ? null : headers,
                            known != null ? ByteBufUtil.getBytes(block) : null,
                            intercepted,
                            conn.setup.maxMessageSize());
            if (endOfStream) {
                p.intercepted.onEnd();
            }
            return;
        }
        ByteBuf b = block != null ? block : conn.encode(headers);
        BackendLeg u = conn.upstream();
        p.up = u;
        u.run(() -> u.open(p, b, endOfStream));
    }

    @Override
    Object knownPath(ByteBuf encodedPath) {
        return knownPaths.isEmpty() ? null : knownPaths.get(encodedPath.nioBuffer());
    }

    /**
     * Remembers how this client encodes the path of a request, and what it is ({@code RELAYED}
     * or the intercepted method); a few hundred paths at most.
     */
    private void remember(ByteBuf block, Object what) {
        long path = HeaderBlocks.pathValue(block);
        if (path >= 0 && knownPaths.size() < 512) {
            knownPaths.put(
                    ByteBuffer.wrap(ByteBufUtil.getBytes(block, (int) (path >>> 32), (int) path)),
                    what);
        }
    }

    @Override
    public int onDataRead(
            ChannelHandlerContext ctx,
            int streamId,
            ByteBuf data,
            int padding,
            boolean endOfStream) {
        int bytes = data.readableBytes() + padding;
        Pair p = byDown.get(streamId);
        if (p == null || p.down.gotEnd) {
            flow.consumed(null, bytes);
            return bytes;
        }
        if (endOfStream) {
            flow.gotEnd(p, p.down);
        }
        if (p.intercepted != null) {
            flow.consumed(p, bytes);
            p.intercepted.onData(data, endOfStream);
            return bytes;
        }
        ByteBuf payload = data.retain();
        p.up.run(() -> p.up.data(p, payload, bytes, endOfStream));
        return bytes;
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
        Pair p = byDown.get(streamId);
        if (p != null) {
            resetFromClient(p, errorCode);
        }
    }

    /** The client reset the stream (or broke its rules): it ends here and on the backend. */
    private void resetFromClient(Pair p, long errorCode) {
        conn.callEnded(p, io.grpc.Status.Code.CANCELLED.value());
        p.down.sentEnd = true; // reset by the client: closed, nothing more may be written on it
        p.down.gotEnd = true;
        flow.resetNow(p, errorCode);
        byDown.remove(p.down.id);
        if (p.intercepted != null) {
            p.intercepted.cancel();
        }
        conn.resetBackend(p, errorCode);
    }

    @Override
    public void onGoAwayRead(
            ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData) {
        // the client opens no more streams; its connection closes when it is done
    }
}
