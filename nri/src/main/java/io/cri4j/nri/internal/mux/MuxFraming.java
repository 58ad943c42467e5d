package io.cri4j.nri.internal.mux;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * Writes one ttrpc frame to a connection of NRI's multiplexer, cut into mux frames the way a Go
 * peer's ttrpc writes it (through a 4096-byte {@code bufio.Writer}): one mux frame when the ttrpc
 * frame fits in 4096 bytes, else one of its first 4096 bytes and one of the rest. The cut
 * matters: Go's multiplexer hands each mux frame to ttrpc's 4096-byte {@code bufio.Reader} in one
 * read, and a frame that does not fit where that reader expects one fails with {@code ENOMEM}.
 */
public final class MuxFraming {

    /** The buffer size of Go's {@code bufio} reader and writer around a ttrpc connection. */
    public static final int GO_BUFIO_SIZE = 4096;

    private MuxFraming() {}

    /** The mux frames carrying {@code ttrpcFrame} on {@code connId}, as one buffer. */
    public static ByteBuf frames(ByteBufAllocator alloc, int connId, byte[] ttrpcFrame) {
        int first = Math.min(ttrpcFrame.length, GO_BUFIO_SIZE);
        int rest = ttrpcFrame.length - first;
        ByteBuf out =
                alloc.buffer(ttrpcFrame.length + (rest > 0 ? 2 : 1) * MuxFrameParser.HEADER_LENGTH);
        out.writeInt(connId).writeInt(first).writeBytes(ttrpcFrame, 0, first);
        if (rest > 0) {
            out.writeInt(connId).writeInt(rest).writeBytes(ttrpcFrame, first, rest);
        }
        return out;
    }

    /** The mux frames carrying the readable bytes of {@code ttrpcFrame} on {@code connId}, as one buffer. */
    public static ByteBuf frames(ByteBufAllocator alloc, int connId, ByteBuf ttrpcFrame) {
        int length = ttrpcFrame.readableBytes();
        int first = Math.min(length, GO_BUFIO_SIZE);
        int rest = length - first;
        ByteBuf out = alloc.buffer(length + (rest > 0 ? 2 : 1) * MuxFrameParser.HEADER_LENGTH);
        int at = ttrpcFrame.readerIndex();
        out.writeInt(connId).writeInt(first).writeBytes(ttrpcFrame, at, first);
        if (rest > 0) {
            out.writeInt(connId).writeInt(rest).writeBytes(ttrpcFrame, at + first, rest);
        }
        return out;
    }
}
