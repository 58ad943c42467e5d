package io.cri4j.streaming.internal.websocket;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.util.ReferenceCountUtil;

/**
 * Carries a byte stream in binary WebSocket messages, as client-go's TunnelingConnection does for
 * {@code SPDY/3.1+portforward.k8s.io}: inbound message payloads become bytes for the SPDY codec,
 * outbound bytes become one binary message per write.
 */
public final class WsTunnelBridge extends ChannelDuplexHandler {
    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        if (msg instanceof BinaryWebSocketFrame f) {
            c.fireChannelRead(f.content());
            return;
        }
        try {
            if (msg instanceof PingWebSocketFrame p) {
                c.writeAndFlush(new PongWebSocketFrame(p.content().retain()));
            } else if (msg instanceof CloseWebSocketFrame) {
                c.writeAndFlush(new CloseWebSocketFrame(1000, ""))
                        .addListener(ChannelFutureListener.CLOSE);
            } else if (msg instanceof WebSocketFrame && !(msg instanceof PongWebSocketFrame)) {
                // Text or other data messages are a protocol error for the tunnel.
                c.writeAndFlush(new CloseWebSocketFrame(1002, "invalid message type received"))
                        .addListener(ChannelFutureListener.CLOSE);
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void write(ChannelHandlerContext c, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf b) {
            c.write(new BinaryWebSocketFrame(b), promise);
            return;
        }
        c.write(msg, promise);
    }
}
