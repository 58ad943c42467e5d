package io.cri4j.proxy.internal.relay;

import io.cri4j.proxy.internal.relay.RelayConnection.Pair;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.DefaultHttp2FrameReader;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Flags;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP/2 connection of the relay, the client's ({@link ClientLeg}) or a backend's
 * ({@link BackendLeg}): reads frames with Netty's frame reader and handles what both legs handle
 * alike (SETTINGS, WINDOW_UPDATE, frames gRPC does not use, broken rules); writes with its
 * {@link FrameWriter}, as its {@link FlowControl} allows. What a stream's frames mean is the
 * subclass's.
 *
 * <p>A broken stream rule resets the stream ({@link #streamError}); a broken connection rule ends
 * the connection with GOAWAY naming it.
 */
abstract class RelayLeg extends ByteToMessageDecoder
        implements Http2FrameListener, FlowControl.Streams {
    /** The relay's log (one category for all its parts). */
    static final Logger LOG = LoggerFactory.getLogger(RelayConnection.class);

    final RelayConnection conn;
    final HeaderBlocks blocks;
    private final DefaultHttp2FrameReader reader;
    final FrameWriter out = new FrameWriter();
    final FlowControl flow = new FlowControl(out, this);

    /** @param decodeAll decode every header block (else only those {@link #mustDecode} names) */
    RelayLeg(RelayConnection conn, boolean decodeAll) {
        this.conn = conn;
        blocks =
                new HeaderBlocks(
                        RelayConnection.MAX_HEADER_LIST,
                        decodeAll ? null : this::mustDecode,
                        decodeAll ? this::knownPath : null,
                        conn.alloc());
        reader = new DefaultHttp2FrameReader(blocks);
    }

    /** Whether the headers of a stream must be decoded even when they can be relayed as is. */
    boolean mustDecode(int streamId) {
        return true;
    }

    /**
     * What is known of requests with this {@code :path} value (as encoded):
     * {@link RelayConnection#RELAYED}, the intercepted method, or null (not known: decode the
     * block).
     */
    Object knownPath(ByteBuf encodedPath) {
        return null;
    }

    /** The leg the bytes written here came from (gets their window back). */
    abstract RelayLeg other(Pair p);

    /** The stream of this leg with id {@code id}; null when the relay does not know it (any more). */
    abstract Pair stream(int id);

    abstract String name();

    /** Reads the client's connection preface; true once it was read (or none is due). */
    abstract boolean preface(ByteBuf in) throws Http2Exception;

    /** The last stream id the peer opened (for GOAWAY). */
    abstract int lastPeerStream();

    /** A frame of {@code p} broke a stream rule: reset the stream on both legs. */
    abstract void streamError(Pair p, Http2Exception e);

    @Override
    public void credit(Pair p, int bytes) {
        other(p).flow.consumed(p, bytes);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
        out.attach(ctx);
        super.handlerAdded(ctx);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> ignored) {
        try {
            if (!preface(in)) {
                return;
            }
            reader.readFrame(ctx, in, this);
        } catch (Http2Exception.StreamException e) {
            blocks.drop();
            Pair p = stream(e.streamId());
            if (p != null) {
                streamError(p, e);
            } else {
                out.rst(e.streamId(), e.error().code());
            }
        } catch (Http2Exception e) {
            blocks.drop();
            LOG.debug("{} connection: {}", name(), e.getMessage());
            out.goAway(lastPeerStream(), e.error(), e.getMessage() == null ? "" : e.getMessage());
            out.flush();
            in.skipBytes(in.readableBytes());
            ctx.close();
        } catch (RuntimeException e) {
            blocks.drop();
            LOG.warn("{} connection failed", name(), e);
            in.skipBytes(in.readableBytes());
            ctx.close();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        super.channelReadComplete(ctx);
        conn.flushAll(this);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug("{} connection failed: {}", name(), cause.toString());
        ctx.close();
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        out.detach();
        blocks.drop();
        reader.close();
    }

    @Override
    public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings) {
        Long tableSize = settings.headerTableSize();
        if (tableSize != null) {
            out.oweSizeUpdate = true; // the next block starts with "size 0", within any maximum
        }
        Integer maxFrame = settings.maxFrameSize();
        if (maxFrame != null) {
            out.peerMaxFrame = maxFrame;
        }
        Integer initial = settings.initialWindowSize();
        if (initial != null) {
            flow.initialWindow(initial);
        }
        out.settingsAck();
    }

    @Override
    public void onSettingsAckRead(ChannelHandlerContext ctx) {
        // our settings are in force: nothing to change here (the decoder accepts both tables)
    }

    @Override
    public void onWindowUpdateRead(ChannelHandlerContext ctx, int streamId, int increment) {
        if (streamId == 0) {
            flow.connectionWindowUpdate(increment);
            return;
        }
        Pair p = stream(streamId);
        if (p != null) {
            flow.streamWindowUpdate(p, increment);
        }
    }

    @Override
    public void onPriorityRead(
            ChannelHandlerContext ctx,
            int streamId,
            int streamDependency,
            short weight,
            boolean exclusive) {
        // gRPC uses no priorities
    }

    @Override
    public void onPushPromiseRead(
            ChannelHandlerContext ctx,
            int streamId,
            int promisedStreamId,
            Http2Headers headers,
            int padding)
            throws Http2Exception {
        blocks.drop();
        throw Http2Exception.connectionError(
                Http2Error.PROTOCOL_ERROR, "push is not enabled on this connection");
    }

    @Override
    public void onUnknownFrame(
            ChannelHandlerContext ctx,
            byte frameType,
            int streamId,
            Http2Flags flags,
            ByteBuf payload) {
        // extension frames are ignored (RFC 9113 section 5.5)
    }

    @Override
    public void onHeadersRead(
            ChannelHandlerContext ctx,
            int streamId,
            Http2Headers headers,
            int streamDependency,
            short weight,
            boolean exclusive,
            int padding,
            boolean endOfStream)
            throws Http2Exception {
        onHeadersRead(ctx, streamId, headers, padding, endOfStream);
    }
}
