package io.cri4j.streaming.internal.spdy;

import io.cri4j.streaming.internal.io.Connections;
import io.cri4j.streaming.internal.io.InboundCredit;
import io.cri4j.streaming.internal.io.InboundPipe;
import io.cri4j.streaming.internal.io.ReaderWakeups;
import io.cri4j.streaming.internal.io.WriteGate;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.spdy.DefaultSpdyGoAwayFrame;
import io.netty.handler.codec.spdy.DefaultSpdyRstStreamFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynStreamFrame;
import io.netty.handler.codec.spdy.SpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyFrameCodec;
import io.netty.handler.codec.spdy.SpdyGoAwayFrame;
import io.netty.handler.codec.spdy.SpdyHeadersFrame;
import io.netty.handler.codec.spdy.SpdyPingFrame;
import io.netty.handler.codec.spdy.SpdyProtocolException;
import io.netty.handler.codec.spdy.SpdyRstStreamFrame;
import io.netty.handler.codec.spdy.SpdySessionStatus;
import io.netty.handler.codec.spdy.SpdyStreamStatus;
import io.netty.handler.codec.spdy.SpdySynReplyFrame;
import io.netty.handler.codec.spdy.SpdySynStreamFrame;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A SPDY/3.1 session layer on Netty's frame codec that behaves like Go's spdystream (what kubectl,
 * kubelet and containerd use): no flow control (WINDOW_UPDATE and SETTINGS are ignored and never
 * sent, back-pressure comes from TCP), streams from the client have odd ids, from the server even
 * ids; SYN_REPLY accepts a stream; DATA with FIN half-closes; RST_STREAM resets; PINGs from the
 * peer are echoed; GOAWAY stops new streams. Never use Netty's SpdySessionHandler for these peers:
 * its flow control stalls a stream after 64 KiB because the Go side never grants window.
 */
