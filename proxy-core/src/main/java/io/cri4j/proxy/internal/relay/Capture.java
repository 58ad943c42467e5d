package io.cri4j.proxy.internal.relay;

import io.grpc.Status;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.EmptyHttp2Headers;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.function.Consumer;

/**
 * The backend's answer to an intercepted call, collected for the proxy instead of relayed: its
 * headers, body bytes (up to a limit) and trailers, or why the call failed before the backend
 * answered. The header blocks are kept as they came when they can go on to the client as they
 * are ({@link RelayConnection#answerCaptured}); the first block is decoded only when it ends the
 * call (trailers-only: its status is read). Told once, when complete or failed.
 */
public final class Capture {
    /** Encodes headers again when their block cannot go on as it came (set when forwarded). */
    RelayConnection owner;

    private final int limit;
    private final Consumer<Capture> onDone;

    /** The first header block, decoded (null while only its bytes are kept and not needed). */
    public Http2Headers headers;

    boolean gotHeaders;
    public ByteBuf body;
    public Http2Headers trailers;

    /** The blocks of {@link #headers} and {@link #trailers} as they came, when relayable. */
    private ByteBuf headersBlock;

    private ByteBuf trailersBlock;
    boolean done;
    public boolean tooLarge;

    /** Why the call failed before the backend answered it (nothing was collected). */
    public Status failure;

    /**
     * @param limit most body bytes kept; beyond, the body is dropped and {@link #tooLarge} set
     * @param onDone told once, when the answer is complete or the call failed
     */
    public Capture(int limit, Consumer<Capture> onDone) {
        this.limit = limit;
        this.onDone = onDone;
    }

    /**
     * A header block of the answer: the first (response headers, or trailers-only), then the
     * trailers; later ones are dropped. {@code h} is empty when the block was not decoded.
     */
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
            return HeaderBlocks.decodeLater(block.duplicate(), RelayConnection.MAX_HEADER_LIST);
        } catch (Http2Exception e) {
            return new DefaultHttp2Headers(); // read as an answer without a status
        }
    }

    /** The first header block (or the trailers), to send: as it came, or encoded again. */
    ByteBuf take(boolean first) {
        ByteBuf b = first ? headersBlock : trailersBlock;
        if (first) {
            headersBlock = null;
        } else {
            trailersBlock = null;
        }
        return b != null ? b : owner.encode(first ? headers : trailers);
    }

    /** Body bytes of the answer (copied). */
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

    /** Releases what was collected (body and kept blocks). */
    public void release() {
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
