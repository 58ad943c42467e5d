package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.internal.ServerContext;
import io.cri4j.streaming.internal.io.Connections;
import io.cri4j.streaming.internal.io.InboundCredit;
import io.cri4j.streaming.internal.io.InboundPipe;
import io.cri4j.streaming.internal.io.WriteGate;
import io.cri4j.streaming.internal.websocket.GateHolder;
import io.cri4j.streaming.internal.websocket.WsChannels;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * remotecommand over WebSocket (kubelet's createWebSocketStreams): channels stdin 0, stdout 1,
 * stderr 2, error 3, resize 4; an empty message on the lowest writable channel announces the
 * session; v4/v5 write the status as JSON on channel 3; v5 clients close stdin with
 * {@code [255, 0]}. The server ends the session with a normal WebSocket close.
 */
public final class WsRemoteCommand extends ChannelInboundHandlerAdapter {
    private static final int STDIN = 0;
    private static final int STDOUT = 1;
    private static final int STDERR = 2;
    private static final int ERROR = 3;
    private static final int RESIZE = 4;

    private final ServerContext ctx;
    private final CommandRequest req;
    private final boolean base64;
    private final int version;
    private final Runnable onDone;
    private WsChannels channels;
    private InboundPipe stdin;
    private ResizeDecoder resize;
    private final SizeQueue sizes = new SizeQueue();
    private SessionStreams streams;

    public WsRemoteCommand(
            ServerContext ctx, CommandRequest req, boolean base64, int version, Runnable onDone) {
        this.ctx = ctx;
        this.req = req;
        this.base64 = base64;
        this.version = version;
        this.onDone = onDone;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        WriteGate gate = new WriteGate(c.channel());
        c.channel().attr(GateHolder.KEY).set(gate);
        channels = WsChannels.server(base64, gate);
        InboundCredit credit = new InboundCredit(c.channel(), 1 << 20, 256 << 10);
        stdin = req.stdin() ? new InboundPipe(credit) : null;
        resize = new ResizeDecoder(sizes::add, sizes::end);
        if (!req.tty()) {
            sizes.end();
        }
        streams =
                new SessionStreams(
                        stdin,
                        req.stdout() ? channels.output(STDOUT) : null,
                        req.stderr() ? channels.output(STDERR) : null,
                        req.tty(),
                        sizes);
        int first = req.stdout() ? STDOUT : req.stderr() ? STDERR : ERROR;
        c.writeAndFlush(channels.encode(first, new byte[0], 0, 0));
        CommandRunner.start(
                ctx,
                req,
                streams,
                this::writeStatus,
                () -> Connections.finish(c.channel(), new CloseWebSocketFrame(1000, "")));
    }

    private void writeStatus(StatusJson status) throws IOException {
        String body = version >= 4 ? status.toJson() : status.toText();
        if (!body.isEmpty()) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            channels.write(ERROR, b, 0, b.length);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        try {
            if (msg instanceof PingWebSocketFrame p) {
                c.writeAndFlush(new PongWebSocketFrame(p.content().retain()));
            } else if (msg instanceof CloseWebSocketFrame) {
                if (stdin != null) {
                    stdin.finish();
                }
                c.writeAndFlush(new CloseWebSocketFrame(1000, ""))
                        .addListener(io.netty.channel.ChannelFutureListener.CLOSE);
            } else if (msg instanceof PongWebSocketFrame) {
                // nothing
            } else if (msg instanceof WebSocketFrame f) {
                WsChannels.Message m = channels.decode(f);
                if (m == null) {
                    return;
                }
                if (m.channel() == STDIN && stdin != null) {
                    stdin.offer(m.data());
                } else if (m.channel() == RESIZE) {
                    resize.feed(m.data());
                } else if (m.channel() == WsChannels.CLOSE_SIGNAL
                        && version >= 5
                        && m.data().length > 0) {
                    int closed = m.data()[0] & 0xFF;
                    if (closed == STDIN && stdin != null) {
                        stdin.finish();
                    } else if (closed == RESIZE) {
                        resize.end();
                    }
                }
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext c, Object evt) {
        if (evt instanceof IdleStateEvent) {
            c.close();
            return;
        }
        c.fireUserEventTriggered(evt);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext c) {
        WriteGate g = c.channel().attr(GateHolder.KEY).get();
        if (g != null) {
            g.changed();
        }
        c.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        WriteGate g = c.channel().attr(GateHolder.KEY).get();
        if (g != null) {
            g.changed();
        }
        if (stdin != null) {
            stdin.abort(new IOException("connection closed"));
        }
        sizes.end();
        streams.markClosed();
        onDone.run();
        c.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        c.close();
    }
}