public final class SpdySession extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(SpdySession.class);

    /** Receives session events, on the event loop. */
    public interface Handler {
        /** A peer-initiated stream arrived: call {@link SpdyStream#reply()} or {@link SpdyStream#reset()}. */
        void onStream(SpdyStream stream);

        /** The connection closed (all streams are gone). */
        default void onClose() {}
    }

    private final boolean server;
    private volatile Handler handler;
    private final Map<Integer, SpdyStream> streams = new ConcurrentHashMap<>();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private Channel channel;
    private WriteGate gate;
    private InboundCredit credit;
    private final ReaderWakeups wakeups = new ReaderWakeups();
    private int lastRemoteId;
    private int nextLocalId;
    private volatile boolean goneAway;
    private final java.util.concurrent.atomic.AtomicBoolean finishing =
            new java.util.concurrent.atomic.AtomicBoolean();

    public SpdySession(boolean server, Handler handler) {
        this.server = server;
        this.handler = handler;
        this.nextLocalId = server ? 2 : 1;
    }

    /**
     * A frame codec configured for kubectl-sized frames (SPDY/3.1, zlib header blocks), whose
     * inbound DATA payloads are not copied (see {@link SpdyCodec}).
     */
    public static SpdyFrameCodec newCodec() {
        return new SpdyCodec();
    }

    public void handler(Handler h) {
        this.handler = h;
    }

    /** The connection channel. */
    public Channel channel() {
        return channel;
    }

    /** Completes when the connection is closed. */
    public CompletableFuture<Void> closeFuture() {
        return closed;
    }

    /** Reader wake-ups of the current socket read (event loop only), flushed when it completes. */
    ReaderWakeups wakeups() {
        return wakeups;
    }

    ByteBufAllocator alloc() {
        return channel.alloc();
    }

    /** Number of open streams. */
    public int streamCount() {
        return streams.size();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        channel = ctx.channel();
        gate = new WriteGate(channel);
        credit = new InboundCredit(channel, 1 << 20, 256 << 10);
    }

    /** Creates a stream from our side (client use); the future completes on SYN_REPLY. */
    public SpdyStream createStream(Map<String, String> hdrs) throws IOException {
        CompletableFuture<SpdyStream> result = new CompletableFuture<>();
        Runnable r =
                () -> {
                    if (goneAway || !channel.isActive()) {
                        result.completeExceptionally(new IOException("connection closed"));
                        return;
                    }
                    int id = nextLocalId;
                    nextLocalId += 2;
                    Map<String, List<String>> h = new LinkedHashMap<>();
                    hdrs.forEach((k, v) -> h.put(k.toLowerCase(Locale.ROOT), List.of(v)));
                    SpdyStream s = new SpdyStream(this, id, h, new InboundPipe(credit));
                    streams.put(id, s);
                    DefaultSpdySynStreamFrame f = new DefaultSpdySynStreamFrame(id, 0, (byte) 0);
                    hdrs.forEach((k, v) -> f.headers().add(k.toLowerCase(Locale.ROOT), v));
                    channel.writeAndFlush(f);
                    result.complete(s);
                };
        if (!io.cri4j.streaming.internal.io.Loops.run(channel, r)) {
            throw new IOException("connection closed");
        }
        try {
            return result.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IOException(e.getCause().getMessage(), e.getCause());
        }
    }

    void send(Object frame) {
        channel.writeAndFlush(frame);
    }

    void sendBlocking(Object frame) throws IOException {
        gate.write(frame);
    }

    void remove(SpdyStream s) {
        streams.remove(s.id(), s);
        maybeFinishAfterGoAway();
    }

    void maybeRemove(SpdyStream s) {
        if (s.isLocalFinished() && s.isRemoteFinished()) {
            remove(s);
        }
    }

    /** Sends GOAWAY, resets all open streams and closes the connection once all data is out. */
    public void close() {
        Runnable r =
                () -> {
                    if (!channel.isActive()) {
                        return;
                    }
                    for (SpdyStream s : new ArrayList<>(streams.values())) {
                        s.reset();
                    }
                    goneAway = true;
                    finishWith(SpdySessionStatus.OK);
                };
        io.cri4j.streaming.internal.io.Loops.run(channel, r);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (goneAway && server && !(msg instanceof SpdyPingFrame)) {
                // After our GOAWAY we only drain; after theirs we still serve existing streams.
                if (!(msg instanceof SpdyDataFrame || msg instanceof SpdyRstStreamFrame)) {
                    return;
                }
            }
            if (msg instanceof SpdySynStreamFrame f) {
                onSynStream(ctx, f);
            } else if (msg instanceof SpdyDataFrame f) {
                SpdyStream s = streams.get(f.streamId());
                if (s != null && s.replied.isDone() && !s.isRemoteFinished()) {
                    s.onData(f.content(), f.isLast());
                }
            } else if (msg instanceof SpdySynReplyFrame f) {
                SpdyStream s = streams.get(f.streamId());
                if (s != null) {
                    s.replied.complete(null);
                    if (f.isLast()) {
                        s.onRemoteFin();
                    }
                }
            } else if (msg instanceof SpdyRstStreamFrame f) {
                SpdyStream s = streams.remove(f.streamId());
                if (s != null) {
                    s.onRemoteReset("reset by peer (" + f.status() + ")");
                }
                maybeFinishAfterGoAway();
            } else if (msg instanceof SpdyHeadersFrame f) {
                SpdyStream s = streams.get(f.streamId());
                if (s != null && f.isLast()) {
                    s.onRemoteFin();
                }
            } else if (msg instanceof SpdyPingFrame f) {
                // Echo pings initiated by the peer (their parity differs from ours), like
                // spdystream.
                boolean ours = (f.id() & 1) == (server ? 0 : 1);
                if (!ours) {
                    ctx.writeAndFlush(f);
                    msg = null; // written back, do not release
                }
            } else if (msg instanceof SpdyGoAwayFrame) {
                goneAway = true;
                maybeFinishAfterGoAway();
            }
            // SETTINGS and WINDOW_UPDATE: ignored, as spdystream does.
        } finally {
            if (msg != null) {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    private void onSynStream(ChannelHandlerContext ctx, SpdySynStreamFrame f) {
        int id = f.streamId();
        boolean validParity = (id & 1) == (server ? 1 : 0);
        if (!validParity || id <= lastRemoteId || f.isInvalid()) {
            ctx.writeAndFlush(new DefaultSpdyRstStreamFrame(id, SpdyStreamStatus.PROTOCOL_ERROR));
            return;
        }
        lastRemoteId = id;
        Map<String, List<String>> h = new LinkedHashMap<>();
        for (Map.Entry<CharSequence, CharSequence> e : f.headers()) {
            h.computeIfAbsent(
                            e.getKey().toString().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
                    .add(e.getValue().toString());
        }
        SpdyStream s = new SpdyStream(this, id, h, new InboundPipe(credit));
        streams.put(id, s);
        if (f.isUnidirectional()) {
            s.closeOutput();
        }
        if (f.isLast()) {
            s.onRemoteFin();
        }
        Handler hd = handler;
        if (hd == null) {
            s.reset();
        } else {
            hd.onStream(s);
        }
    }

    private void maybeFinishAfterGoAway() {
        if (goneAway && streams.isEmpty() && channel != null && channel.isActive()) {
            io.cri4j.streaming.internal.io.Loops.run(
                    channel,
                    () -> {
                        if (channel.isActive() && streams.isEmpty()) {
                            finishWith(SpdySessionStatus.OK);
                        }
                    });
        }
    }

    private void finishWith(SpdySessionStatus status) {
        if (finishing.compareAndSet(false, true)) {
            Connections.finish(channel, new DefaultSpdyGoAwayFrame(lastRemoteId, status));
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

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        gate.changed();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent) {
            LOG.debug("SPDY connection {} idle, closing", ctx.channel().remoteAddress());
            close();
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        wakeups.flush();
        for (SpdyStream s : new ArrayList<>(streams.values())) {
            s.onRemoteReset("connection closed");
        }
        streams.clear();
        gate.changed();
        closed.complete(null);
        Handler hd = handler;
        if (hd != null) {
            try {
                hd.onClose();
            } catch (RuntimeException e) {
                LOG.warn("SPDY close handler failed", e);
            }
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof SpdyProtocolException) {
            LOG.debug(
                    "SPDY protocol error from {}: {}",
                    ctx.channel().remoteAddress(),
                    cause.getMessage());
            goneAway = true;
            finishWith(SpdySessionStatus.PROTOCOL_ERROR);
            return;
        }
        LOG.debug("SPDY connection {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }
}
