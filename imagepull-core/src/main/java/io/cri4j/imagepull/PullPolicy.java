package io.cri4j.imagepull;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How hard to try for one image: the retry and time limits of a pull.
 *
 * <p>Defaults follow OpenKruise's kruise-daemon: {@value #DEFAULT_BACKOFF_LIMIT} retries (so up to
 * four attempts), {@link #DEFAULT_ATTEMPT_TIMEOUT} per attempt, back-off starting at
 * {@link #DEFAULT_INITIAL_BACKOFF} and doubling up to {@link #DEFAULT_MAX_BACKOFF}, no active
 * deadline.
 *
 * @param attemptTimeout time allowed for one attempt; positive, at most {@link #MAX_DURATION}
 * @param backoffLimit retries after the first attempt fails (0 = a single attempt)
 * @param activeDeadline time allowed for the whole pull across attempts and back-offs, if any;
 *     positive, at most {@link #MAX_DURATION}
 * @param initialBackoff wait after the first failed attempt
 * @param maxBackoff cap of the doubling wait
 */
public record PullPolicy(
        Duration attemptTimeout,
        int backoffLimit,
        Optional<Duration> activeDeadline,
        Duration initialBackoff,
        Duration maxBackoff) {

    /** Per-attempt timeout: 10 minutes. */
    public static final Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofMinutes(10);

    /** Retries after a failed first attempt: 3. */
    public static final int DEFAULT_BACKOFF_LIMIT = 3;

    /** First back-off: 1 second. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);

    /** Back-off cap: 30 seconds. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(30);

    /** The longest attempt timeout, deadline or back-off a policy takes: 24 hours. */
    public static final Duration MAX_DURATION = Duration.ofHours(24);

    /** Validates the values. */
    public PullPolicy {
        Objects.requireNonNull(attemptTimeout, "attemptTimeout");
        Objects.requireNonNull(activeDeadline, "activeDeadline");
        Objects.requireNonNull(initialBackoff, "initialBackoff");
        Objects.requireNonNull(maxBackoff, "maxBackoff");
        if (attemptTimeout.isNegative()
                || attemptTimeout.isZero()
                || attemptTimeout.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException(
                    "attempt timeout must be positive and at most 24h, got " + attemptTimeout);
        }
        if (backoffLimit < 0) {
            throw new IllegalArgumentException("back-off limit must be >= 0, got " + backoffLimit);
        }
        if (activeDeadline.isPresent()
                && (activeDeadline.get().isNegative()
                        || activeDeadline.get().isZero()
                        || activeDeadline.get().compareTo(MAX_DURATION) > 0)) {
            throw new IllegalArgumentException(
                    "active deadline must be positive and at most 24h, got "
                            + activeDeadline.get());
        }
        if (initialBackoff.isNegative()
                || maxBackoff.compareTo(initialBackoff) < 0
                || maxBackoff.compareTo(MAX_DURATION) > 0) {
            throw new IllegalArgumentException(
                    "back-off must satisfy 0 <= initial ("
                            + initialBackoff
                            + ") <= max ("
                            + maxBackoff
                            + ") <= 24h");
        }
    }

    /** @return the defaults */
    public static PullPolicy defaults() {
        return new PullPolicy(
                DEFAULT_ATTEMPT_TIMEOUT,
                DEFAULT_BACKOFF_LIMIT,
                Optional.empty(),
                DEFAULT_INITIAL_BACKOFF,
                DEFAULT_MAX_BACKOFF);
    }

    /** @param timeout per-attempt timeout @return a copy with it */
    public PullPolicy withAttemptTimeout(Duration timeout) {
        return new PullPolicy(timeout, backoffLimit, activeDeadline, initialBackoff, maxBackoff);
    }

    /** @param limit retries after the first attempt @return a copy with it */
    public PullPolicy withBackoffLimit(int limit) {
        return new PullPolicy(attemptTimeout, limit, activeDeadline, initialBackoff, maxBackoff);
    }

    /** @param deadline time for the whole pull @return a copy with it */
    public PullPolicy withActiveDeadline(Duration deadline) {
        return new PullPolicy(
                attemptTimeout, backoffLimit, Optional.of(deadline), initialBackoff, maxBackoff);
    }

    /**
     * @param initial first wait
     * @param max cap
     * @return a copy with that back-off
     */
    public PullPolicy withBackoff(Duration initial, Duration max) {
        return new PullPolicy(attemptTimeout, backoffLimit, activeDeadline, initial, max);
    }

    /**
     * The wait before the attempt after failed attempt number {@code failedAttempt} (1-based):
     * initial, doubled per further failure, capped.
     *
     * @param failedAttempt the attempt that just failed, from 1
     * @return the back-off
     */
    public Duration backoffAfter(int failedAttempt) {
        Duration d = initialBackoff;
        for (int i = 1; i < failedAttempt && d.compareTo(maxBackoff) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(maxBackoff) > 0 ? maxBackoff : d;
    }
}
