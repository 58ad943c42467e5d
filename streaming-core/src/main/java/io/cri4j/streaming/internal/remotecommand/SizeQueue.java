package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.TerminalSize;
import io.cri4j.streaming.TerminalSizeQueue;
import java.time.Duration;
import java.util.ArrayDeque;

/** {@link TerminalSizeQueue} fed from the event loop; bounded (oldest sizes dropped first). */
public final class SizeQueue implements TerminalSizeQueue {
    private static final int MAX = 64;
    private final ArrayDeque<TerminalSize> sizes = new ArrayDeque<>();
    private boolean ended;

    /** A queue that has already ended (no TTY). */
    public static SizeQueue endedQueue() {
        SizeQueue q = new SizeQueue();
        q.end();
        return q;
    }

    public synchronized void add(TerminalSize s) {
        if (ended) {
            return;
        }
        if (sizes.size() == MAX) {
            sizes.poll();
        }
        sizes.add(s);
        notifyAll();
    }

    public synchronized void end() {
        ended = true;
        notifyAll();
    }

    @Override
    public synchronized TerminalSize next() throws InterruptedException {
        while (sizes.isEmpty() && !ended) {
            wait();
        }
        return sizes.poll();
    }

    @Override
    public synchronized TerminalSize poll(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (sizes.isEmpty() && !ended) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            wait(Math.max(1, left / 1_000_000), 0);
        }
        return sizes.poll();
    }

    @Override
    public synchronized boolean isEnded() {
        return ended && sizes.isEmpty();
    }
}
