package io.cri4j.imagepull;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.function.Consumer;

/**
 * A submitted pull: its result, its live progress and a way to cancel it.
 *
 * <p>The {@link #result()} future completes with a {@link PullResult}, or exceptionally with an
 * {@link ImagePullException} (naming the image and cause) or a
 * {@link java.util.concurrent.CancellationException} after {@link #cancel()}.
 */
public interface PullJob {

    /** @return the image reference */
    String image();

    /** @return the future result; cancelling it cancels the pull */
    CompletableFuture<PullResult> result();

    /** @return the latest progress snapshot */
    PullProgress progress();

    /**
     * Live progress: every snapshot from subscription on, then {@code onComplete} after the
     * terminal snapshot. Each subscriber gets its items in order on the puller's event threads;
     * a subscriber that falls far behind loses intermediate snapshots, never the terminal one.
     *
     * @return the publisher
     */
    Flow.Publisher<PullProgress> progressPublisher();

    /**
     * Calls {@code listener} with the current snapshot and then with each later one (in order, on
     * an event thread), so a listener added after {@code pull()} returned misses no state.
     *
     * @param listener the listener
     * @return this job
     */
    PullJob onProgress(Consumer<PullProgress> listener);

    /**
     * Cancels the pull: the running attempt is aborted (within a second), no retry follows, and
     * the result completes with a {@link java.util.concurrent.CancellationException}.
     *
     * @return true if this call cancelled it, false if it had already finished
     */
    boolean cancel();
}
