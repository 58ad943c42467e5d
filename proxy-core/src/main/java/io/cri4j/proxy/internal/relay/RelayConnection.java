package io.cri4j.proxy.internal.relay;

import io.cri4j.proxy.internal.interception.InterceptedService;
import io.cri4j.proxy.internal.interception.InterceptedStream;
import io.cri4j.proxy.internal.relay.FlowControl.Half;
import io.grpc.Metadata;
import io.grpc.Status;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

/**
 * One client connection of the proxy and the backend connection paired with it, both on the same
 * event loop: a thin HTTP/2 relay (RFC 9113). Frames are parsed by Netty's frame reader; streams,
 * flow control and the frames written are kept here, per leg, with no HTTP/2 connection object
 * on either side. Its parts:
 * <ul>
 *   <li>{@link ClientLeg}: the client's connection (kubelet's), and its connection rules;
 *   <li>{@link BackendLeg}: a connection to the runtime, connected again after it went away;
 *   <li>{@link RelayLeg}: what both legs do alike, each with a {@link FrameWriter} (frames, and
 *       small frames staged into one buffer per flush) and a {@link FlowControl} (windows, and
 *       writes waiting for them);
 *   <li>{@link PingRelay}: PINGs between the client and the runtime; {@link PingPolicy}: the
 *       client's PING limits;
 *   <li>{@link Capture}: a backend answer collected for an intercepted call;
 *   <li>this class: the pairing of the two, the streams ({@link Pair}), and what an
 *       {@link InterceptedStream} writes to the client.
 * </ul>
 *
 * <p>A stream of a method no interceptor wants is relayed: its header blocks go to the other leg
 * as the bytes they came as (both peers are asked for an HPACK dynamic table of size 0, so a
 * block means the same on either leg; see {@link HeaderBlocks}), its DATA frames go on
 * unchanged, and each leg's flow-control window is given back only once the other leg wrote the
 * bytes. Stream ids differ per leg. Streams of intercepted methods are answered by an
 * {@link InterceptedStream}.
 *
 * <p>The backend leg is connected when the client connects; when it cannot be reached, or dies,
 * the calls on it end at once with UNAVAILABLE and the next call connects again, so the proxy
 * serves again as soon as the backend is back, on the same client connection.
 */
public final class RelayConnection {
    /** What {@link RelayLeg#knownPath} says of a request path known to be relayed. */
    static final Object RELAYED = new Object();

    /** Largest header list either leg accepts. */
    public static final long MAX_HEADER_LIST = 1 << 20;

    static final long NO_ERROR = Http2Error.NO_ERROR.code();
    static final long CANCEL = Http2Error.CANCEL.code();

    /** Connects a backend channel on {@code loop}, set up by {@code handler}. */
    @FunctionalInterface
    interface Dialer {
        ChannelFuture connect(EventLoop loop, ChannelHandler handler);
    }

    /**
     * What every relay of a proxy shares.
     *
     * @param intercepted the methods interceptors want, and their chains
     * @param maxMessageSize the largest message of an intercepted call
     * @param backendName the backend, as errors name it
     * @param dialer connects backend legs
     */
    record Setup(
            InterceptedService intercepted,
            int maxMessageSize,
            String backendName,
            Dialer dialer,
            RelayMetrics metrics) {}

    /** One relayed or answered stream: its client half and its backend half. */
    public static final class Pair {
        /** The client leg's side. */
        final Half down = new Half();

        /** The backend leg's side (id 0 until opened there). */
        final Half upHalf = new Half();

        /** The backend leg the stream went to (null: answered by the proxy alone, so far). */
        BackendLeg up;

        InterceptedStream intercepted;

        /** An intercepted stream's request header block as it came, while it may be forwarded. */
        public ByteBuf requestBlock;

        /** Set when the backend's answer is collected for the proxy instead of relayed. */
        Capture capture;

        boolean responseStarted;

        /** The call's metrics handle (null when nothing is recorded), start, and whether it ended. */
        Object metric;

        long metricStart;
        boolean metricEnded;

        Pair(int downId) {
            down.id = downId;
        }
    }

    final Setup setup;
    private final Channel downChannel;

    /** The client leg. */
    final ClientLeg down;

    final PingRelay pings;

