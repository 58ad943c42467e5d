package io.cri4j.streaming.internal.io;

import java.util.ArrayList;
import java.util.List;

/**
 * Wake-ups of {@link InboundPipe} readers deferred to the end of a socket read: a connection
 * handler offers every frame of a read with its batch and calls {@link #flush()} from
 * {@code channelReadComplete} (and whenever it ends pipes otherwise), so a reader waiting for data
 * is woken once per read and not once per frame; waking a thread costs far more than queueing a
 * frame. Used on one event loop only.
 */
public final class ReaderWakeups {
    private final List<InboundPipe> pending = new ArrayList<>(4);

    void add(InboundPipe pipe) {
        pending.add(pipe);
    }

    /** Wakes the readers of all pipes offered to since the last flush. */
    public void flush() {
        int n = pending.size();
        if (n == 0) {
            return;
        }
        for (int i = 0; i < n; i++) {
            pending.get(i).wake();
        }
        pending.clear();
    }
}
