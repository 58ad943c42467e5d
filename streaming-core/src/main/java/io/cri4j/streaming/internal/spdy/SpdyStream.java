package io.cri4j.streaming.internal.spdy;

import io.cri4j.streaming.internal.io.InboundPipe;
import io.cri4j.streaming.internal.io.WriterBuffers;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.spdy.DefaultSpdyDataFrame;
import io.netty.handler.codec.spdy.DefaultSpdyRstStreamFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynReplyFrame;
import io.netty.handler.codec.spdy.SpdyStreamStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One SPDY stream, with spdystream's semantics: {@link #output()} writes DATA frames and its
 * {@code close()} sends an empty DATA frame with FIN (half-close); {@link #reset()} sends
 * RST_STREAM CANCEL; {@link #input()} ends at the peer's FIN and fails after a reset.
 */
public final class SpdyStream {
    /** Largest DATA payload we send in one frame. */
    static final int MAX_DATA = 32 * 1024;

    private final SpdySession session;
    private final int id;
    private final Map<String, List<String>> headers;
    private final InboundPipe in;
    private final Output out = new Output();
    final CompletableFuture<Void> replied = new CompletableFuture<>();
    private volatile boolean localFinished;
    private volatile boolean remoteFinished;
    private volatile boolean reset;

    SpdyStream(SpdySession session, int id, Map<String, List<String>> headers, InboundPipe in) {
        this.session = session;
        this.id = id;
        this.headers = headers;
        this.in = in;
    }

    /** Stream id. */
    public int id() {
        return id;
    }

    /** Headers of the SYN_STREAM, names in lower case. */
    public Map<String, List<String>> headers() {
        return headers;
    }

    /** First value of a header (name case-insensitive), or null. */
    public String header(String name) {
        List<String> v = headers.get(name.toLowerCase(java.util.Locale.ROOT));
        return v == null || v.isEmpty() ? null : v.get(0);
    }

    /** Bytes from the peer. */
    public InputStream input() {
        return in;
    }

    /** Bytes to the peer. */
    public OutputStream output() {
        return out;
    }

    /** Completes when the peer replied (client side) or we replied (server side). */
    public CompletableFuture<Void> replyFuture() {
        return replied;
    }

    /** Accepts a peer-initiated stream with an empty SYN_REPLY (as spdystream's SendReply). */
    public void reply() {
        if (replied.isDone()) {
            return;
        }
        replied.complete(null);
        DefaultSpdySynReplyFrame f = new DefaultSpdySynReplyFrame(id);
        // spdystream replies with no headers, but Netty encodes an empty header block as zero
        // bytes,
        // which Go's framer cannot inflate (it expects a zlib block holding a zero count). One
        // harmless header keeps the block non-empty; spdystream ignores reply headers.
        f.headers().set(":status", "200");
        session.send(f);
    }

    /** Whether we have sent FIN or RST. */
    public boolean isLocalFinished() {
        return localFinished || reset;
    }

    /** Whether the peer sent FIN or RST. */
    public boolean isRemoteFinished() {
        return remoteFinished || reset;
    }

    /** Half-closes our side (empty DATA with FIN); no-op when already finished. */
    public void closeOutput() {
        synchronized (out) {
            if (localFinished || reset) {
                return;
            }
            localFinished = true;
        }
        session.send(new DefaultSpdyDataFrame(id, session.alloc().buffer(0)).setLast(true));
        session.maybeRemove(this);
    }

    /**
     * Tears the stream down: sends RST_STREAM CANCEL unless our side already sent FIN (as
     * spdystream's Reset), and fails local readers and writers.
     */
    public void reset() {
        boolean sendRst;
        synchronized (out) {
            if (reset) {
                return;
            }
            sendRst = !localFinished;
            reset = true;
        }
        in.abort(new IOException("stream " + id + " reset locally"));
        fireEnd();
        if (sendRst) {
            session.send(new DefaultSpdyRstStreamFrame(id, SpdyStreamStatus.CANCEL));
        }
        session.remove(this);
    }

    // --- called on the event loop by the session ---

    private volatile java.util.function.Consumer<byte[]> listener;
    private volatile Runnable endListener;
    private final java.util.concurrent.atomic.AtomicBoolean ended =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** Like {@link #listen(java.util.function.Consumer)}, plus {@code onEnd} once at FIN, reset or close. */
    public void listen(java.util.function.Consumer<byte[]> onData, Runnable onEnd) {
        this.endListener = onEnd;
        listen(onData);
        if (remoteFinished || reset) {
            fireEnd();
        }
    }

    private void fireEnd() {
        Runnable r = endListener;
        if (r != null && ended.compareAndSet(false, true)) {
            r.run();
        }
    }

    /**
     * Delivers inbound data to {@code onData} on the event loop instead of {@link #input()} (for
     * small control streams such as resize, so they need no reader thread). Must not block.
     */
    public void listen(java.util.function.Consumer<byte[]> onData) {
        this.listener = onData;
    }

    void onData(ByteBuf data, boolean last) {
        if (data.isReadable()) {
            java.util.function.Consumer<byte[]> l = listener;
            if (l != null) {
                byte[] b = new byte[data.readableBytes()];
                data.readBytes(b);
                l.accept(b);
            } else {
                // no copy: the pipe releases it; the reader is woken when the socket read completes
                in.offer(data.readRetainedSlice(data.readableBytes()), session.wakeups());
            }
        }
        if (last) {
            onRemoteFin();
        }
    }

    void onRemoteFin() {
        remoteFinished = true;
        in.finish();
        fireEnd();
        session.maybeRemove(this);
    }

    void onRemoteReset(String why) {
        reset = true;
        // As spdystream: a reset or a closed connection ends the reader with EOF after the data
        // that already arrived (Go hands every received DATA frame to the reader first).
        in.finish();
        fireEnd();
        if (!replied.isDone()) {
            replied.completeExceptionally(new IOException("stream " + id + " " + why));
        }
    }

    private final class Output extends OutputStream {
        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            java.util.Objects.checkFromIndexSize(off, len, b.length);
            while (len > 0) {
                if (reset) {
                    throw new IOException("stream " + id + " was reset");
                }
                if (localFinished) {
                    throw new IOException("write on closed stream " + id);
                }
                int n = Math.min(len, MAX_DATA);
                // encoded here, on the writer's thread: the event loop only writes it out
                session.sendBlocking(
                        SpdyCodec.dataFrame(WriterBuffers.allocator(), id, false, b, off, n));
                off += n;
                len -= n;
            }
        }

        @Override
        public void close() {
            closeOutput();
        }
    }
}
