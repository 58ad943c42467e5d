package io.cri4j.streaming;

import java.time.Duration;

/**
 * Terminal size events of a TTY session, in arrival order. The queue ends (returns {@code null})
 * when the client closes its resize stream or the session ends.
 */
public interface TerminalSizeQueue {
    /**
     * Waits for the next size.
     *
     * @return the next size, or {@code null} when no more sizes will come
     * @throws InterruptedException when the waiting thread is interrupted
     */
    TerminalSize next() throws InterruptedException;

    /**
     * Waits at most {@code timeout} for the next size.
     *
     * @return the next size, or {@code null} on timeout or when the queue has ended
     * @throws InterruptedException when the waiting thread is interrupted
     */
    TerminalSize poll(Duration timeout) throws InterruptedException;

    /** Whether the queue has ended and is empty. */
    boolean isEnded();
}
