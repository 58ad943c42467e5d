package io.cri4j.streaming.internal.spdy;

import io.cri4j.streaming.internal.io.ReadPieces;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.spdy.DefaultSpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyFrameCodec;
import io.netty.handler.codec.spdy.SpdyVersion;

/**
 * Netty's SPDY/3.1 frame codec with inbound DATA frames split off before its decoder, so their
 * payloads reach the streams as slices of the socket's read buffers: Netty's decoder collects
 * every frame that spans two socket reads in its cumulation buffer, which copies nearly every
 * payload byte once more when 32 KiB frames arrive in 64 KiB reads. Control frames (their common
 * header and body, byte for byte) still go through Netty's decoder, and outbound frames through
 * its encoder, except DATA frames that a writer thread encoded itself ({@link #dataFrame}, the
 * same bytes as Netty's encoder): they pass as {@link ByteBuf}s, so their payload is copied once,
 * on the writer's thread, and not a second time on the event loop.
 *
 * <p>The splitter reads only the common header (SPDY/3.1 section 2.2): the control bit, and for
 * DATA frames the stream id, the FIN flag and the 24-bit length. A DATA frame's payload is passed
 * on as soon as some of it is read, as one or more {@code SpdyDataFrame}s of the frame's stream,
 * the last of them with the frame's FIN flag (as Netty's decoder does for frames larger than its
 * chunk size). A DATA frame with stream id 0 is invalid: it and everything after it goes to
 * Netty's decoder, which reports the protocol error and discards the rest, as without the splitter.
 *
 * <p>A slice keeps its whole read buffer alive until the reader consumed it; pieces small next to
 * their read buffer are copied instead ({@link ReadPieces}).
 */
final class SpdyCodec extends SpdyFrameCodec {
    private static final int HEADER_SIZE = 8;
    private static final int FLAG_FIN = 0x01;

    private enum State {
        HEADER,
        CONTROL,
        DATA,
        PASS_THROUGH
    }

    /** A common header that arrived split across reads (heap, 8 bytes). */
    private final ByteBuf header = Unpooled.buffer(HEADER_SIZE, HEADER_SIZE);

    private State state = State.HEADER;

    /** Bytes of the current frame's body not yet passed on. */
    private int remaining;

    private int streamId;
    private boolean fin;

    /** Whether Netty's decoder got bytes in the current socket read. */
    private boolean decoderRead;

    SpdyCodec() {
        // maxChunkSize 64 KiB (inbound DATA does not reach it), 64 KiB header blocks, default zlib.
        super(SpdyVersion.SPDY_3_1, 64 * 1024, 64 * 1024, 6, 15, 8);
    }

    /**
     * A complete DATA frame (SPDY/3.1 section 2.2.2: stream id with the control bit clear, flags,
     * 24-bit length, payload) holding {@code len} bytes of {@code b}; write it to the channel as is.
     */
    static ByteBuf dataFrame(
            ByteBufAllocator alloc, int streamId, boolean fin, byte[] b, int off, int len) {
        if (len > 0xFFFFFF) {
            throw new IllegalArgumentException("DATA payload too large: " + len);
        }
        ByteBuf frame = alloc.buffer(HEADER_SIZE + len);
        frame.writeInt(streamId & 0x7FFFFFFF);
        frame.writeByte(fin ? FLAG_FIN : 0);
        frame.writeMedium(len);
        frame.writeBytes(b, off, len);
        return frame;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise)
            throws Exception {
        if (msg instanceof ByteBuf frame) {
            ctx.write(frame, promise); // encoded by dataFrame()
        } else {
            super.write(ctx, msg, promise);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (!(msg instanceof ByteBuf in)) {
            super.channelRead(ctx, msg);
            return;
        }
        try {
            while (in.isReadable() && !ctx.isRemoved()) {
                switch (state) {
                    case HEADER -> readHeader(ctx, in);
                    case CONTROL -> {
                        int n = Math.min(remaining, in.readableBytes());
                        remaining -= n;
                        if (remaining == 0) {
                            state = State.HEADER;
                        }
                        toDecoder(ctx, in.readRetainedSlice(n));
                    }
                    case DATA -> {
                        int n = Math.min(remaining, in.readableBytes());
                        ByteBuf piece = ReadPieces.take(ctx.alloc(), in, n);
                        remaining -= n;
                        boolean last = remaining == 0 && fin;
                        if (remaining == 0) {
                            state = State.HEADER;
                        }
                        ctx.fireChannelRead(
                                new DefaultSpdyDataFrame(streamId, piece).setLast(last));
                    }
                    case PASS_THROUGH -> toDecoder(ctx, in.readRetainedSlice(in.readableBytes()));
                    default -> throw new IllegalStateException(state.toString());
                }
            }
        } finally {
            in.release();
        }
    }

    private void readHeader(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
        ByteBuf h;
        boolean buffered = header.isReadable() || in.readableBytes() < HEADER_SIZE;
        if (buffered) {
            header.writeBytes(
                    in, Math.min(HEADER_SIZE - header.readableBytes(), in.readableBytes()));
            if (header.readableBytes() < HEADER_SIZE) {
                return;
            }
            h = header;
        } else {
            h = in;
        }
        int at = h.readerIndex();
        boolean control = (h.getByte(at) & 0x80) != 0;
        int flags = h.getUnsignedByte(at + 4);
        int length = h.getUnsignedMedium(at + 5);
        int id = h.getInt(at) & 0x7FFFFFFF;
        if (control || id == 0) {
            ByteBuf commonHeader =
                    buffered
                            ? ctx.alloc().buffer(HEADER_SIZE).writeBytes(header)
                            : in.readRetainedSlice(HEADER_SIZE);
            header.clear();
            if (control) {
                remaining = length;
                state = length == 0 ? State.HEADER : State.CONTROL;
            } else {
                state = State.PASS_THROUGH; // invalid DATA frame: Netty's decoder fails the session
            }
            toDecoder(ctx, commonHeader);
            return;
        }
        if (buffered) {
            header.clear();
        } else {
            in.skipBytes(HEADER_SIZE);
        }
        streamId = id;
        fin = (flags & FLAG_FIN) != 0;
        if (length == 0) {
            state = State.HEADER;
            ctx.fireChannelRead(new DefaultSpdyDataFrame(id).setLast(fin));
        } else {
            remaining = length;
            state = State.DATA;
        }
    }

    private void toDecoder(ChannelHandlerContext ctx, ByteBuf bytes) throws Exception {
        decoderRead = true;
        super.channelRead(ctx, bytes);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        if (decoderRead) {
            decoderRead = false;
            super.channelReadComplete(ctx);
        } else {
            // Netty's codec asks for another read when its decoder produced no frame while
            // auto-read is off; without control bytes that would read past our back-pressure.
            ctx.fireChannelReadComplete();
        }
    }
}
