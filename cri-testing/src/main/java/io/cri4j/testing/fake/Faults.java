package io.cri4j.testing.fake;

import io.cri4j.testing.fake.internal.MethodMatcher;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Fault injection per RPC. Rules are matched newest first, so a one-shot rule added later takes precedence over
 * a standing one; a rule with a count stops matching once used up.
 *
 * <pre>{@code
 * fake.faults().on("PullImage").failNext(2, Status.UNAVAILABLE.withDescription("registry down"));
 * fake.faults().on("ListContainers").delay(Duration.ofMillis(300));
 * Hang hang = fake.faults().on("StopContainer").hang();
 * ...
 * hang.release();
 * }</pre>
 */
public final class Faults {

    /** A fake's rules, empty; a test reaches them through {@code FakeCriServer.faults()}. */
    Faults() {}

    /** What a matching rule does to a call. */
    enum Kind {
        FAIL,
        DELAY,
        HANG
    }

    /**
     * One rule, read by the interceptor.
     *
     * @param matcher which methods
     * @param kind    what happens
     * @param status  the status for FAIL
     * @param delay   the delay for DELAY
     * @param hang    the handle for HANG
     */
    record Rule(MethodMatcher matcher, Kind kind, Status status, Duration delay, Hang hang) {}

    private final List<Rule> rules = new ArrayList<>();
    private final List<Integer> remaining = new ArrayList<>();

    /**
     * Starts a rule for a method: {@code "PullImage"} (both API versions), {@code "ImageService/PullImage"} or the
     * full {@code "runtime.v1.ImageService/PullImage"}.
     *
     * @throws IllegalArgumentException when no CRI method has that name
     */
    public MethodFaults on(String method) {
        return new MethodFaults(MethodMatcher.of(method));
    }

    /** Removes every rule and releases every hang. */
    public void clear() {
        List<Rule> old;
        synchronized (this) {
            old = new ArrayList<>(rules);
            rules.clear();
            remaining.clear();
        }
        old.stream().filter(r -> r.hang() != null).forEach(r -> r.hang().release());
    }

    /**
     * Takes the rule that applies to a call, using up one of its count; used by the fake's interceptor.
     *
     * @return the rule, or null when the call should proceed untouched
     */
    synchronized Rule take(String fullMethodName) {
        for (int i = rules.size() - 1; i >= 0; i--) {
            Rule r = rules.get(i);
            int left = remaining.get(i);
            if (left == 0 || !r.matcher().matches(fullMethodName)) {
                continue;
            }
            if (left > 0) {
                remaining.set(i, left - 1);
            }
            return r;
        }
        return null;
    }

    private synchronized void add(Rule rule, int count) {
        if (count == 0 || count < -1) {
            throw new IllegalArgumentException("count must be positive, was " + count);
        }
        rules.add(rule);
        remaining.add(count);
    }

    /** The faults of one method (or family of methods). */
    public final class MethodFaults {
        private final MethodMatcher matcher;

        MethodFaults(MethodMatcher matcher) {
            this.matcher = matcher;
        }

        /** Every call fails with this status (until {@link Faults#clear()}). */
        public void failWith(Status status) {
            failNext(-1, status);
        }

        /** The next {@code calls} calls fail with this status; later calls proceed. */
        public void failNext(int calls, Status status) {
            Objects.requireNonNull(status, "status");
            if (status.isOk()) {
                throw new IllegalArgumentException("a fault must fail with a non-OK status");
            }
            add(new Rule(matcher, Kind.FAIL, status, null, null), calls);
        }

        /** Every call is answered only after this delay. */
        public void delay(Duration delay) {
            delayNext(-1, delay);
        }

        /** The next {@code calls} calls are answered only after this delay. */
        public void delayNext(int calls, Duration delay) {
            if (delay.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative: " + delay);
            }
            add(new Rule(matcher, Kind.DELAY, null, delay, null), calls);
        }

        /** Every call hangs until the returned handle is released. */
        public Hang hang() {
            return hangNext(-1);
        }

        /** The next {@code calls} calls hang until the returned handle is released. */
        public Hang hangNext(int calls) {
            Hang hang = new Hang(matcher.spec());
            add(new Rule(matcher, Kind.HANG, null, null, hang), calls);
            return hang;
        }
    }
}
