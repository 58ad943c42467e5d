package io.cri4j.hook;

import java.time.Duration;
import java.util.Objects;

/**
 * How a host calls one hook: its place in the order ({@link #index()}, lower first, ties by
 * name, like NRI's plugin index), how long one call may take, and what a failure or an overrun
 * does to the lifecycle operation ({@link FailurePolicy}). Immutable.
 *
 * @param index order among hooks, 0..99 as NRI plugin indexes
 * @param timeout the longest one call may take; positive, at most one hour
 * @param failurePolicy {@link FailurePolicy#FAIL} fails the operation with an error naming the
 *     hook; {@link FailurePolicy#IGNORE} logs the error and goes on without this hook's answer
 */
public record HookPolicy(int index, Duration timeout, FailurePolicy failurePolicy) {

    /** The longest timeout a policy accepts. */
    public static final Duration MAX_TIMEOUT = Duration.ofHours(1);

    /** Index 50, timeout 2 s (NRI's default request timeout), {@link FailurePolicy#IGNORE}. */
    public static final HookPolicy DEFAULT =
            new HookPolicy(50, Duration.ofSeconds(2), FailurePolicy.IGNORE);

    /** Validates the values. */
    public HookPolicy {
        if (index < 0 || index > 99) {
            throw new IllegalArgumentException("hook index must be 0..99, got " + index);
        }
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException(
                    "hook timeout must be > 0 and <= 1h, got " + timeout);
        }
    }

    /** A copy with this index. */
    public HookPolicy withIndex(int newIndex) {
        return new HookPolicy(newIndex, timeout, failurePolicy);
    }

    /** A copy with this timeout. */
    public HookPolicy withTimeout(Duration newTimeout) {
        return new HookPolicy(index, newTimeout, failurePolicy);
    }

    /** A copy with this failure policy. */
    public HookPolicy withFailurePolicy(FailurePolicy newPolicy) {
        return new HookPolicy(index, timeout, newPolicy);
    }
}
