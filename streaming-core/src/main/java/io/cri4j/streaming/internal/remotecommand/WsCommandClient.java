package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingException;
import io.cri4j.streaming.TerminalSize;
import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.io.InboundCredit;
import io.cri4j.streaming.internal.io.InboundPipe;
import io.cri4j.streaming.internal.io.ReaderWakeups;
import io.cri4j.streaming.internal.io.WriteGate;
import io.cri4j.streaming.internal.websocket.WsChannels;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * remotecommand client over WebSocket ({@code v5.channel.k8s.io} or {@code v4.channel.k8s.io},
 * binary): stdin 0, stdout 1, stderr 2, status 3, resize 4; v5 closes stdin with {@code [255, 0]}.
 */
public final class WsCommandClient extends ChannelInboundHandlerAdapter implements RemoteCommand {
    private final Channel channel;
    private final String protocol;
    private final int version;
    private final WriteGate gate;
    private final WsChannels channels;
    private final InboundPipe stdout;
    private final InboundPipe stderr;
    private final ReaderWakeups wakeups = new ReaderWakeups();
    private final CommandOptions options;
    private final ByteArrayOutputStream status = new ByteArrayOutputStream();
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();
    private volatile boolean stdinClosed;

    public WsCommandClient(Channel channel, String protocol, CommandOptions options) {
        this.channel = channel;
        this.protocol = protocol;
        this.version = Protocols.version(protocol);
        this.options = options;
        this.gate = new WriteGate(channel);
        this.channels = WsChannels.client(gate);
        InboundCredit credit = new InboundCredit(channel, 1 << 20, 256 << 10);
        this.stdout = new InboundPipe(credit);
        this.stderr = new InboundPipe(credit);
        if (!options.stdout()) {
            stdout.finish();
        }
        if (!options.stderr()) {
            stderr.finish();
        }
    }

    /**
     * The handler to put before Netty's frame decoder of an exec session, splitting off stdout
     * and stderr ({@code maxPayload}: the decoder's largest frame payload).
     */
    public static io.netty.channel.ChannelHandler channelSplitter(long maxPayload) {
        return new WsChannelSplitter(maxPayload);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof WsChannelSplitter.ChannelData d) {
                // stdout/stderr split off before Netty's decoder: queued without a copy
                (d.channel() == 1 ? stdout : stderr).offer(d.content().retain(), wakeups);
            } else if (msg instanceof PingWebSocketFrame p) {
                ctx.writeAndFlush(new PongWebSocketFrame(p.content().retain()));
            } else if (msg instanceof CloseWebSocketFrame) {
                end();
                ctx.close();
            } else if (msg instanceof BinaryWebSocketFrame f
                    && f.content().readableBytes() > 1
                    && (f.content().getUnsignedByte(f.content().readerIndex()) == 1
                            || f.content().getUnsignedByte(f.content().readerIndex()) == 2)) {
                // stdout/stderr data: queued without a copy (the pipe releases the slice), the
                // reader woken when the socket read completes
                ByteBuf c = f.content();
                InboundPipe target = c.readUnsignedByte() == 1 ? stdout : stderr;
                target.offer(c.readRetainedSlice(c.readableBytes()), wakeups);
            } else if (msg instanceof WebSocketFrame f && !(msg instanceof PongWebSocketFrame)) {
                WsChannels.Message m = channels.decode(f);
                if (m == null) {
                    return;
                }
                switch (m.channel()) {
                    case 1 -> stdout.offer(m.data());
                    case 2 -> stderr.offer(m.data());
                    case 3 -> status.write(m.data(), 0, m.data().length);
                    default -> {
                        // unknown channel: discarded, as client-go does
                    }
                }
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        wakeups.flush();
        ctx.fireChannelReadComplete();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        wakeups.flush();
    }

    private void end() {
        wakeups.flush();
        stdout.finish();
        stderr.finish();
        try {
            exit.complete(ExitStatus.decode(status.toString(StandardCharsets.UTF_8), version));
        } catch (StreamingException e) {
            exit.completeExceptionally(e);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        gate.changed();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        gate.changed();
        end();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        exit.completeExceptionally(
                new StreamingException("connection failed: " + cause.getMessage(), cause));
        stdout.abort(new IOException(cause));
        stderr.abort(new IOException(cause));
        ctx.close();
    }

    @Override
    public String protocol() {
        return protocol;
    }

    @Override
    public OutputStream stdin() {
        if (!options.stdin()) {
            return OutputStream.nullOutputStream();
        }
        OutputStream raw = channels.output(0);
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                raw.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                raw.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
                if (stdinClosed) {
                    return;
                }
                stdinClosed = true;
                raw.close();
                if (version >= 5) {
                    gate.write(
                            new BinaryWebSocketFrame(
                                    Unpooled.wrappedBuffer(
                                            new byte[] {(byte) WsChannels.CLOSE_SIGNAL, 0})));
                }
            }
        };
    }

    @Override
    public InputStream stdout() {
        return stdout;
    }

    @Override
    public InputStream stderr() {
        return stderr;
    }

    @Override
    public void resize(TerminalSize size) throws IOException {
        if (!options.tty()) {
            throw new IOException("not a TTY session");
        }
        byte[] b = ResizeDecoder.message(size);
        channels.write(4, b, 0, b.length);
    }

    @Override
    public CompletableFuture<Integer> exitCode() {
        return exit;
    }

    @Override
    public void close() {
        channel.close();
    }
}
