package io.cri4j.proxy.internal;

import io.grpc.Status;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.DefaultHttp2FrameReader;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.EmptyHttp2Headers;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Flags;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection of the proxy and the backend connection paired with it, both on the same
 * event loop: a thin HTTP/2 relay (RFC 9113). Frames are parsed by Netty's frame reader; streams,
 * flow control and the frames written are kept here, per leg, with no HTTP/2 connection object
 * on either side.
 *
 * <p>A stream of a method no interceptor wants is relayed: its header blocks go to the other leg
 * as the bytes they came as (both peers are asked for an HPACK dynamic table of size 0, so a
 * block means the same on either leg; see {@link HeaderBlocks}), its DATA frames go on
 * unchanged, and each leg's flow-control window is given back only once the other leg wrote the
 * bytes. Stream ids differ per leg. Streams of intercepted methods are answered by an
 * {@link InterceptedStream}.
 *
 * <p>The runtime's PINGs go on to the client and the client's ack comes back, as without the
 * proxy: the runtime's BDP and keepalive pings measure the client's round trip, and the client
 * acks once it has taken the answer the PING came with (an ack from the proxy would wake the
 * runtime while the client still works on that answer). The client's PINGs go on to the runtime
 * too, with the request they came with, so the runtime acks them with its answer as it would
 * without the proxy (an ack from the proxy would be a write of its own, and a wake-up of the
 * client, before the request even reached the runtime), but only while the runtime sent HEADERS
 * or DATA since the last one: grpc-go and grpc-java servers count a PING that follows no data of
 * their own as a strike and end the connection after a few, and a gRPC client's BDP ping after
 * an answer the proxy made itself would be one. Other client PINGs, and any beyond
 * {@link #MAX_FORWARDED_PINGS} waiting for either peer, the proxy acks itself; so it does for the
 * client's PINGs a runtime connection took with it when it went away. The proxy holds the client
 * to containerd's own PING policy (grpc-go's keepalive enforcement, {@link #MAX_PING_STRIKES}):
 * a flood of PINGs ends with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", as at containerd.
 *
 * <p>HEADERS that would open a stream on an even id, or on an id not above every earlier one,
 * are a connection error (GOAWAY PROTOCOL_ERROR), as at containerd.
 *
 * <p>The backend leg is connected when the client connects; when it cannot be reached, or dies,
 * the calls on it end at once with UNAVAILABLE and the next call connects again, so the proxy
 * serves again as soon as the backend is back, on the same client connection.
 */
final class RelayConnection {
  /** What {@link Leg#knownPath} says of a request path known to be relayed. */
  static final Object RELAYED = new Object();

  private static final Logger LOG = LoggerFactory.getLogger(RelayConnection.class);
  /** Flow-control windows the proxy gives each peer (stream and connection): grpc-java's. */
  static final int WINDOW = 1 << 20;
  /** Largest header list either leg accepts. */
  static final long MAX_HEADER_LIST = 1 << 20;
  private static final int DEFAULT_WINDOW = 65_535;
  private static final int DEFAULT_MAX_FRAME = 16_384;
  private static final int MAX_WINDOW = Integer.MAX_VALUE;
  private static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final int FRAME_HEADER = 9;
  /**
   * DATA payloads and header blocks below this size are copied into a leg's staged buffer of
   * small frames; larger ones are written as the buffers they came in.
   */
  private static final int STAGE_BELOW = 1024;
  /** A leg's staged buffer starts this large and is written once it would pass STAGED_MAX. */
  private static final int STAGED_CHUNK = 1024;
  private static final int STAGED_MAX = 16 * 1024;
  private static final byte DATA = 0x0;
  private static final byte HEADERS = 0x1;
  private static final byte RST_STREAM = 0x3;
  private static final byte SETTINGS = 0x4;
  private static final byte PING = 0x6;
  private static final byte GOAWAY = 0x7;
  private static final byte WINDOW_UPDATE = 0x8;
  private static final byte CONTINUATION = 0x9;
  private static final int FLAG_END_STREAM = 0x1;
  private static final int FLAG_ACK = 0x1;
  private static final int FLAG_END_HEADERS = 0x4;
  private static final long NO_ERROR = Http2Error.NO_ERROR.code();
  private static final long CANCEL = Http2Error.CANCEL.code();

  private final ProxyTransport server;
  private final Channel downChannel;
  private final Down down;
  /** Encodes the headers the proxy writes itself; stateless (dynamic table of size 0). */
  private final DefaultHttp2HeadersEncoder encoder =
      new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);
  /** The backend connection new streams go to; null until needed again after a failure. */
  private Upstream up;
  private final List<Upstream> draining = new ArrayList<>(1);
  private boolean flushScheduled;
  /** PINGs a backend leg sent that went on to the client, waiting for the client's ack. */
  private final ArrayDeque<ForwardedPing> pingsToClient = new ArrayDeque<>(2);

  /** The client's PINGs sent on to a backend leg, waiting for its ack. */
  private final ArrayDeque<ForwardedPing> pingsToBackend = new ArrayDeque<>(2);

  /** Most PINGs that may wait for the other peer's ack, each way; beyond, the proxy acks. */
  static final int MAX_FORWARDED_PINGS = 8;

  /**
   * The client's PING policy, grpc-go's server keepalive enforcement with the defaults
   * containerd runs with: a PING less than {@link #PING_MIN_INTERVAL_NANOS} after the last (or,
   * with no stream open, less than {@link #PING_IDLE_INTERVAL_NANOS}) and with no HEADERS or
   * DATA written to the client since is a strike; more than {@link #MAX_PING_STRIKES} strikes
   * end the connection with GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
   */
  static final int MAX_PING_STRIKES = 2;
  static final long PING_MIN_INTERVAL_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(5);
  static final long PING_IDLE_INTERVAL_NANOS = java.util.concurrent.TimeUnit.HOURS.toNanos(2);

  /** A PING sent on between the client and a backend leg: that leg, its payload. */
  private record ForwardedPing(Upstream up, long data) {
    /**
     * Takes the first PING of {@code waiting} an ack with {@code data} answers, sent on with
     * {@code up} (null: with any leg); null when none waits.
     */
    static ForwardedPing take(ArrayDeque<ForwardedPing> waiting, Upstream up, long data) {
      for (java.util.Iterator<ForwardedPing> i = waiting.iterator(); i.hasNext(); ) {
        ForwardedPing f = i.next();
        if (f.data() == data && (up == null || f.up() == up)) {
          i.remove();
          return f;
        }
      }
      return null;
    }
  }

  RelayConnection(ProxyTransport server, Channel down) {
    this.server = server;
    this.downChannel = down;
    this.down = new Down();
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

  // ---------------------------------------------------------------- per-stream state

  /** One leg's side of a stream: its id there, windows, and the writes waiting for window. */
  static final class Half {
    int id;
    /** What the peer lets us send on this stream. */
    int sendWindow;
    /** Bytes taken from the peer on this stream and not yet given back. */
    int unacked;
    /** Writes waiting for flow-control window (DATA, and what must follow it). */
    ArrayDeque<Out> pending;
    boolean blocked;
    /** No more writes are accepted (END_STREAM or RST_STREAM written or queued). */
    boolean ending;
    /** END_STREAM or RST_STREAM written. */
    boolean sentEnd;
    /** The peer sent END_STREAM or RST_STREAM. */
    boolean gotEnd;

    boolean idle() {
      return pending == null || pending.isEmpty();
    }
  }

  /** A write waiting for window: a DATA payload, a header block, or a reset. */
  private static final class Out {
    final byte type;
    final ByteBuf buf;
    final boolean end;
    final long code;
    /** Window to give back on the other leg once written. */
    int credit;

    Out(byte type, ByteBuf buf, boolean end, int credit, long code) {
      this.type = type;
      this.buf = buf;
      this.end = end;
      this.credit = credit;
      this.code = code;
    }
  }

  /** One relayed or answered stream: its client half and its backend half. */
  static final class Pair {
    final Half down = new Half();
    final Half upHalf = new Half();
    Upstream up;
    InterceptedStream intercepted;
    /** An intercepted stream's request header block as it came, while it may be forwarded. */
    ByteBuf requestBlock;
    /** Set when the backend's answer is collected for the proxy instead of relayed. */
    Capture capture;
    boolean responseStarted;

    Pair(int downId) {
      down.id = downId;
    }
  }

  // ---------------------------------------------------------------- the leg machinery

  /**
   * One HTTP/2 connection of the relay: reads frames, keeps the peer's settings and windows,
   * writes frames, and queues DATA that must wait for window.
   */
  private abstract class Leg extends ByteToMessageDecoder implements Http2FrameListener {
    final HeaderBlocks blocks;
    final DefaultHttp2FrameReader reader;
    ChannelHandlerContext ctx;
    int peerMaxFrame = DEFAULT_MAX_FRAME;
    int peerInitialWindow = DEFAULT_WINDOW;
    int connWindow = DEFAULT_WINDOW;
    int connUnacked;
    /** The next header block must start with a dynamic table size update (to 0). */
    boolean oweSizeUpdate;
    /** HEADERS or DATA written since the peer's last PING (a PING after them is no strike). */
    boolean answeredSincePing;
    boolean needsFlush;
    /**
     * Small frames written since the last flush, in one buffer (null: none): one allocation and
     * one pipeline write per flush instead of one per frame.
     */
    private ByteBuf staged;
    /** The connection is gone and this handler with it: frames written now go nowhere. */
    private boolean removed;
    final ArrayDeque<Pair> blocked = new ArrayDeque<>();

    /** @param decodeAll decode every header block (else only those {@link #mustDecode} names) */
    Leg(boolean decodeAll) {
      blocks = new HeaderBlocks(MAX_HEADER_LIST, decodeAll ? null : this::mustDecode,
          decodeAll ? this::knownPath : null, downChannel.alloc());
      reader = new DefaultHttp2FrameReader(blocks);
    }

    /** Whether the headers of a stream must be decoded even when they can be relayed as is. */
    boolean mustDecode(int streamId) {
      return true;
    }

    /**
     * What is known of requests with this {@code :path} value (as encoded): {@link #RELAYED}, the
     * intercepted method, or null (not known: decode the block).
     */
    Object knownPath(ByteBuf encodedPath) {
      return null;
    }

    abstract Half half(Pair p);

    /** The leg the bytes written here came from (gets their window back). */
    abstract Leg other(Pair p);

    abstract Pair stream(int id);

    /** A stream of this leg is done on both sides: forget it. */
    abstract void closed(Pair p);

    abstract String name();

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
      this.ctx = ctx;
      super.handlerAdded(ctx);
    }

    void settingsFrame(boolean server) {
      ByteBuf b = ctx.alloc().buffer(FRAME_HEADER + 4 * 6 + FRAME_HEADER + 4);
      int n = server ? 3 : 4;
      header(b, n * 6, SETTINGS, 0, 0);
      setting(b, 0x1, 0); // HEADER_TABLE_SIZE: no dynamic table (blocks relay as they are)
      setting(b, 0x4, WINDOW); // INITIAL_WINDOW_SIZE
      setting(b, 0x6, (int) MAX_HEADER_LIST); // MAX_HEADER_LIST_SIZE
      if (!server) {
        setting(b, 0x2, 0); // ENABLE_PUSH off
      }
      header(b, 4, WINDOW_UPDATE, 0, 0);
      b.writeInt(WINDOW - DEFAULT_WINDOW);
      write(b);
    }

    private void setting(ByteBuf b, int id, int value) {
      b.writeShort(id).writeInt(value);
    }

    /** Writes {@code b} behind the frames staged so far; owns it. */
    void write(ByteBuf b) {
      unstage();
      ctx.write(b, ctx.voidPromise());
      needsFlush = true;
    }

    /**
     * The buffer to write a small frame of {@code bytes} bytes into, behind everything written
     * on this leg so far; the frame goes out with the next flush.
     */
    ByteBuf stage(int bytes) {
      if (removed) {
        return Unpooled.wrappedBuffer(new byte[bytes]).clear(); // dropped, left to the GC
      }
      ByteBuf b = staged;
      if (b != null && b.readableBytes() + bytes > STAGED_MAX) {
        unstage();
        b = null;
      }
      if (b == null) {
        b = ctx.alloc().buffer(Math.max(STAGED_CHUNK, bytes));
        staged = b;
      }
      needsFlush = true;
      return b;
    }

    private void unstage() {
      ByteBuf b = staged;
      if (b != null) {
        staged = null;
        ctx.write(b, ctx.voidPromise());
      }
    }

    void flush() {
      if (needsFlush) {
        needsFlush = false;
        unstage();
        ctx.flush();
      }
    }

    // -------------------------------------------------------------- frames out

    void rstFrame(int id, long code) {
      ByteBuf b = stage(FRAME_HEADER + 4);
      header(b, 4, RST_STREAM, 0, id);
      b.writeInt((int) code);
    }

    void windowUpdateFrame(int id, int increment) {
      ByteBuf b = stage(FRAME_HEADER + 4);
      header(b, 4, WINDOW_UPDATE, 0, id);
      b.writeInt(increment);
    }

    void goAway(int lastId, Http2Error error, String why) {
      byte[] debug = why.getBytes(StandardCharsets.UTF_8);
      ByteBuf b = ctx.alloc().buffer(FRAME_HEADER + 8 + debug.length);
      header(b, 8 + debug.length, GOAWAY, 0, 0);
      b.writeInt(lastId).writeInt((int) error.code()).writeBytes(debug);
      write(b);
    }

    /** Writes a header block (after {@link HeaderBlocks#HEADROOM} bytes of room); owns it. */
    void headersFrame(int id, ByteBuf block, boolean end) {
      answeredSincePing = true;
      int flags = end ? FLAG_END_STREAM : 0;
      int extra = oweSizeUpdate ? 1 : 0;
      oweSizeUpdate = false;
      int len = block.readableBytes() + extra;
      int start = block.readerIndex() - FRAME_HEADER - extra;
      if (len <= peerMaxFrame && len < STAGE_BELOW) {
        ByteBuf b = stage(FRAME_HEADER + len);
        header(b, len, HEADERS, flags | FLAG_END_HEADERS, id);
        if (extra == 1) {
          b.writeByte(0x20); // dynamic table size update: 0
        }
        b.writeBytes(block);
        block.release();
        return;
      }
      if (len <= peerMaxFrame) {
        block.setMedium(start, len);
        block.setByte(start + 3, HEADERS);
        block.setByte(start + 4, flags | FLAG_END_HEADERS);
        block.setInt(start + 5, id);
        if (extra == 1) {
          block.setByte(start + FRAME_HEADER, 0x20); // dynamic table size update: 0
        }
        block.readerIndex(start);
        write(block);
        return;
      }
      // larger than a frame: HEADERS, then CONTINUATION frames
      if (extra == 1) {
        block.setByte(block.readerIndex() - 1, 0x20);
        block.readerIndex(block.readerIndex() - 1);
      }
      byte type = HEADERS;
      while (block.isReadable()) {
        int n = Math.min(block.readableBytes(), peerMaxFrame);
        boolean last = n == block.readableBytes();
        header(stage(FRAME_HEADER), n, type,
            (type == HEADERS ? flags : 0) | (last ? FLAG_END_HEADERS : 0), id);
        write(block.readRetainedSlice(n));
        type = CONTINUATION;
      }
      block.release();
    }

    /** Writes one DATA frame; owns {@code data}. */
    void dataFrame(int id, ByteBuf data, boolean end) {
      answeredSincePing = true;
      int n = data.readableBytes();
      int flags = end ? FLAG_END_STREAM : 0;
      if (n < STAGE_BELOW) {
        ByteBuf b = stage(FRAME_HEADER + n);
        header(b, n, DATA, flags, id);
        b.writeBytes(data);
        data.release();
        return;
      }
      header(stage(FRAME_HEADER), n, DATA, flags, id);
      write(data);
    }

    // -------------------------------------------------------------- flow-controlled writes

    /**
     * Writes DATA on a stream of this leg as its windows allow, the rest when they open;
     * {@code credit} bytes go back to the other leg once written.
     */
    void send(Pair p, ByteBuf data, boolean end, int credit) {
      Half h = half(p);
      if (h.ending) {
        data.release();
        other(p).consumed(p, credit);
        return;
      }
      if (end) {
        h.ending = true;
      }
      int n = data.readableBytes();
      if (h.idle() && n <= h.sendWindow && n <= connWindow && n <= peerMaxFrame) {
        h.sendWindow -= n;
        connWindow -= n;
        dataFrame(h.id, data, end);
        if (end) {
          sentEnd(p, h);
        }
        other(p).consumed(p, credit);
        return;
      }
      enqueue(h, new Out(DATA, data, end, credit, 0));
      drain(p);
    }

    /** Writes a header block on a stream of this leg, behind any DATA waiting for window. */
    void sendHeaders(Pair p, ByteBuf block, boolean end) {
      Half h = half(p);
      if (h.ending) {
        block.release();
        return;
      }
      if (end) {
        h.ending = true;
      }
      if (h.idle()) {
        headersFrame(h.id, block, end);
        if (end) {
          sentEnd(p, h);
        }
        return;
      }
      enqueue(h, new Out(HEADERS, block, end, 0, 0));
    }

    /** Resets a stream of this leg behind what is queued on it (a graceful NO_ERROR end). */
    void sendResetAfter(Pair p, long code) {
      Half h = half(p);
      if (h.sentEnd && h.gotEnd) {
        return;
      }
      h.ending = true;
      if (h.idle()) {
        rstFrame(h.id, code);
        h.gotEnd = true;
        sentEnd(p, h);
        return;
      }
      enqueue(h, new Out(RST_STREAM, null, true, 0, code));
    }

    /** Resets a stream of this leg now: what waits on it is dropped. */
    void resetNow(Pair p, long code) {
      Half h = half(p);
      dropPending(p, h);
      if (!h.sentEnd && h.id != 0) {
        rstFrame(h.id, code);
      }
      h.ending = true;
      h.gotEnd = true;
      sentEnd(p, h);
    }

    private void enqueue(Half h, Out o) {
      if (h.pending == null) {
        h.pending = new ArrayDeque<>(2);
      }
      h.pending.add(o);
    }

    /** Writes what waits on a stream as far as the windows allow. */
    void drain(Pair p) {
      Half h = half(p);
      ArrayDeque<Out> q = h.pending;
      while (q != null && !q.isEmpty()) {
        Out o = q.peek();
        if (o.type == DATA) {
          int n = o.buf.readableBytes();
          int allowed = Math.min(Math.min(h.sendWindow, connWindow), peerMaxFrame);
          if (n > 0 && allowed <= 0) {
            if (!h.blocked) {
              h.blocked = true;
              blocked.add(p);
            }
            return;
          }
          if (n <= allowed || n == 0) {
            q.poll();
            h.sendWindow -= n;
            connWindow -= n;
            dataFrame(h.id, o.buf, o.end);
            other(p).consumed(p, o.credit);
            if (o.end) {
              sentEnd(p, h);
            }
          } else {
            h.sendWindow -= allowed;
            connWindow -= allowed;
            dataFrame(h.id, o.buf.readRetainedSlice(allowed), false);
            int c = Math.min(o.credit, allowed);
            o.credit -= c;
            other(p).consumed(p, c);
          }
        } else {
          q.poll();
          if (o.type == HEADERS) {
            headersFrame(h.id, o.buf, o.end);
          } else {
            rstFrame(h.id, o.code);
            h.gotEnd = true;
          }
          if (o.end) {
            sentEnd(p, h);
          }
        }
      }
    }

    private void dropPending(Pair p, Half h) {
      if (h.pending == null) {
        return;
      }
      Out o;
      while ((o = h.pending.poll()) != null) {
        if (o.buf != null) {
          o.buf.release();
        }
        if (o.credit > 0) {
          other(p).consumed(p, o.credit);
        }
      }
    }

    private void sentEnd(Pair p, Half h) {
      h.sentEnd = true;
      if (h.gotEnd) {
        closed(p);
      }
    }

    void gotEnd(Pair p, Half h) {
      h.gotEnd = true;
      if (h.sentEnd) {
        closed(p);
      }
    }

    /** Drops what waits on every stream (the connection is gone). */
    void dropAllPending(Iterable<Pair> pairs) {
      for (Pair p : pairs) {
        dropPending(p, half(p));
      }
      blocked.clear();
    }

    // -------------------------------------------------------------- window given back

    /**
     * {@code bytes} read on stream {@code p} of this leg were taken (written on, or kept by the
     * proxy): give the peer its window back, in steps of half the window like gRPC.
     */
    void consumed(Pair p, int bytes) {
      if (bytes <= 0) {
        return;
      }
      connUnacked += bytes;
      if (connUnacked >= WINDOW / 2) {
        windowUpdateFrame(0, connUnacked);
        connUnacked = 0;
      }
      Half h = p == null ? null : half(p);
      if (h != null && h.id != 0 && !h.gotEnd) {
        h.unacked += bytes;
        if (h.unacked >= WINDOW / 2) {
          windowUpdateFrame(h.id, h.unacked);
          h.unacked = 0;
        }
      }
    }

    // -------------------------------------------------------------- frames in

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
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
          rstFrame(e.streamId(), e.error().code());
        }
      } catch (Http2Exception e) {
        blocks.drop();
        LOG.debug("{} connection: {}", name(), e.getMessage());
        goAway(lastPeerStream(), e.error(), e.getMessage() == null ? "" : e.getMessage());
        flush();
        in.skipBytes(in.readableBytes());
        ctx.close();
      } catch (RuntimeException e) {
        blocks.drop();
        LOG.warn("{} connection failed", name(), e);
        in.skipBytes(in.readableBytes());
        ctx.close();
      }
    }

    /** Reads the client's connection preface; true once it was read (or none is due). */
    abstract boolean preface(ByteBuf in) throws Http2Exception;

    abstract int lastPeerStream();

    /** A frame of {@code p} broke a stream rule: reset the stream on both legs. */
    abstract void streamError(Pair p, Http2Exception e);

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
      super.channelReadComplete(ctx);
      flushAll(this);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      LOG.debug("{} connection failed: {}", name(), cause.toString());
      ctx.close();
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
      removed = true;
      if (staged != null) {
        staged.release();
        staged = null;
      }
      blocks.drop();
      reader.close();
    }

    @Override
    public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings)
        throws Http2Exception {
      Long tableSize = settings.headerTableSize();
      if (tableSize != null) {
        oweSizeUpdate = true; // the next block starts with "size 0", within any maximum
      }
      Integer maxFrame = settings.maxFrameSize();
      if (maxFrame != null) {
        peerMaxFrame = maxFrame;
      }
      Integer initial = settings.initialWindowSize();
      if (initial != null) {
        int delta = initial - peerInitialWindow;
        peerInitialWindow = initial;
        if (delta != 0) {
          for (Pair p : streams()) {
            Half h = half(p);
            h.sendWindow = (int) Math.min(MAX_WINDOW, (long) h.sendWindow + delta);
          }
          if (delta > 0) {
            drainBlocked();
          }
        }
      }
      header(stage(FRAME_HEADER), 0, SETTINGS, FLAG_ACK, 0);
    }

    abstract Iterable<Pair> streams();

    @Override
    public void onSettingsAckRead(ChannelHandlerContext ctx) {
      // our settings are in force: nothing to change here (the decoder accepts both tables)
    }

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
      pingFrame(data, true);
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) {
      // the proxy sends no PINGs of its own
    }

    /** Writes a PING, or its ack, on this leg. */
    void pingFrame(long data, boolean ack) {
      ByteBuf b = stage(FRAME_HEADER + 8);
      header(b, 8, PING, ack ? FLAG_ACK : 0, 0);
      b.writeLong(data);
    }

    @Override
    public void onWindowUpdateRead(ChannelHandlerContext ctx, int streamId, int increment) {
      if (streamId == 0) {
        connWindow = (int) Math.min(MAX_WINDOW, (long) connWindow + increment);
        drainBlocked();
        return;
      }
      Pair p = stream(streamId);
      if (p != null) {
        Half h = half(p);
        h.sendWindow = (int) Math.min(MAX_WINDOW, (long) h.sendWindow + increment);
        drain(p);
      }
    }

    private void drainBlocked() {
      for (int i = blocked.size(); i > 0 && connWindow > 0; i--) {
        Pair p = blocked.poll();
        half(p).blocked = false;
        drain(p);
      }
    }

    @Override
    public void onPriorityRead(ChannelHandlerContext ctx, int streamId, int streamDependency,
        short weight, boolean exclusive) {
      // gRPC uses no priorities
    }

    @Override
    public void onPushPromiseRead(ChannelHandlerContext ctx, int streamId, int promisedStreamId,
        Http2Headers headers, int padding) throws Http2Exception {
      blocks.drop();
      throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
          "push is not enabled on this connection");
    }

    @Override
    public void onUnknownFrame(ChannelHandlerContext ctx, byte frameType, int streamId,
        Http2Flags flags, ByteBuf payload) {
      // extension frames are ignored (RFC 9113 section 5.5)
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
        throws Http2Exception {
      onHeadersRead(ctx, streamId, headers, padding, endOfStream);
    }
  }

  private static void header(ByteBuf b, int length, byte type, int flags, int streamId) {
    b.writeMedium(length).writeByte(type).writeByte(flags).writeInt(streamId);
  }

  private void flushAll() {
    flushAll(null);
  }

  /**
   * Flushes every leg, {@code last} (the leg just read, if any) after the others: what it read
   * goes on before what it gets back itself (an ack, a window update).
   */
  private void flushAll(Leg last) {
    if (down != last) {
      down.flush();
    }
    if (up != null && up != last) {
      up.flush();
    }
    for (int i = 0; i < draining.size(); i++) {
      if (draining.get(i) != last) {
        draining.get(i).flush();
      }
    }
    if (last != null) {
      last.flush();
    }
  }

  /** Flushes both legs once the current event-loop task is done (coalesces writes). */
  private void flushSoon() {
    if (!flushScheduled) {
      flushScheduled = true;
      downChannel.eventLoop().execute(() -> {
        flushScheduled = false;
        flushAll();
      });
    }
  }

  /** A header block of {@code headers}, encoded without the dynamic table, after headroom. */
  private ByteBuf encode(Http2Headers headers) {
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

  // ---------------------------------------------------------------- client (downstream) side

  /** The client leg: kubelet's connection to the proxy. */
  private final class Down extends Leg {
    /** Every stream of the client connection that is being relayed or answered, by its id. */
    final IntObjectMap<Pair> byDown = new IntObjectHashMap<>();
    /** {@code :path} values as this client encodes them: {@link #RELAYED} or the method. */
    private final java.util.Map<java.nio.ByteBuffer, Object> knownPaths =
        new java.util.HashMap<>();
    private int prefaceRead;
    private int lastStream;
    private boolean pinged;
    private long lastPingAt;
    private int pingStrikes;

    Down() {
      super(true);
    }

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
      answerPing(data);
      if (tooManyPings()) {
        LOG.debug("client connection: too many PINGs; GOAWAY ENHANCE_YOUR_CALM");
        goAway(lastStream, Http2Error.ENHANCE_YOUR_CALM, "too_many_pings");
        flush();
        ctx.close();
      }
    }

    /** Judges a client PING as grpc-go's server does (after answering it, as grpc-go does). */
    private boolean tooManyPings() {
      long now = System.nanoTime();
      boolean first = !pinged;
      long last = lastPingAt;
      pinged = true;
      lastPingAt = now;
      if (answeredSincePing) {
        answeredSincePing = false;
        pingStrikes = 0;
        return false;
      }
      long min = byDown.isEmpty() ? PING_IDLE_INTERVAL_NANOS : PING_MIN_INTERVAL_NANOS;
      if (!first && now - last < min) {
        pingStrikes++;
      }
      return pingStrikes > MAX_PING_STRIKES;
    }

    /** Sends a client PING on to the runtime, or acks it here. */
    private void answerPing(long data) {
      Upstream u = up;
      if (u != null && u.state == Upstream.READY && u.sentSincePing
          && pingsToBackend.size() < MAX_FORWARDED_PINGS) {
        u.sentSincePing = false;
        pingsToBackend.add(new ForwardedPing(u, data));
        u.pingFrame(data, false);
      } else {
        pingFrame(data, true);
      }
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) {
      ForwardedPing f = ForwardedPing.take(pingsToClient, null, data);
      if (f == null) {
        return; // an ack to a PING nobody waits for any more: dropped
      }
      Upstream u = f.up();
      if (u.state != Upstream.CLOSED) {
        u.pingFrame(data, true);
        if (u != up && !draining.contains(u)) {
          u.flush(); // a leg flushAll() does not know any more
        }
      }
    }

    @Override
    Half half(Pair p) {
      return p.down;
    }

    @Override
    Leg other(Pair p) {
      return p.up != null ? p.up : this;
    }

    @Override
    Pair stream(int id) {
      return byDown.get(id);
    }

    @Override
    Iterable<Pair> streams() {
      return byDown.values();
    }

    @Override
    void closed(Pair p) {
      byDown.remove(p.down.id);
      release(p.requestBlock);
      p.requestBlock = null;
    }

    @Override
    String name() {
      return "client";
    }

    @Override
    int lastPeerStream() {
      return lastStream;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      settingsFrame(true);
      flush();
      super.channelActive(ctx);
    }

    @Override
    boolean preface(ByteBuf in) throws Http2Exception {
      while (prefaceRead < PREFACE.length) {
        if (!in.isReadable()) {
          return false;
        }
        if (in.readByte() != PREFACE[prefaceRead++]) {
          throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
              "not an HTTP/2 connection preface");
        }
      }
      return true;
    }

    @Override
    void streamError(Pair p, Http2Exception e) {
      resetFromClient(p, e.error().code());
      rstFrame(p.down.id, e.error().code());
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int padding, boolean endOfStream) throws Http2Exception {
      ByteBuf block = blocks.take();
      if ((streamId & 1) == 0 || streamId <= lastStream) {
        // a new stream must have an odd id above every earlier one (RFC 9113 5.1.1), and a
        // gRPC client sends one header block per call: grpc-go (containerd) ends the
        // connection on any other HEADERS, and so does the proxy
        release(block);
        throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
            "received an illegal stream id: %d", streamId);
      }
      lastStream = streamId;
      Pair p = new Pair(streamId);
      p.down.sendWindow = peerInitialWindow;
      byDown.put(streamId, p);
      if (endOfStream) {
        p.down.gotEnd = true;
      }
      // no headers decoded: a method known by its encoded path, relayed or intercepted
      Object known = blocks.takeKnown();
      io.grpc.MethodDescriptor<?, ?> m = known instanceof io.grpc.MethodDescriptor<?, ?> k ? k
          : known != null ? null : server.intercepted().method(headers.path());
      if (known == null && block != null) {
        remember(block, m != null ? m : RELAYED);
      }
      if (m != null) {
        p.requestBlock = block; // sent on as it came if the chain forwards the call
        p.intercepted = new InterceptedStream(RelayConnection.this, streamId, m,
            known != null ? null : headers, known != null ? ByteBufUtil.getBytes(block) : null,
            server.intercepted(), server.maxMessageSize());
        if (endOfStream) {
          p.intercepted.onEnd();
        }
        return;
      }
      ByteBuf b = block != null ? block : encode(headers);
      Upstream u = upstream();
      p.up = u;
      Pair pair = p;
      u.run(() -> u.open(pair, b, endOfStream));
    }

    @Override
    Object knownPath(ByteBuf encodedPath) {
      return knownPaths.isEmpty() ? null : knownPaths.get(encodedPath.nioBuffer());
    }

    /**
     * Remembers how this client encodes the path of a request, and what it is ({@link #RELAYED}
     * or the intercepted method); a few hundred paths at most.
     */
    private void remember(ByteBuf block, Object what) {
      long path = HeaderBlocks.pathValue(block);
      if (path >= 0 && knownPaths.size() < 512) {
        knownPaths.put(java.nio.ByteBuffer.wrap(
            ByteBufUtil.getBytes(block, (int) (path >>> 32), (int) path)), what);
      }
    }

    @Override
    public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
        boolean endOfStream) {
      int bytes = data.readableBytes() + padding;
      Pair p = byDown.get(streamId);
      if (p == null || p.down.gotEnd) {
        consumed(null, bytes);
        return bytes;
      }
      if (endOfStream) {
        gotEnd(p, p.down);
      }
      if (p.intercepted != null) {
        consumed(p, bytes);
        p.intercepted.onData(data, endOfStream);
        return bytes;
      }
      ByteBuf payload = data.retain();
      p.up.run(() -> p.up.data(p, payload, bytes, endOfStream));
      return bytes;
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
      Pair p = byDown.get(streamId);
      if (p != null) {
        resetFromClient(p, errorCode);
      }
    }

    /** The client reset the stream (or broke its rules): it ends here and on the backend. */
    private void resetFromClient(Pair p, long errorCode) {
      p.down.sentEnd = true; // nothing more may be written on a stream the client reset
      resetNow(p, errorCode);
      byDown.remove(p.down.id);
      if (p.intercepted != null) {
        p.intercepted.cancel();
      }
      resetBackend(p, errorCode);
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode,
        ByteBuf debugData) {
      // the client opens no more streams; its connection closes when it is done
    }
  }

  private static void release(ByteBuf b) {
    if (b != null) {
      b.release();
    }
  }

  // ---------------------------------------------------------------- answers to the client

  /** True while the client stream is open for the proxy to write on. */
  private boolean downOpen(Pair p) {
    return !p.down.ending && down.byDown.get(p.down.id) == p;
  }

  void writeDownHeaders(Pair p, Http2Headers headers, boolean endOfStream) {
    p.responseStarted = true;
    down.sendHeaders(p, encode(headers), endOfStream);
  }

  /**
   * Runs {@code task} on the event loop (for interceptor chains answering from a worker). Once
   * the proxy has shut the loop down, the task is dropped: the client's connection went with it.
   */
  void execute(Runnable task) {
    try {
      downChannel.eventLoop().execute(task);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      LOG.debug("the proxy closed before an answer from a worker could go out");
    }
  }

  /** The event loop of both legs (also schedules the deadlines of intercepted calls). */
  io.netty.channel.EventLoop eventLoop() {
    return downChannel.eventLoop();
  }

  Pair pair(int downId) {
    return down.byDown.get(downId);
  }

  /** Answers an intercepted stream: headers if not yet sent, then the message. */
  void sendMessage(Pair p, ByteBuf framed) {
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
    down.send(p, framed, false, 0);
  }

  /** Resets the backend stream of {@code p} with {@code code}, if it has one. */
  private void resetBackend(Pair p, long code) {
    Upstream u = p.up;
    if (u != null) {
      u.run(() -> u.reset(p, code));
    }
  }

  /** Resets the backend stream of {@code p}, if it has one: its answer is wanted no more. */
  void abandonBackend(Pair p) {
    resetBackend(p, CANCEL);
  }

  /**
   * Ends a client stream with {@code status} as gRPC does: trailers, or trailers-only when no
   * response headers went out yet.
   */
  void finish(Pair p, Status status, io.grpc.Metadata trailers) {
    if (!downOpen(p)) {
      return;
    }
    writeDownHeaders(p, GrpcWire.trailers(status, trailers, !p.responseStarted), true);
    flushSoon();
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
    Bootstrap b = new Bootstrap().group(downChannel.eventLoop())
        .channel(server.backendChannelType())
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
    for (Pair p : down.byDown.values().toArray(new Pair[0])) {
      if (p.intercepted != null) {
        p.intercepted.cancel();
      }
      if (p.capture != null) {
        p.capture.release();
      }
      release(p.requestBlock);
      p.requestBlock = null;
    }
    down.dropAllPending(down.byDown.values());
    down.byDown.clear();
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
    capture.owner = this;
    Upstream u = upstream();
    p.up = u;
    ByteBuf block = p.requestBlock != null ? p.requestBlock : encode(headers);
    p.requestBlock = null;
    u.run(() -> {
      u.open(p, block, false);
      u.data(p, framedRequest, 0, true); // follows the stream if open() moved it elsewhere
      u.flush();
    });
  }

  /**
   * The backend call of {@code p} failed before it was answered: a collecting call learns it
   * (and decides what the client gets); a relayed one ends the client's stream with
   * {@code status}.
   */
  private void failCaptured(Pair p, Status status) {
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
  void answerCaptured(Pair p, Capture answer, ByteBuf message) {
    if (!downOpen(p) || !answer.gotHeaders) {
      release(message);
      answer.release();
      finish(p, Status.INTERNAL.withDescription("the runtime answered without headers"), null);
      return;
    }
    if (answer.trailers != null) {
      p.responseStarted = true;
      down.sendHeaders(p, answer.take(true), false);
    }
    if (message != null) {
      writeDownMessage(p, message);
    }
    p.responseStarted = true;
    down.sendHeaders(p, answer.take(answer.trailers == null), true);
    answer.release();
    flushSoon();
  }

  /** A backend answer collected for the proxy: headers, body bytes, trailers. */
  static final class Capture {
    private RelayConnection owner;
    private final int limit;
    private final java.util.function.Consumer<Capture> onDone;
    /** The first header block, decoded (null while only its bytes are kept and not needed). */
    Http2Headers headers;
    boolean gotHeaders;
    ByteBuf body;
    Http2Headers trailers;
    /** The blocks of {@link #headers} and {@link #trailers} as they came, when relayable. */
    private ByteBuf headersBlock;
    private ByteBuf trailersBlock;
    boolean done;
    boolean tooLarge;
    /** Why the call failed before the backend answered it (nothing was collected). */
    Status failure;

    Capture(int limit, java.util.function.Consumer<Capture> onDone) {
      this.limit = limit;
      this.onDone = onDone;
    }

    void headers(Http2Headers h, ByteBuf block, boolean endOfStream) {
      if (!gotHeaders) {
        gotHeaders = true;
        headersBlock = block;
        // not decoded when it can go on as it came, unless it ends the call (trailers-only:
        // its status is read)
        headers = h != EmptyHttp2Headers.INSTANCE ? h : endOfStream ? decode(block) : null;
      } else if (trailers == null) {
        trailers = h;
        trailersBlock = block;
      } else {
        RelayConnection.release(block);
      }
      if (endOfStream) {
        finish();
      }
    }

    private static Http2Headers decode(ByteBuf block) {
      try {
        return HeaderBlocks.decodeLater(block.duplicate(), MAX_HEADER_LIST);
      } catch (Http2Exception e) {
        return new DefaultHttp2Headers(); // read as an answer without a status
      }
    }

    /** The first header block (or the trailers), to send: as it came, or encoded again. */
    private ByteBuf take(boolean first) {
      ByteBuf b = first ? headersBlock : trailersBlock;
      if (first) {
        headersBlock = null;
      } else {
        trailersBlock = null;
      }
      return b != null ? b : owner.encode(first ? headers : trailers);
    }

    void data(ByteBuf data, boolean endOfStream) {
      if (!tooLarge) {
        if (body == null) {
          body = Unpooled.buffer(data.readableBytes());
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

    /** The backend call failed unanswered: releases what was collected and says why. */
    void fail(Status why) {
      release();
      failure = why;
      finish();
    }

    void release() {
      if (body != null) {
        body.release();
        body = null;
      }
      RelayConnection.release(headersBlock);
      RelayConnection.release(trailersBlock);
      headersBlock = null;
      trailersBlock = null;
    }
  }

  /** A connection to the backend, paired with this client connection. */
  final class Upstream extends Leg {
    static final int CONNECTING = 0;
    static final int READY = 1;
    static final int DRAINING = 2;
    static final int CLOSED = 3;

    int state = CONNECTING;
    /** The runtime sent HEADERS or DATA since the client's last PING went to it. */
    boolean sentSincePing;
    private Channel ch;
    private String failure;
    private int nextId = 1;
    private final ArrayDeque<Runnable> pending = new ArrayDeque<>();
    private final IntObjectMap<Pair> byUp = new IntObjectHashMap<>();

    Upstream() {
      super(false);
    }

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
      if (pingsToClient.size() < MAX_FORWARDED_PINGS) {
        pingsToClient.add(new ForwardedPing(this, data));
        down.pingFrame(data, false);
      } else {
        pingFrame(data, true);
      }
    }

    @Override
    public void onPingAckRead(ChannelHandlerContext ctx, long data) {
      if (ForwardedPing.take(pingsToBackend, this, data) != null) {
        down.pingFrame(data, true);
      } // else an ack to a PING the proxy did not send on: dropped
    }

    /**
     * This leg is gone: the client's acks to its PINGs go nowhere, and the client's PINGs it
     * took with it are acked by the proxy (the client's connection is still alive).
     */
    private void forgetPings() {
      pingsToClient.removeIf(f -> f.up() == this);
      for (java.util.Iterator<ForwardedPing> i = pingsToBackend.iterator(); i.hasNext(); ) {
        ForwardedPing f = i.next();
        if (f.up() == this) {
          i.remove();
          down.pingFrame(f.data(), true);
        }
      }
    }

    @Override
    boolean mustDecode(int streamId) {
      // a collected answer's trailers (its first block only if it cannot go on as it came)
      Pair p = byUp.get(streamId);
      return p != null && p.capture != null && p.capture.gotHeaders;
    }

    @Override
    Half half(Pair p) {
      return p.upHalf;
    }

    @Override
    Leg other(Pair p) {
      return down;
    }

    @Override
    Pair stream(int id) {
      return byUp.get(id);
    }

    @Override
    Iterable<Pair> streams() {
      return byUp.values();
    }

    @Override
    void closed(Pair p) {
      byUp.remove(p.upHalf.id);
      if (state == DRAINING && byUp.isEmpty()) {
        ch.close();
      }
    }

    @Override
    String name() {
      return "backend";
    }

    @Override
    int lastPeerStream() {
      return 0;
    }

    @Override
    boolean preface(ByteBuf in) {
      return true;
    }

    void install(Channel channel) {
      ch = channel;
      ch.pipeline().addLast(this);
      ch.closeFuture().addListener(f -> lost());
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      ByteBuf b = ctx.alloc().buffer(PREFACE.length);
      b.writeBytes(PREFACE);
      write(b);
      settingsFrame(false);
      super.channelActive(ctx);
      ready();
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
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
      flush();
      down.flush();
    }

    void failed(String why) {
      LOG.debug("{}", why);
      failure = why;
      state = CLOSED;
      forgetPings();
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
      flushSoon();
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
      forgetPings();
      Pair[] pairs = byUp.values().toArray(new Pair[0]);
      byUp.clear();
      dropAllPending(java.util.Arrays.asList(pairs));
      for (Pair p : pairs) {
        failCaptured(p, Status.UNAVAILABLE.withDescription(failure));
      }
      Runnable r;
      while ((r = pending.poll()) != null) {
        r.run();
      }
      flushSoon();
    }

    void close() {
      if (ch != null) {
        ch.close();
      }
    }

    /** Opens the backend stream for a client stream; owns {@code block}. */
    void open(Pair p, ByteBuf block, boolean endOfStream) {
      if (state == CLOSED || state == DRAINING || nextId < 0) {
        if (state != CLOSED) {
          // went away (or ran out of ids) between the client's headers and now: a fresh
          // connection takes it
          if (up == this) {
            up = null;
          }
          p.up = upstream();
          p.up.run(() -> p.up.open(p, block, endOfStream));
          return;
        }
        block.release();
        failCaptured(p, Status.UNAVAILABLE.withDescription(failure));
        return;
      }
      if (down.byDown.get(p.down.id) != p) {
        block.release(); // the client reset it meanwhile
        return;
      }
      Half h = p.upHalf;
      h.id = nextId;
      nextId += 2;
      h.sendWindow = peerInitialWindow;
      byUp.put(h.id, p);
      sendHeaders(p, block, endOfStream);
    }

    void headers(Pair p, ByteBuf block, boolean endOfStream) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.headers(p, block, endOfStream));
        return;
      }
      if (p.upHalf.id == 0 || byUp.get(p.upHalf.id) != p) {
        block.release();
        return;
      }
      sendHeaders(p, block, endOfStream);
    }

    void data(Pair p, ByteBuf payload, int bytes, boolean endOfStream) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.data(p, payload, bytes, endOfStream));
        return;
      }
      if (p.upHalf.id == 0 || byUp.get(p.upHalf.id) != p) {
        payload.release();
        down.consumed(p, bytes);
        return;
      }
      send(p, payload, endOfStream, bytes);
    }

    void reset(Pair p, long errorCode) {
      if (p.up != this) {
        // the stream was opened on a newer connection (this one went away meanwhile)
        Upstream other = p.up;
        other.run(() -> other.reset(p, errorCode));
        return;
      }
      if (p.upHalf.id == 0 || byUp.get(p.upHalf.id) != p) {
        return;
      }
      if (p.capture != null && !p.capture.done) {
        p.capture.release();
      }
      resetNow(p, errorCode);
    }

    @Override
    void streamError(Pair p, Http2Exception e) {
      resetNow(p, e.error().code());
      failCaptured(p, Status.INTERNAL.withDescription("the runtime broke HTTP/2 on the stream: "
          + e.getMessage()));
    }

    // backend frames

    @Override
    public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers,
        int padding, boolean endOfStream) {
      sentSincePing = true;
      ByteBuf block = blocks.take();
      Pair p = byUp.get(streamId);
      if (p == null) {
        release(block);
        return;
      }
      if (endOfStream) {
        gotEnd(p, p.upHalf);
      }
      if (p.capture != null) {
        p.capture.headers(headers, block, endOfStream);
        return;
      }
      if (!downOpen(p)) {
        release(block);
        return;
      }
      p.responseStarted = true;
      down.sendHeaders(p, block != null ? block : encode(headers), endOfStream);
    }

    @Override
    public int onDataRead(ChannelHandlerContext c, int streamId, ByteBuf data, int padding,
        boolean endOfStream) {
      sentSincePing = true;
      int bytes = data.readableBytes() + padding;
      Pair p = byUp.get(streamId);
      if (p == null || p.upHalf.gotEnd) {
        consumed(null, bytes);
        return bytes;
      }
      if (endOfStream) {
        gotEnd(p, p.upHalf);
      }
      if (p.capture != null) {
        consumed(p, bytes);
        p.capture.data(data, endOfStream);
        return bytes;
      }
      if (!downOpen(p)) {
        consumed(p, bytes);
        return bytes;
      }
      down.send(p, data.retain(), endOfStream, bytes);
      return bytes;
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
      Pair p = byUp.get(streamId);
      if (p == null) {
        return;
      }
      boolean answered = p.upHalf.gotEnd;
      p.upHalf.sentEnd = true;
      resetNow(p, errorCode); // writes nothing: sentEnd is set
      if (p.capture != null && p.capture.done) {
        return; // the answer is complete: the proxy finishes the call
      }
      if (p.capture != null) {
        p.capture.release();
      }
      if (down.byDown.get(p.down.id) != p) {
        return; // over on the client's side too
      }
      if (answered && errorCode == NO_ERROR) {
        // a complete answer, and the runtime wants no more of the request: the client gets
        // the answer, then the same word
        down.sendResetAfter(p, NO_ERROR);
        return;
      }
      // the client learns it as the runtime said it (at a deadline: CANCEL, which the client
      // reports as its deadline passing)
      down.resetNow(p, errorCode);
      if (p.intercepted != null) {
        p.intercepted.cancel();
      }
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext c, int lastStreamId, long errorCode,
        ByteBuf debugData) {
      // no new streams here; the ones up to lastStreamId finish, later ones never ran
      if (state == READY) {
        state = DRAINING;
        draining.add(this);
        if (up == this) {
          up = null;
        }
      }
      for (Pair p : byUp.values().toArray(new Pair[0])) {
        if (p.upHalf.id > lastStreamId) {
          p.upHalf.sentEnd = true;
          resetNow(p, CANCEL);
          failCaptured(p, Status.UNAVAILABLE.withDescription("the runtime "
              + server.backendName() + " is going away and did not take the call"));
        }
      }
      if (state == DRAINING && byUp.isEmpty()) {
        ch.close();
      }
    }
  }
}
