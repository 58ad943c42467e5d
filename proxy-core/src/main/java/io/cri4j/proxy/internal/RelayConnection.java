package io.cri4j.proxy.internal;

import io.grpc.Status;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection of the proxy and the backend connection paired with it, both on the same
 * event loop. Streams of methods no interceptor wants are relayed as HTTP/2 frames: headers are
 * decoded and encoded again by each leg's HPACK context, DATA frames are passed on as they are,
 * with end-to-end flow control (a leg's window is given back only once the other leg took the
 * bytes). Nothing of such a call is parsed as gRPC. Streams of intercepted methods are answered
 * by an {@link InterceptedStream}, which runs the interceptor chain off the event loop.
 *
 * <p>The backend leg is connected when the client connects; when it cannot be reached, or dies,
 * the calls on it end at once with UNAVAILABLE and the next call connects again, so the proxy
 * serves again as soon as the backend is back, on the same client connection.
 */
final class RelayConnection extends Http2FrameAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(RelayConnection.class);
  /** Flow-control windows of both legs (stream and connection): grpc-java's default. */
  static final int WINDOW = 1 << 20;
  /** Largest header list either leg accepts. */
  static final long MAX_HEADER_LIST = 1 << 20;

  private final ProxyTransport server;
  private final Channel down;
  private Http2ConnectionHandler downHandler;
  private ChannelHandlerContext downCtx;
  private boolean downFlush;
  /** Every stream of the client connection that is being relayed or answered, by its id. */
  private final IntObjectMap<Pair> byDown = new IntObjectHashMap<>();
  /** The backend connection new streams go to; null until needed again after a failure. */
  private Upstream up;
  private final List<Upstream> draining = new ArrayList<>(1);

  RelayConnection(ProxyTransport server, Channel down) {
    this.server = server;
    this.down = down;
  }

  /** Installs the HTTP/2 server handler on the accepted channel and connects the backend leg. */
  void install() {
    downHandler = handler(true, this);
    down.pipeline().addLast(downHandler, new ReadCompleteFlush(null));
    downCtx = down.pipeline().context(downHandler);
    openConnectionWindow(downHandler);
    downHandler.connection().addListener(new Http2ConnectionAdapter() {
      @Override
      public void onStreamClosed(Http2Stream stream) {
        Pair p = byDown.remove(stream.id());
        if (p != null && p.intercepted != null) {
          p.intercepted.cancel();
        }
      }
    });
    down.closeFuture().addListener(f -> closeAll());
    up = connect();
  }

  /**
   * The HTTP/2 handler of one leg: 1 MiB windows, no push, closing without a grace period.
   *
   * <p>Both legs switch off Netty's limits on RST_STREAM frames per window (its "rapid reset"
   * guards). They are normal traffic here: grpc-go answers a unary call as soon as it has the
   * message and then resets the stream with NO_ERROR when the client's END_STREAM (grpc-java
   * sends it in an empty DATA frame of its own) has not arrived yet, and the client then resets
   * its side with CANCEL; a busy kubelet would hit 200 in 30 s and lose its connection. The peers
   * are kubelet on a local socket and the runtime, which guards itself.
   */
  private static Http2ConnectionHandler handler(boolean server,
      io.netty.handler.codec.http2.Http2FrameListener listener) {
    Http2Settings settings = new Http2Settings().initialWindowSize(WINDOW)
        .maxHeaderListSize(MAX_HEADER_LIST);
    if (!server) {
      settings.pushEnabled(false);
    }
    return new Http2ConnectionHandlerBuilder().frameListener(listener)
        .connection(connection(server)).initialSettings(settings)
        .gracefulShutdownTimeoutMillis(0)
        .decoderEnforceMaxRstFramesPerWindow(0, 0).encoderEnforceMaxRstFramesPerWindow(0, 0)
        .validateHeaders(true).build();
  }

  /**
   * A connection whose outbound flow controller shares the window evenly between streams: gRPC
   * sends no priorities, so Netty's default weighted-fair distributor only costs bookkeeping on
   * every stream's open and close.
   */
  private static Http2Connection connection(boolean server) {
    io.netty.handler.codec.http2.DefaultHttp2Connection c =
        new io.netty.handler.codec.http2.DefaultHttp2Connection(server);
    c.remote().flowController(new io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController(
        c, new io.netty.handler.codec.http2.UniformStreamByteDistributor(c)));
    return c;
  }

  private static void openConnectionWindow(Http2ConnectionHandler h) {
    Http2Connection c = h.connection();
    try {
      int delta = WINDOW - c.local().flowController().windowSize(c.connectionStream());
      if (delta > 0) {
        c.local().flowController().incrementWindowSize(c.connectionStream(), delta);
      }
    } catch (Http2Exception e) {
      throw new IllegalStateException(e);
    }
  }

  // ---------------------------------------------------------------- client (downstream) side

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream) {
    onHeadersRead(ctx, streamId, headers, padding, endOfStream);
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int padding, boolean endOfStream) {
    Pair p = byDown.get(streamId);
    if (p == null) {
      p = new Pair(streamId);
      byDown.put(streamId, p);
      io.grpc.MethodDescriptor<?, ?> m = server.intercepted().method(headers.path());
      if (m != null) {
        p.intercepted = new InterceptedStream(this, streamId, m, headers, server.intercepted(),
            server.maxMessageSize());
        if (endOfStream) {
          p.intercepted.onEnd();
        }
        return;
      }
      Upstream u = upstream();
      p.up = u;
      Pair pair = p;
      u.run(() -> u.open(pair, headers, endOfStream));
    } else if (p.intercepted != null) {
      // a client does not send trailers on a gRPC call; the request ends here either way
      if (endOfStream) {
        p.intercepted.onEnd();
      }
    } else {
      Pair pair = p;
      pair.up.run(() -> pair.up.headers(pair, headers, endOfStream));
    }
  }

  @Override
  public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
      boolean endOfStream) {
    int bytes = data.readableBytes() + padding;
    Pair p = byDown.get(streamId);
    if (p == null) {
      return bytes;
    }
    if (p.intercepted != null) {
      p.intercepted.onData(data, endOfStream);
      return bytes;
    }
    ByteBuf payload = data.retain();
    p.up.run(() -> p.up.data(p, payload, bytes, endOfStream));
    return 0;
  }

  @Override
  public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
    Pair p = byDown.remove(streamId);
    if (p == null) {
      return;
    }
    p.downEnded = true; // nothing more may be written on a stream the client reset
    if (p.intercepted != null) {
      p.intercepted.cancel();
    }
    if (p.up != null) {
      p.up.run(() -> p.up.reset(p, errorCode));
    }
  }

  /** Gives the client back flow-control window for bytes the backend leg has taken. */
  private void consumedDown(int streamId, int bytes) {
    Http2Stream s = downHandler.connection().stream(streamId);
    if (s == null || bytes == 0) {
      return;
    }
    try {
      if (downHandler.connection().local().flowController().consumeBytes(s, bytes)) {
        downFlush = true;
        flushDownSoon();
      }
    } catch (Http2Exception e) {
      LOG.debug("returning {} bytes on client stream {} failed", bytes, streamId, e);
    }
  }

  // ---------------------------------------------------------------- answers to the client

  /** True while the client stream is open for the proxy to write on. */
  boolean downOpen(int streamId) {
    Http2Stream s = downHandler.connection().stream(streamId);
    return s != null && (s.state() == Http2Stream.State.OPEN
        || s.state() == Http2Stream.State.HALF_CLOSED_REMOTE);
  }

  void writeDownHeaders(Pair p, Http2Headers headers, boolean endOfStream) {
    p.responseStarted = true;
    if (endOfStream) {
      p.downEnded = true;
    }
    downHandler.encoder().writeHeaders(downCtx, p.downId, headers, 0, endOfStream,
        downCtx.newPromise());
    downFlush = true;
  }

  private void writeDownData(Pair p, ByteBuf data, boolean endOfStream,
      ChannelFutureListener done) {
    if (endOfStream) {
      p.downEnded = true;
    }
    ChannelFuture f = downHandler.encoder().writeData(downCtx, p.downId, data, 0, endOfStream,
        downCtx.newPromise());
    if (done != null) {
      f.addListener(done);
    }
    downFlush = true;
  }

  /** Runs {@code task} on the event loop (for interceptor chains answering from a worker). */
  void execute(Runnable task) {
    down.eventLoop().execute(task);
  }

  /** The event loop of both legs (also schedules the deadlines of intercepted calls). */
  io.netty.channel.EventLoop eventLoop() {
    return down.eventLoop();
  }

  Pair pair(int downId) {
    return byDown.get(downId);
  }

  /** Answers an intercepted stream: headers if not yet sent, then the message. */
  void sendMessage(Pair p, ByteBuf framed) {
    if (!downOpen(p.downId) || p.downEnded) {
      framed.release();
      return;
    }
    writeDownMessage(p, framed);
    flushDownSoon();
  }

  /** A message on a client stream, after the response headers if none went out yet. */
  private void writeDownMessage(Pair p, ByteBuf framed) {
    if (!p.responseStarted) {
      writeDownHeaders(p, GrpcWire.responseHeaders(), false);
    }
    writeDownData(p, framed, false, null);
  }

  /**
   * Ends a client stream with {@code status} as gRPC does: trailers, or trailers-only when no
   * response headers went out yet.
   */
  void finish(Pair p, Status status, io.grpc.Metadata trailers) {
    if (p.downEnded || !downOpen(p.downId)) {
      return;
    }
    writeDownHeaders(p, GrpcWire.trailers(status, trailers, !p.responseStarted), true);
    flushDownSoon();
  }

  private void flushDown() {
    if (downFlush) {
      downFlush = false;
      down.flush();
    }
  }

  private boolean downFlushScheduled;

  /** Flushes the client leg once the current event-loop task is done (coalesces writes). */
  private void flushDownSoon() {
    if (!downFlushScheduled) {
      downFlushScheduled = true;
      down.eventLoop().execute(() -> {
        downFlushScheduled = false;
        flushDown();
      });
    }
  }

  // ---------------------------------------------------------------- the backend leg

  private Upstream upstream() {
    if (up == null || up.state == Upstream.CLOSED) {
      up = connect();
    }
    return up;
  }

  private Upstream connect() {
    Upstream u = new Upstream();
    Bootstrap b = new Bootstrap().group(down.eventLoop()).channel(server.backendChannelType())
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, ProxyTransport.CONNECT_TIMEOUT_MILLIS)
        .handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            u.install(ch);
          }
        });
    SocketAddress address = server.backendAddress();
    b.connect(address).addListener((ChannelFutureListener) f -> {
      // success: ready() follows from channelActive, once the HTTP/2 preface is out
      if (!f.isSuccess()) {
        u.failed("backend " + server.backendName() + " is unavailable: "
            + f.cause().getMessage());
      }
    });
    return u;
  }

  private void closeAll() {
    for (Pair p : byDown.values().toArray(new Pair[0])) {
      if (p.intercepted != null) {
        p.intercepted.cancel();
      }
    }
    byDown.clear();
    if (up != null) {
      up.close();
    }
    for (Upstream u : draining.toArray(new Upstream[0])) {
      u.close();
    }
  }

  /**
   * Sends an intercepted call's request (changed by its hooks) on the backend leg, with the
   * client's headers, and collects the backend's answer for {@code capture} (on this event loop).
   */
  void forwardCaptured(Pair p, Http2Headers headers, ByteBuf framedRequest, Capture capture) {
    p.capture = capture;
    Upstream u = upstream();
    p.up = u;
    u.run(() -> {
      u.open(p, headers, false);
      u.data(p, framedRequest, 0, true); // follows the stream if open() moved it elsewhere
      u.flushUp();
    });
  }

  /** Answers a client stream with a collected answer: headers, the message, trailers. */
  void answerCaptured(Pair p, Http2Headers headers, ByteBuf message, Http2Headers trailers) {
    if (p.downEnded || !downOpen(p.downId)) {
      if (message != null) {
        message.release();
      }
      return;
    }
    if (headers != null && trailers != null) {
      writeDownHeaders(p, headers, false);
    }
    if (message != null) {
      writeDownMessage(p, message);
    }
    writeDownHeaders(p, trailers != null ? trailers : headers, true);
    flushDownSoon();
  }

  /** A backend answer collected for the proxy: headers, body bytes, trailers. */
  static final class Capture {
    private final int limit;
    private final java.util.function.Consumer<Capture> onDone;
    Http2Headers headers;
    ByteBuf body;
    Http2Headers trailers;
    boolean done;
    boolean tooLarge;

    Capture(int limit, java.util.function.Consumer<Capture> onDone) {
      this.limit = limit;
      this.onDone = onDone;
    }

    void headers(Http2Headers h, boolean endOfStream) {
      if (headers == null && !endOfStream) {
        headers = h;
        return;
      }
      if (headers == null) {
        headers = h; // trailers-only
      } else {
        trailers = h;
      }
      finish();
    }

    void data(ByteBuf data, boolean endOfStream) {
      if (!tooLarge) {
        if (body == null) {
          body = io.netty.buffer.Unpooled.buffer(data.readableBytes());
        }
        if (body.readableBytes() + data.readableBytes() > limit) {
          tooLarge = true;
          body.release();
          body = null;
        } else {
          body.writeBytes(data);
        }
      }
      if (endOfStream) {
        finish();
      }
    }

    private void finish() {
      if (!done) {
        done = true;
        onDone.accept(this);
      }
    }

    void release() {
      if (body != null) {
        body.release();
        body = null;
      }
    }
  }

  /** One relayed or answered stream. */
  static final class Pair {
    final int downId;
    Upstream up;
    int upId;
    InterceptedStream intercepted;
    /** Set when the backend's answer is collected for the proxy instead of relayed. */
    Capture capture;
    boolean responseStarted;
    boolean downEnded;

    Pair(int downId) {
      this.downId = downId;
    }
  }

  /** A connection to the backend, paired with this client connection. */
  final class Upstream extends Http2FrameAdapter {
    static final int CONNECTING = 0;
    static final int READY = 1;
    static final int DRAINING = 2;
    static final int CLOSED = 3;

    int state = CONNECTING;
    private Channel ch;
    private Http2ConnectionHandler handler;
    private ChannelHandlerContext ctx;
    private boolean flush;
    private String failure;
    private final ArrayDeque<Runnable> pending = new ArrayDeque<>();
    private final IntObjectMap<Pair> byUp = new IntObjectHashMap<>();

    void install(Channel channel) {
      ch = channel;
      handler = handler(false, this);
      ch.pipeline().addLast(handler, new ReadCompleteFlush(this));
      ctx = ch.pipeline().context(handler);
      handler.connection().addListener(new Http2ConnectionAdapter() {
        @Override
        public void onStreamClosed(Http2Stream stream) {
          Pair p = byUp.remove(stream.id());
          if (p != null && p.capture != null && !p.capture.done) {
            p.capture.release(); // an answer that will never be complete
          }
          if (p != null && !p.downEnded && (p.capture == null || !p.capture.done)) {
            // closed without an end the client saw: refused by a GOAWAY, or reset
            finish(p, Status.UNAVAILABLE.withDescription("the runtime closed the stream"), null);
          }
          if (state == DRAINING && byUp.isEmpty()) {
            ch.close();
          }
        }
      });
      ch.closeFuture().addListener(f -> lost());
    }

    void run(Runnable action) {
      switch (state) {
        case READY, DRAINING -> action.run();
        case CONNECTING -> pending.add(action);
        default -> action.run(); // CLOSED: the action sees the failure and answers
      }
    }

    void ready() {
      if (state != CONNECTING) {
        return;
      }
      state = READY;
      openConnectionWindow(handler);
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
      flushUp();
    }

    void failed(String why) {
      LOG.debug("{}", why);
      failure = why;
      state = CLOSED;
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
      flushDownSoon();
    }

    /** The connection went away: every call on it ends with UNAVAILABLE. */
    private void lost() {
      if (state == CLOSED) {
        return;
      }
      if (failure == null) {
        failure = "connection to the runtime " + server.backendName() + " was lost";
      }
      state = CLOSED;
      draining.remove(this);
      for (Pair p : byUp.values().toArray(new Pair[0])) {
        if (p.capture != null && !p.capture.done) {
          p.capture.release();
        }
        finish(p, Status.UNAVAILABLE.withDescription(failure), null);
      }
      byUp.clear();
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
    }

    void close() {
      if (ch != null) {
        ch.close();
      }
    }

    /** Opens the backend stream for a client stream. */
    void open(Pair p, Http2Headers headers, boolean endOfStream) {
      if (state == CLOSED || state == DRAINING) {
        if (state == DRAINING) {
          // went away between the client's headers and now: a fresh connection takes it
          p.up = upstream();
          p.up.run(() -> p.up.open(p, headers, endOfStream));
          return;
        }
        finish(p, Status.UNAVAILABLE.withDescription(failure), null);
        return;
      }
      if (!downOpen(p.downId) && !endOfStream) {
        return;
      }
      int id = handler.connection().local().incrementAndGetNextStreamId();
      p.upId = id;
      byUp.put(id, p);
      handler.encoder().writeHeaders(ctx, id, headers, 0, endOfStream, ctx.newPromise())
          .addListener(f -> {
            if (!f.isSuccess()) {
              finish(p, Status.UNAVAILABLE.withDescription("cannot open a stream to the runtime: "
                  + f.cause().getMessage()), null);
            }
          });
      flush = true;
    }

    void headers(Pair p, Http2Headers headers, boolean endOfStream) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.headers(p, headers, endOfStream));
        return;
      }
      if (p.upId == 0 || handler == null || handler.connection().stream(p.upId) == null) {
        return;
      }
      handler.encoder().writeHeaders(ctx, p.upId, headers, 0, endOfStream, ctx.newPromise());
      flush = true;
    }

    void data(Pair p, ByteBuf payload, int bytes, boolean endOfStream) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.data(p, payload, bytes, endOfStream));
        return;
      }
      if (p.upId == 0 || handler == null || handler.connection().stream(p.upId) == null) {
        payload.release();
        consumedDown(p.downId, bytes);
        return;
      }
      handler.encoder().writeData(ctx, p.upId, payload, 0, endOfStream, ctx.newPromise())
          .addListener(f -> consumedDown(p.downId, bytes));
      flush = true;
    }

    void reset(Pair p, long errorCode) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.reset(p, errorCode));
        return;
      }
      if (p.upId == 0 || handler == null || handler.connection().stream(p.upId) == null) {
        return;
      }
      handler.resetStream(ctx, p.upId, errorCode, ctx.newPromise());
      flush = true;
      flushUp();
    }

    void flushUp() {
      if (flush && ch != null) {
        flush = false;
        ch.flush();
      }
    }

    // backend frames

    @Override
    public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers,
        int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream) {
      onHeadersRead(c, streamId, headers, padding, endOfStream);
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers,
        int padding, boolean endOfStream) {
      Pair p = byUp.get(streamId);
      if (p != null && p.capture != null) {
        p.capture.headers(headers, endOfStream);
        return;
      }
      if (p == null || p.downEnded || !downOpen(p.downId)) {
        return;
      }
      writeDownHeaders(p, headers, endOfStream);
    }

    @Override
    public int onDataRead(ChannelHandlerContext c, int streamId, ByteBuf data, int padding,
        boolean endOfStream) {
      int bytes = data.readableBytes() + padding;
      Pair p = byUp.get(streamId);
      if (p != null && p.capture != null) {
        p.capture.data(data, endOfStream);
        return bytes;
      }
      if (p == null || p.downEnded || !downOpen(p.downId)) {
        return bytes;
      }
      writeDownData(p, data.retain(), endOfStream, f -> consumedUp(streamId, bytes));
      return 0;
    }

    private void consumedUp(int streamId, int bytes) {
      Http2Stream s = handler.connection().stream(streamId);
      if (s == null) {
        return;
      }
      try {
        if (handler.connection().local().flowController().consumeBytes(s, bytes)) {
          flush = true;
          ch.eventLoop().execute(this::flushUp);
        }
      } catch (Http2Exception e) {
        LOG.debug("returning {} bytes on backend stream {} failed", bytes, streamId, e);
      }
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
      Pair p = byUp.remove(streamId);
      if (p == null || p.downEnded || !downOpen(p.downId)) {
        return;
      }
      p.downEnded = true;
      downHandler.resetStream(downCtx, p.downId, errorCode, downCtx.newPromise());
      downFlush = true;
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext c, int lastStreamId, long errorCode,
        ByteBuf debugData) {
      // no new streams here; the ones up to lastStreamId finish, later ones Netty closes
      if (state == READY) {
        state = DRAINING;
        draining.add(this);
        if (up == this) {
          up = null;
        }
        if (byUp.isEmpty()) {
          ch.close();
        }
      }
    }
  }

  /** Flushes the other leg once a read on this one is done, so writes are coalesced. */
  private final class ReadCompleteFlush extends ChannelInboundHandlerAdapter {
    /** The backend leg this handler sits on, or null on the client leg. */
    private final Upstream upstream;

    ReadCompleteFlush(Upstream upstream) {
      this.upstream = upstream;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (upstream != null) {
        flushDown();
      } else {
        if (up != null) {
          up.flushUp();
        }
        for (Upstream u : draining) {
          u.flushUp();
        }
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      // after the HTTP/2 handler's channelActive, which wrote the connection preface
      ctx.fireChannelActive();
      if (upstream != null) {
        upstream.ready();
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      LOG.debug("{} connection failed: {}", upstream != null ? "backend" : "client", cause.toString());
      ctx.close();
    }
  }
}
