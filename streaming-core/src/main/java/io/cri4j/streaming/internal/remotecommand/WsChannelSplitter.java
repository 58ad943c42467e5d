package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.internal.io.ReadPieces;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * In front of Netty's WebSocket frame decoder on an exec client: splits off the frames that carry
 * stdout or stderr ({@code channel.k8s.io} binary messages, channel 1 or 2) and passes their
 * payload on as {@link ChannelData} slices of the socket's read buffers, as soon as they are read.
 * Netty's decoder collects each frame in its cumulation buffer and then copies the payload into a
 * frame of its own, two copies of every output byte on the event loop.
 *
 * <p>Only frames that Netty's decoder (client side: unmasked frames, no extensions) would accept
 * as a final binary frame outside a fragmented message are split off: FIN set, RSV 0, opcode 2, no
 * mask, length in minimal encoding and at most {@code maxPayload}, at least a channel byte and one
 * data byte. Every other frame goes to Netty's decoder byte for byte (control frames, text,
 * fragments, other channels); the splitter tracks whether a fragmented message is open, as Netty's
 * decoder does. After a frame that Netty's decoder rejects (or a close frame), everything goes to
 * it: it reports the violation and discards the rest, as without the splitter.
 *
 * <p>Pieces small next to their read buffer are copied ({@link ReadPieces}), so that retained read
 * buffers stay within five times the bytes accounted as buffered.
 */
final class WsChannelSplitter extends ChannelInboundHandlerAdapter {
    private static final int MAX_HEADER =
            2 + 8 + 4 + 1; // first bytes, 64-bit length, mask, channel

    /** Bytes of a stdout or stderr message, for {@link WsCommandClient}. */
    static final class ChannelData extends DefaultByteBufHolder {
        private final int channel;

        ChannelData(int channel, ByteBuf data) {
            super(data);
            this.channel = channel;
        }

        int channel() {
            return channel;
        }
    }

    private enum State {
        HEADER,
        SPLIT,
        FORWARD,
        PASS_THROUGH
    }

    private final long maxPayload;

    /** The header of the frame being read (copied: at most 15 bytes per frame). */
    private final ByteBuf header = Unpooled.buffer(MAX_HEADER, MAX_HEADER);

    private State state = State.HEADER;

    /** Payload bytes of the current frame not yet passed on. */
    private long remaining;

    private int channel;

    /** Whether a fragmented message is open (Netty's decoder then wants a continuation frame). */
    private boolean fragmented;

    WsChannelSplitter(long maxPayload) {
        this.maxPayload = maxPayload;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf in)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            while (in.isReadable() && !ctx.isRemoved()) {
                switch (state) {
                    case HEADER -> readHeader(ctx, in);
                    case SPLIT -> {
                        int n = (int) Math.min(remaining, in.readableBytes());
                        ByteBuf piece = ReadPieces.take(ctx.alloc(), in, n);
                        remaining -= n;
                        if (remaining == 0) {
                            state = State.HEADER;
                        }
                        ctx.fireChannelRead(new ChannelData(channel, piece));
                    }
                    case FORWARD -> {
                        int n = (int) Math.min(remaining, in.readableBytes());
                        remaining -= n;
                        if (remaining == 0) {
                            state = State.HEADER;
                        }
                        ctx.fireChannelRead(in.readRetainedSlice(n));
                    }
                    case PASS_THROUGH ->
                            ctx.fireChannelRead(in.readRetainedSlice(in.readableBytes()));
                    default -> throw new IllegalStateException(state.toString());
                }
            }
        } finally {
            in.release();
        }
    }

    /** Copies header bytes from {@code in} until {@code n} are there; false when {@code in} ran out. */
    private boolean fill(ByteBuf in, int n) {
        int missing = n - header.readableBytes();
        if (missing > 0) {
            header.writeBytes(in, Math.min(missing, in.readableBytes()));
        }
        return header.readableBytes() >= n;
    }

    private void readHeader(ChannelHandlerContext ctx, ByteBuf in) {
        if (!fill(in, 2)) {
            return;
        }
        int b0 = header.getUnsignedByte(0);
        int b1 = header.getUnsignedByte(1);
        boolean fin = (b0 & 0x80) != 0;
        int rsv = b0 & 0x70;
        int opcode = b0 & 0x0F;
        boolean masked = (b1 & 0x80) != 0;
        int len1 = b1 & 0x7F;
        int headerLength = 2 + (len1 == 126 ? 2 : len1 == 127 ? 8 : 0) + (masked ? 4 : 0);
        if (!fill(in, headerLength)) {
            return;
        }
        long length =
                len1 == 126 ? header.getUnsignedShort(2) : len1 == 127 ? header.getLong(2) : len1;
        boolean control = opcode > 7;
        boolean valid =
                rsv == 0
                        && !masked
                        && (len1 != 126 || length >= 126)
                        && (len1 != 127 || length >= 65536) // also rejects lengths >= 2^63
                        && length <= maxPayload
                        && (control
                                ? fin
                                        && len1 <= 125
                                        && (opcode == 8 || opcode == 9 || opcode == 10)
                                        && !(opcode == 8 && len1 == 1)
                                : (opcode == 0 || opcode == 1 || opcode == 2)
                                        && (opcode == 0) == fragmented);
        if (valid && fin && opcode == 2 && length >= 2) {
            if (!fill(in, headerLength + 1)) {
                return;
            }
            int ch = header.getUnsignedByte(headerLength);
            if (ch == 1 || ch == 2) {
                header.clear();
                channel = ch;
                remaining = length - 1;
                state = State.SPLIT;
                return;
            }
        }
        int have = header.readableBytes();
        ByteBuf bytes = ctx.alloc().buffer(have).writeBytes(header);
        header.clear();
        if (!valid || opcode == 8) {
            state = State.PASS_THROUGH; // Netty's decoder fails the connection, or it is closing
        } else {
            if (!control) {
                fragmented = !fin;
            }
            remaining = headerLength + length - have;
            state = remaining == 0 ? State.HEADER : State.FORWARD;
        }
        ctx.fireChannelRead(bytes);
    }
}
