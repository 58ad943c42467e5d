package io.cri4j.nri.internal.ttrpc;

import io.cri4j.nri.internal.NriProtocolException;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.mux.MuxCodec;
import io.cri4j.nri.internal.mux.MuxMessage;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ttrpc over NRI's two mux connections, as a Netty handler between {@link MuxCodec} and the role
 * (plugin or host), the same on both sides: one {@link TtrpcPeer} on mux connection 1 (the plugin
 * service) and one on mux connection 2 (the runtime service); the side that serves a service gives
 * its {@link TtrpcPeer.Service}, the other side only calls it. Bytes that are not ttrpc go up as an
 * {@link NriProtocolException}, and nothing after them is read.
 *
 * <p>It also keeps how the connection ended, for both roles: the first {@link #fail failure}
 * recorded, else, when the stream ended in the middle of a mux or ttrpc frame, the role's error for
 * that; calls still waiting fail with it when the connection closes, before the role sees {@code
 * channelInactive}. All on the channel's event loop.
 */
public final class TtrpcCodec extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(TtrpcCodec.class);

    private final Channel channel;
    private final Supplier<String> who;
    private final Function<String, Throwable> truncated;
    private final TtrpcPeer plugin;
    private final TtrpcPeer runtime;
    private volatile boolean open = true;
    private volatile Throwable failure;
    private boolean broken;
    private String truncatedMux;

    /**
     * @param channel the connection
     * @param pluginService serves the plugin service (mux connection 1) on the plugin's side, null
     *     on the runtime's
     * @param runtimeService serves the runtime service (mux connection 2) on the runtime's side,
     *     null on the plugin's
     * @param who names the connection in logs
     * @param truncated the role's error for a stream that ended inside a frame, given where it
     *     stood
     */
    public TtrpcCodec(
            Channel channel,
            TtrpcPeer.Service pluginService,
            TtrpcPeer.Service runtimeService,
            Supplier<String> who,
            Function<String, Throwable> truncated) {
        this.channel = channel;
        this.who = who;
        this.truncated = truncated;
        this.plugin =
                new TtrpcPeer(
                        "plugin service (mux connection 1)",
                        channel.eventLoop(),
                        f -> write(NriWire.PLUGIN_SERVICE_CONN, f),
                        pluginService);
        this.runtime =
                new TtrpcPeer(
                        "runtime service (mux connection 2)",
                        channel.eventLoop(),
                        f -> write(NriWire.RUNTIME_SERVICE_CONN, f),
                        runtimeService);
    }

    /** The peer on mux connection 1, the plugin service. */
    public TtrpcPeer pluginService() {
        return plugin;
    }

    /** The peer on mux connection 2, the runtime service. */
    public TtrpcPeer runtimeService() {
        return runtime;
    }

    /** Whether the connection has not yet closed. */
    public boolean open() {
        return open;
    }

    /** The first failure recorded, or null (a clean close, or not closed yet). */
    public Throwable failure() {
        return failure;
    }

    /** Records {@code t} as why the connection ends, unless a failure was recorded before. */
    public void fail(Throwable t) {
        if (failure == null) {
            failure = t;
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof MuxMessage m)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (broken) {
                return;
            }
            switch (m.connId()) {
                case NriWire.PLUGIN_SERVICE_CONN -> plugin.receive(m.bytes());
                case NriWire.RUNTIME_SERVICE_CONN -> runtime.receive(m.bytes());
                default ->
                        LOG.debug(
                                "{}: dropping {} bytes for unknown mux connection {}",
                                who.get(),
                                m.bytes().readableBytes(),
                                Integer.toUnsignedLong(m.connId()));
            }
        } catch (NriProtocolException e) {
            broken = true;
            ctx.fireExceptionCaught(e);
        } finally {
            m.bytes().release();
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof MuxCodec.Truncated t) {
            truncatedMux = t.partial();
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        open = false;
        if (failure == null) {
            String partial = truncatedMux;
            if (partial == null && !broken) {
                partial = plugin.partialFrame();
                if (partial == null) {
                    partial = runtime.partialFrame();
                }
            }
            if (partial != null) {
                failure = truncated.apply(partial);
            }
        }
        String why =
                failure == null
                        ? "connection closed"
                        : "connection closed: " + failure.getMessage();
        plugin.close(why);
        runtime.close(why);
        super.channelInactive(ctx);
    }

    private void write(int conn, byte[] frame) {
        channel.writeAndFlush(new MuxMessage(conn, Unpooled.wrappedBuffer(frame)))
                .addListener(
                        f -> {
                            if (!f.isSuccess() && open) {
                                LOG.debug("{}: write failed: {}", who.get(), f.cause().toString());
                            }
                        });
    }
}
