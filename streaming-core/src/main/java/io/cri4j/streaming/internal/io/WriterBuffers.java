package io.cri4j.streaming.internal.io;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * The allocator for frames that a writer thread (a runtime's or an application's, not an event
 * loop) encodes before handing them to a channel. Netty's default allocator kept allocating (and
 * zeroing) new chunks for such buffers, which are allocated on one thread and released on the
 * event loop after the write: about a fifth of an exec's runtime thread's samples. The pooled
 * allocator reuses its chunks for them.
 */
public final class WriterBuffers {
    private WriterBuffers() {}

    /** The allocator to use for a frame built off the event loop. */
    public static ByteBufAllocator allocator() {
        return PooledByteBufAllocator.DEFAULT;
    }
}
