package io.cri4j.streaming.internal.portforward;

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
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Port-forward over WebSocket (kubelet's handleWebSocketStreams): for the i-th port, channel 2i
 * carries data both ways and 2i+1 errors to the client; each channel starts with the port as an
 * unsigned 16-bit little-endian integer. One forwarded connection per port; the WebSocket closes
 * when all of them are done.
 */
public final class WsPortForward extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(WsPortForward.class);
    private final ServerContext ctx;
    private final String podSandboxId;
    private final List<Integer> ports;
    private final boolean base64;
    private final Runnable onDone;
    private InboundPipe[] inputs;
    private PortStreamImpl[] streams;
    private WsChannels channels;

    public WsPortForward(
            ServerContext ctx,
            String podSandboxId,
            List<Integer> ports,
            boolean base64,
            Runnable onDone) {
        this.ctx = ctx;
        this.podSandboxId = podSandboxId;
        this.ports = ports;
        this.base64 = base64;
        this.onDone = onDone;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        WriteGate gate = new WriteGate(c.channel());
        c.channel().attr(GateHolder.KEY).set(gate);
        channels = WsChannels.server(base64, gate);
        InboundCredit credit = new InboundCredit(c.channel(), 1 << 20, 256 << 10);
        int n = ports.size();
        inputs = new InboundPipe[n];
        streams = new PortStreamImpl[n];
        AtomicInteger remaining = new AtomicInteger(n);
        for (int i = 0; i < n; i++) {
            int port = ports.get(i);
            byte[] prefix = {(byte) (port & 0xFF), (byte) ((port >> 8) & 0xFF)};
            c.write(channels.encode(2 * i, prefix, 0, 2));
            c.write(channels.encode(2 * i + 1, prefix, 0, 2));
            inputs[i] = new InboundPipe(credit);
            streams[i] = new PortStreamImpl(port, inputs[i], channels.output(2 * i));
        }
        c.flush();
        for (int i = 0; i < n; i++) {
            int idx = i;
            Runnable task =
                    () -> {
                        PortStreamImpl s = streams[idx];
                        try {
                            ctx.runtime().portForward(podSandboxId, s.port(), s);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } catch (Throwable t) {
                            if (!s.isClosed()) {
                                String msg =
                                        "error forwarding port "
                                                + s.port()
                                                + " to pod "
                                                + podSandboxId
                                                + ", uid : "
                                                + (t.getMessage() == null
                                                        ? t.toString()
                                                        : t.getMessage());
                                LOG.info("{}", msg);
                                byte[] b = msg.getBytes(StandardCharsets.UTF_8);
                                try {
                                    channels.write(2 * idx + 1, b, 0, b.length);
                                } catch (IOException ignored) {
                                    // client gone
                                }
                            }
                        } finally {
                            inputs[idx].close();
                            if (remaining.decrementAndGet() == 0) {
                                Connections.finish(c.channel(), new CloseWebSocketFrame(1000, ""));
                            }
                        }
                    };
            try {
                ctx.executor().execute(task);
            } catch (RejectedExecutionException e) {
                c.close();
                return;
            }
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        try {
            if (msg instanceof PingWebSocketFrame p) {
                c.writeAndFlush(new PongWebSocketFrame(p.content().retain()));
            } else if (msg instanceof CloseWebSocketFrame) {
                for (InboundPipe in : inputs) {
                    in.finish();
                }
                c.writeAndFlush(new CloseWebSocketFrame(1000, ""))
                        .addListener(io.netty.channel.ChannelFutureListener.CLOSE);
            } else if (msg instanceof WebSocketFrame f && !(msg instanceof PongWebSocketFrame)) {
                WsChannels.Message m = channels.decode(f);
                if (m != null && m.channel() % 2 == 0 && m.channel() / 2 < inputs.length) {
                    inputs[m.channel() / 2].offer(m.data());
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
        c.channel().attr(GateHolder.KEY).get().changed();
        c.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        c.channel().attr(GateHolder.KEY).get().changed();
        for (int i = 0; i < inputs.length; i++) {
            inputs[i].abort(new IOException("connection closed"));
            streams[i].markClosed();
        }
        onDone.run();
        c.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        c.close();
    }
}
