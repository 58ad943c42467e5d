package io.cri4j.imagepull;

import java.time.Instant;
import java.util.List;

/**
 * A snapshot of a pull's progress, published on every change.
 *
 * <p>{@link #percent()} never decreases during a pull and reaches 100 only on success. It is
 * {@code -1} when the backend cannot observe bytes (a CRI runtime without a content service):
 * an honest "unknown" instead of a bar jumping from 0 to 100.
 *
 * @param image the image reference being pulled
 * @param phase where the pull is
 * @param attempt the current attempt, from 1 (0 before the first)
 * @param percent overall percent 0..100, or -1 when unknown
 * @param bytesDone bytes downloaded over all layers seen so far
 * @param bytesTotal total bytes of the layers seen so far (grows as layers are discovered)
 * @param bytesPerSecond recent download rate, 0 when unknown
 * @param layers per-layer progress in discovery order
 * @param message a human-readable note (the last error during back-off, the failure, ...)
 * @param at when this snapshot was taken
 */
public record PullProgress(
        String image,
        Phase phase,
        int attempt,
        int percent,
        long bytesDone,
        long bytesTotal,
        double bytesPerSecond,
        List<LayerProgress> layers,
        String message,
        Instant at) {

    /** Where a pull is. */
    public enum Phase {
        /** Waiting for a free worker. */
        QUEUED,
        /** Asking the runtime whether the image is already present. */
        CHECKING,
        /** An attempt is running. */
        PULLING,
        /** An attempt failed; waiting before the next one. */
        BACKING_OFF,
        /** Done: the image is present. */
        SUCCEEDED,
        /** Gave up: attempts exhausted, deadline passed or a permanent error. */
        FAILED,
        /** Cancelled by the caller or by the puller closing. */
        CANCELLED;

        /** @return true for SUCCEEDED, FAILED and CANCELLED */
        public boolean terminal() {
            return this == SUCCEEDED || this == FAILED || this == CANCELLED;
        }
    }

    /** Copies the layer list. */
    public PullProgress {
        layers = List.copyOf(layers);
        message = message == null ? "" : message;
    }

    /** @return true when {@link #percent()} is meaningful */
    public boolean percentKnown() {
        return percent >= 0;
    }
}
