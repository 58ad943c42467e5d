package io.cri4j.proxy.internal.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2Error;
import java.nio.charset.StandardCharsets;

/**
 * Writes the HTTP/2 frames of one relay leg (RFC 9113 sections 4 and 6), and keeps the peer's
 * settings that shape them: its largest frame, and whether the next header block must start with
 * a dynamic table size update.
 *
 * <p>Small frames (DATA payloads and header blocks below {@link #STAGE_BELOW} bytes, and every
 * control frame) are copied into one staged buffer: one allocation and one pipeline write per
 * flush instead of one per frame. The staged buffer goes out at {@link #flush}, before any frame
 * written as a buffer of its own (so frames keep their order), and when a frame would take it
 * past {@link #STAGED_MAX} bytes. Larger payloads go out as the buffers they came in, behind a
 * staged frame header. Writes after the leg's handler was removed go nowhere.
 */
final class FrameWriter {
    static final int FRAME_HEADER = 9;

    /** The largest frame a peer takes before its SETTINGS say otherwise. */
    static final int DEFAULT_MAX_FRAME = 16_384;

    /**
     * DATA payloads and header blocks below this size are copied into the staged buffer of small
     * frames; larger ones are written as the buffers they came in.
     */
    static final int STAGE_BELOW = 1024;

    /** The staged buffer starts this large and is written once it would pass STAGED_MAX. */
    static final int STAGED_CHUNK = 1024;

    static final int STAGED_MAX = 16 * 1024;
    static final byte DATA = 0x0;
    static final byte HEADERS = 0x1;
    static final byte RST_STREAM = 0x3;
    static final byte SETTINGS = 0x4;
    static final byte PING = 0x6;
    static final byte GOAWAY = 0x7;
    static final byte WINDOW_UPDATE = 0x8;
    static final byte CONTINUATION = 0x9;
    static final int FLAG_END_STREAM = 0x1;
    static final int FLAG_ACK = 0x1;
    static final int FLAG_END_HEADERS = 0x4;
    static final byte[] PREFACE =
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private ChannelHandlerContext ctx;

    /** The peer's SETTINGS_MAX_FRAME_SIZE. */
    int peerMaxFrame = DEFAULT_MAX_FRAME;

    /** The next header block must start with a dynamic table size update (to 0). */
    boolean oweSizeUpdate;

    /** HEADERS or DATA written since the peer's last PING (a PING after them is no strike). */
    boolean answeredSincePing;

    private boolean needsFlush;

    /** Small frames written since the last flush, in one buffer (null: none). */
    private ByteBuf staged;

    /** The connection is gone and its handler with it: frames written now go nowhere. */
    private boolean removed;

    /** Writes through {@code ctx} from now on (the leg's handler was added). */
    void attach(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    /** The leg's handler was removed: drops what is staged; later frames go nowhere. */
    void detach() {
        removed = true;
        if (staged != null) {
            staged.release();
            staged = null;
        }
    }

    /** Writes {@code b} behind the frames staged so far; owns it. */
    void write(ByteBuf b) {
        unstage();
        ctx.write(b, ctx.voidPromise());
        needsFlush = true;
    }

    /**
     * The buffer to write a small frame of {@code bytes} bytes into, behind everything written so
     * far; the frame goes out with the next flush.
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

    /** Writes what is staged and flushes, if anything was written since the last flush. */
    void flush() {
        if (needsFlush) {
            needsFlush = false;
            unstage();
            ctx.flush();
        }
    }

    static void header(ByteBuf b, int length, byte type, int flags, int streamId) {
        b.writeMedium(length).writeByte(type).writeByte(flags).writeInt(streamId);
    }

    // ---------------------------------------------------------------- connection frames

    /** The client connection preface (a backend leg's first bytes). */
    void preface() {
        ByteBuf b = ctx.alloc().buffer(PREFACE.length);
        b.writeBytes(PREFACE);
        write(b);
    }

    /**
     * The relay's SETTINGS, then a connection WINDOW_UPDATE up to {@code window}: no dynamic table
     * (blocks relay as they are), {@code window} for every stream, header lists up to
     * {@code maxHeaderList}, and (to a server) no push.
     */
    void settings(boolean server, int window, long maxHeaderList) {
        ByteBuf b = ctx.alloc().buffer(FRAME_HEADER + 4 * 6 + FRAME_HEADER + 4);
        int n = server ? 3 : 4;
        header(b, n * 6, SETTINGS, 0, 0);
        setting(b, 0x1, 0); // HEADER_TABLE_SIZE
        setting(b, 0x4, window); // INITIAL_WINDOW_SIZE
        setting(b, 0x6, (int) maxHeaderList); // MAX_HEADER_LIST_SIZE
        if (!server) {
            setting(b, 0x2, 0); // ENABLE_PUSH off
        }
        header(b, 4, WINDOW_UPDATE, 0, 0);
        b.writeInt(window - FlowControl.DEFAULT_WINDOW);
        write(b);
    }

    private static void setting(ByteBuf b, int id, int value) {
        b.writeShort(id).writeInt(value);
    }

    void settingsAck() {
        header(stage(FRAME_HEADER), 0, SETTINGS, FLAG_ACK, 0);
    }

    /** A PING, or its ack. */
    void ping(long data, boolean ack) {
        ByteBuf b = stage(FRAME_HEADER + 8);
        header(b, 8, PING, ack ? FLAG_ACK : 0, 0);
        b.writeLong(data);
    }

    void goAway(int lastId, Http2Error error, String why) {
        byte[] debug = why.getBytes(StandardCharsets.UTF_8);
        ByteBuf b = ctx.alloc().buffer(FRAME_HEADER + 8 + debug.length);
        header(b, 8 + debug.length, GOAWAY, 0, 0);
        b.writeInt(lastId).writeInt((int) error.code()).writeBytes(debug);
        write(b);
    }

    /** A WINDOW_UPDATE of stream {@code id} (0: the connection). */
    void windowUpdate(int id, int increment) {
        ByteBuf b = stage(FRAME_HEADER + 4);
        header(b, 4, WINDOW_UPDATE, 0, id);
        b.writeInt(increment);
    }

    // ---------------------------------------------------------------- stream frames

    void rst(int id, long code) {
        ByteBuf b = stage(FRAME_HEADER + 4);
        header(b, 4, RST_STREAM, 0, id);
        b.writeInt((int) code);
    }

    /**
     * A header block (after {@link HeaderBlocks#HEADROOM} bytes of room): one HEADERS frame, or
     * HEADERS and CONTINUATION frames when it is larger than the peer's frames; owns it.
     */
    void headers(int id, ByteBuf block, boolean end) {
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
            // the frame header goes into the block's headroom
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
            header(
                    stage(FRAME_HEADER),
                    n,
                    type,
                    (type == HEADERS ? flags : 0) | (last ? FLAG_END_HEADERS : 0),
                    id);
            write(block.readRetainedSlice(n));
            type = CONTINUATION;
        }
        block.release();
    }

    /** One DATA frame (no larger than the peer's frames: the caller splits); owns {@code data}. */
    void data(int id, ByteBuf data, boolean end) {
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
}
