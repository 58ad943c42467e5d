package io.cri4j.imagepull.internal;

import java.util.function.IntSupplier;

/**
 * What {@link io.cri4j.imagepull.ImagePuller} and {@link io.cri4j.imagepull.PullObserver} record,
 * with no Micrometer type in sight: {@link #NONE} without a registry (Micrometer need not be on the
 * class path then), a Micrometer recorder otherwise. Not API.
 */
public interface PullMeters {

    /** Records nothing. */
    PullMeters NONE = (outcome, nanos, bytes) -> {};

    /**
     * The puller's: {@code cri4j_imagepull_pulls_total{outcome}}, {@code
     * cri4j_imagepull_pull_duration_seconds{outcome}}, {@code cri4j_imagepull_pulled_bytes_total}
     * and {@code cri4j_imagepull_pulls_active}.
     *
     * @param registry a {@code MeterRegistry}, or null
     * @param active the jobs running now
     */
    static PullMeters puller(Object registry, IntSupplier active) {
        return registry == null ? NONE : MicrometerPullMeters.create(registry, "pull", active);
    }

    /**
     * The observer's, the same for the pulls others make: {@code
     * cri4j_imagepull_observed_pulls_total{outcome}}, {@code
     * cri4j_imagepull_observed_pull_duration_seconds{outcome}}, {@code
     * cri4j_imagepull_observed_bytes_total} and {@code cri4j_imagepull_observed_pulls_active}.
     */
    static PullMeters observer(Object registry, IntSupplier active) {
        return registry == null ? NONE : MicrometerPullMeters.create(registry, "observed", active);
    }

    /**
     * A pull ended.
     *
     * @param outcome {@code succeeded}, {@code failed} or {@code cancelled}
     * @param bytes bytes it downloaded, as far as known (0 when not)
     */
    void ended(String outcome, long nanos, long bytes);
}
