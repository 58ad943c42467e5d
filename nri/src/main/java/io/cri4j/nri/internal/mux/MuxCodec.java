package io.cri4j.nri.internal.mux;

import io.cri4j.nri.internal.NriProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;

/**
 * NRI's multiplexer as a Netty codec, the lowest handler of an NRI connection on either side.
 * Inbound, the socket's bytes become {@link MuxMessage}s, one per piece of a mux frame's payload as
 * it arrives ({@link MuxFrameParser}); bytes that are not NRI's multiplexer go up as an {@link
 * NriProtocolException} and nothing after them is read. Outbound, a {@link MuxMessage} holding one
 * ttrpc frame is written as the mux frames a Go peer writes ({@link MuxFraming}). When the
 * connection ends in the middle of a mux frame, a {@link Truncated} event goes up before {@code
 * channelInactive}.
 */
public final class MuxCodec extends ChannelDuplexHandler {

    /**
     * The user event telling the handlers above that the stream ended inside a frame.
     *
     * @param partial where the stream stood, e.g. {@code "3 of 8 mux header bytes"}
     */
    public record Truncated(String partial) {}

    private ChannelHandlerContext ctx;
    private boolean broken;
    private final MuxFrameParser parser =
            new MuxFrameParser(
                    (conn, bytes) -> ctx.fireChannelRead(new MuxMessage(conn, bytes.retain())));

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf buf)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (!broken) {
                parser.feed(buf);
            }
        } catch (NriProtocolException e) {
            broken = true;
            ctx.fireExceptionCaught(e);
        } finally {
            buf.release();
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof MuxMessage m)) {
            ctx.write(msg, promise);
            return;
        }
        ByteBuf out;
        try {
            out = MuxFraming.frames(ctx.alloc(), m.connId(), m.bytes());
        } finally {
            m.bytes().release();
        }
        ctx.write(out, promise);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        String partial = broken ? null : parser.partial();
        if (partial != null) {
            ctx.fireUserEventTriggered(new Truncated(partial));
        }
        ctx.fireChannelInactive();
    }
}
