package io.cri4j.imagepull;

import java.time.Duration;
import java.time.Instant;

/**
 * The puller's source of time: the clock and delayed tasks (back-off waits, attempt timeouts,
 * active deadlines). The default uses the system clock and a scheduler thread owned by the
 * puller; tests pass a virtual-time implementation to check back-off sequences without waiting.
 */
public interface PullScheduler {

    /** @return the current time */
    Instant now();

    /**
     * Runs {@code task} after {@code delay}.
     *
     * @param delay the delay (zero or positive)
     * @param task what to run; it must not block
     * @return a handle to cancel it
     */
    Cancellable schedule(Duration delay, Runnable task);

    /** A scheduled task that may be cancelled. */
    interface Cancellable {
        /** Cancels the task if it has not run yet. */
        void cancel();
    }
}
