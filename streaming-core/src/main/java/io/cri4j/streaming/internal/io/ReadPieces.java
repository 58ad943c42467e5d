package io.cri4j.streaming.internal.io;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * How a decoder passes on a piece of a socket read that a reader thread consumes later: as a
 * slice of the read buffer (no copy), unless the piece is small next to that buffer. A slice keeps
 * its whole read buffer alive until the reader consumed it; a piece smaller than a fifth of its
 * buffer is copied instead, so what is retained is at most five times what is accounted as
 * buffered (many small frames in one read cost one small copy each). A fifth: a client reads up to
 * 128 KiB at once, and the data of a full 32 KiB {@code channel.k8s.io} message (32 KiB less its
 * channel byte) is one byte short of a quarter of that.
 */
public final class ReadPieces {
    private ReadPieces() {}

    /** The next {@code n} readable bytes of {@code in}, as a retained slice or as a copy. */
    public static ByteBuf take(ByteBufAllocator alloc, ByteBuf in, int n) {
        return n < in.capacity() / 5 ? alloc.buffer(n).writeBytes(in, n) : in.readRetainedSlice(n);
    }
}