    /** Encodes the headers the proxy writes itself; stateless (dynamic table of size 0). */
    private final DefaultHttp2HeadersEncoder encoder =
            new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);

    /** The backend connection new streams go to; null until needed again after a failure. */
    BackendLeg up;

    /** Backend connections that said GOAWAY, while their streams finish. */
    final List<BackendLeg> draining = new ArrayList<>(1);

    private boolean flushScheduled;

    RelayConnection(Setup setup, Channel down) {
        this.setup = setup;
        this.downChannel = down;
        this.down = new ClientLeg(this);
        this.pings = new PingRelay(this, this.down.out);
        try {
            encoder.maxHeaderTableSize(0);
        } catch (Http2Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Installs the client leg on the accepted channel and connects the backend leg. */
    void install() {
        downChannel.pipeline().addLast(down);
        downChannel.closeFuture().addListener(f -> closeAll());
        up = connect();
    }

    ByteBufAllocator alloc() {
        return downChannel.alloc();
    }

    static void release(ByteBuf b) {
        if (b != null) {
            b.release();
        }
    }

    // ---------------------------------------------------------------- flushing

    void flushAll() {
        flushAll(null);
    }

    /**
     * Flushes every leg, {@code last} (the leg just read, if any) after the others: what it read
     * goes on before what it gets back itself (an ack, a window update).
     */
    void flushAll(RelayLeg last) {
        if (down != last) {
            down.out.flush();
        }
        if (up != null && up != last) {
            up.out.flush();
        }
        for (int i = 0; i < draining.size(); i++) {
            if (draining.get(i) != last) {
                draining.get(i).out.flush();
            }
        }
        if (last != null) {
            last.out.flush();
        }
    }

    /** Whether {@link #flushAll} flushes backend leg {@code u} (the current one, or draining). */
    boolean flushAllReaches(BackendLeg u) {
        return u == up || draining.contains(u);
    }

    /** Flushes both legs once the current event-loop task is done (coalesces writes). */
    void flushSoon() {
        if (!flushScheduled) {
            flushScheduled = true;
            downChannel
                    .eventLoop()
                    .execute(
                            () -> {
                                flushScheduled = false;
                                flushAll();
                            });
        }
    }

    /** A header block of {@code headers}, encoded without the dynamic table, after headroom. */
    ByteBuf encode(Http2Headers headers) {
        ByteBuf b = downChannel.alloc().buffer(HeaderBlocks.HEADROOM + 128);
        b.writerIndex(HeaderBlocks.HEADROOM).readerIndex(HeaderBlocks.HEADROOM);
        try {
            encoder.encodeHeaders(0, headers, b);
        } catch (Http2Exception e) {
            b.release();
            throw new IllegalStateException("cannot encode headers: " + e.getMessage(), e);
        }
        return b;
    }

    // ---------------------------------------------------------------- answers to the client

    /** True while the client stream is open for the proxy to write on. */
    boolean downOpen(Pair p) {
        return !p.down.ending && down.byDown.get(p.down.id) == p;
    }

    void writeDownHeaders(Pair p, Http2Headers headers, boolean endOfStream) {
        if (endOfStream && p.metric != null) {
            callEnded(p, grpcStatus(headers));
        }
        p.responseStarted = true;
        down.flow.sendHeaders(p, encode(headers), endOfStream);
    }

    /**
     * Runs {@code task} on the event loop (for interceptor chains answering from a worker). Once
     * the proxy has shut the loop down, the task is dropped: the client's connection went with it.
     */
    public void execute(Runnable task) {
        try {
            downChannel.eventLoop().execute(task);
        } catch (RejectedExecutionException e) {
            RelayLeg.LOG.debug("the proxy closed before an answer from a worker could go out");
        }
    }

    /** The event loop of both legs (also schedules the deadlines of intercepted calls). */
    public EventLoop eventLoop() {
        return downChannel.eventLoop();
    }

    public Pair pair(int downId) {
        return down.byDown.get(downId);
    }

    /** Answers an intercepted stream: headers if not yet sent, then the message. */
    public void sendMessage(Pair p, ByteBuf framed) {
        if (!downOpen(p)) {
            framed.release();
            return;
        }
        writeDownMessage(p, framed);
        flushSoon();
    }

    /** A message on a client stream, after the response headers if none went out yet. */
    private void writeDownMessage(Pair p, ByteBuf framed) {
        if (!p.responseStarted) {
            writeDownHeaders(p, GrpcWire.responseHeaders(), false);
        }
        down.flow.send(p, framed, false, 0);
    }

    /** Resets the backend stream of {@code p} with {@code code}, if it has one. */
    void resetBackend(Pair p, long code) {
        BackendLeg u = p.up;
        if (u != null) {
            u.run(() -> u.reset(p, code));
        }
    }

    /** Resets the backend stream of {@code p}, if it has one: its answer is wanted no more. */
    public void abandonBackend(Pair p) {
        resetBackend(p, CANCEL);
    }

    /**
     * Ends a client stream with {@code status} as gRPC does: trailers, or trailers-only when no
     * response headers went out yet.
     */
    public void finish(Pair p, Status status, Metadata trailers) {
        if (!downOpen(p)) {
            return;
        }
        writeDownHeaders(p, GrpcWire.trailers(status, trailers, !p.responseStarted), true);
        flushSoon();
    }

    // ---------------------------------------------------------------- metrics

    /** A call began: its handle and start, when metrics are recorded. */
    void callStarted(Pair p, Object metric) {
        if (metric != null) {
            p.metric = metric;
            p.metricStart = System.nanoTime();
            setup.metrics().started();
        }
    }

    /** A call ended (once): its status code ({@link RelayMetrics#NO_STATUS} without one). */
    void callEnded(Pair p, int code) {
        if (p.metric != null && !p.metricEnded) {
            p.metricEnded = true;
            setup.metrics()
                    .ended(
                            p.metric,
                            p.intercepted != null,
                            code,
                            System.nanoTime() - p.metricStart);
        }
    }

    private static final io.netty.util.AsciiString GRPC_STATUS =
            io.netty.util.AsciiString.cached("grpc-status");

    /** The {@code grpc-status} of decoded trailers; {@link RelayMetrics#NO_STATUS} without one. */
    static int grpcStatus(Http2Headers headers) {
        CharSequence s = headers.get(GRPC_STATUS);
        if (s == null) {
            return RelayMetrics.NO_STATUS;
        }
        try {
            return s instanceof io.netty.util.AsciiString a
                    ? a.parseInt()
                    : Integer.parseInt(s.toString());
        } catch (NumberFormatException e) {
            return RelayMetrics.NO_STATUS;
        }
    }

    // ---------------------------------------------------------------- the backend legs

    /** The backend leg for a new stream: the current one, or a new connection. */
    BackendLeg upstream() {
        if (up == null || up.state == BackendLeg.CLOSED) {
            up = connect();
        }
        return up;
    }

    private BackendLeg connect() {
        BackendLeg u = new BackendLeg(this);
        ChannelFuture connected =
                setup.dialer()
                        .connect(
                                downChannel.eventLoop(),
                                new ChannelInitializer<Channel>() {
                                    @Override
                                    protected void initChannel(Channel ch) {
                                        u.install(ch);
                                    }
                                });
        connected.addListener(
                (ChannelFutureListener)
                        f -> {
                            // success: ready() follows from channelActive, once the HTTP/2 preface
                            // is out
                            if (!f.isSuccess()) {
                                u.failed(
                                        "backend "
                                                + setup.backendName()
                                                + " is unavailable: "
                                                + f.cause().getMessage());
                            }
                        });
        return u;
    }

    private void closeAll() {
        for (Pair p : down.byDown.values().toArray(new Pair[0])) {
            callEnded(p, RelayMetrics.NO_STATUS);
            if (p.intercepted != null) {
                p.intercepted.cancel();
            }
            if (p.capture != null) {
                p.capture.release();
            }
            release(p.requestBlock);
            p.requestBlock = null;
        }
        down.flow.dropAllPending(down.byDown.values());
        down.byDown.clear();
        if (up != null) {
            up.close();
        }
        for (BackendLeg u : draining.toArray(new BackendLeg[0])) {
            u.close();
        }
    }

    // ---------------------------------------------------------------- intercepted calls

    /**
     * Sends an intercepted call's request (changed by its hooks) on the backend leg, with the
     * client's headers, and collects the backend's answer for {@code capture} (on this event loop).
     */
    public void forwardCaptured(
            Pair p, Http2Headers headers, ByteBuf framedRequest, Capture capture) {
        p.capture = capture;
        capture.owner = this;
        BackendLeg u = upstream();
        p.up = u;
        ByteBuf block = p.requestBlock != null ? p.requestBlock : encode(headers);
        p.requestBlock = null;
        u.run(
                () -> {
                    u.open(p, block, false);
                    u.data(
                            p,
                            framedRequest,
                            0,
                            true); // follows the stream if open() moved it elsewhere
                    u.out.flush();
                });
    }

    /**
     * The backend call of {@code p} failed before it was answered: a collecting call learns it
     * (and decides what the client gets); a relayed one ends the client's stream with
     * {@code status}.
     */
    void failCaptured(Pair p, Status status) {
        if (p.capture != null && !p.capture.done) {
            p.capture.fail(status);
        } else {
            finish(p, status, null);
        }
    }

    /**
     * Answers a client stream with a collected answer: its headers, {@code message}, its trailers
     * (header blocks as the backend sent them where they can go on as they are). Releases both.
     */
    public void answerCaptured(Pair p, Capture answer, ByteBuf message) {
        if (!downOpen(p) || !answer.gotHeaders) {
            release(message);
            answer.release();
            finish(
                    p,
                    Status.INTERNAL.withDescription("the runtime answered without headers"),
                    null);
            return;
        }
        if (answer.trailers != null) {
            p.responseStarted = true;
            down.flow.sendHeaders(p, answer.take(true), false);
        }
        if (message != null) {
            writeDownMessage(p, message);
        }
        Http2Headers status = answer.trailers != null ? answer.trailers : answer.headers;
        callEnded(p, status == null ? RelayMetrics.NO_STATUS : grpcStatus(status));
        p.responseStarted = true;
        down.flow.sendHeaders(p, answer.take(answer.trailers == null), true);
        answer.release();
        flushSoon();
    }
}
