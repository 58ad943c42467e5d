package io.cri4j.hook.internal;

import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookRejectedException;
import io.cri4j.hook.HookTimeoutException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * What a {@link io.cri4j.hook.HookChain} records of its hooks, with no Micrometer type in sight:
 * {@link #NONE} when no registry was given (Micrometer need not be on the class path then), a
 * Micrometer recorder otherwise. Not API.
 */
public interface HookMetrics {

    /** Records nothing. */
    HookMetrics NONE =
            new HookMetrics() {
                @Override
                public boolean enabled() {
                    return false;
                }

                @Override
                public void hook(
                        String chain, String hook, String event, long nanos, String outcome) {}

                @Override
                public void chain(String chain, String event, long nanos, String outcome) {}

                @Override
                public void ignored(String chain, String hook, String event, String outcome) {}
            };

    /** The outcome of a hook that answered with nothing to change. */
    String OK = "ok";

    /** The outcome of a hook whose answer changes something. */
    String ADJUSTED = "adjusted";

    /**
     * @param registry a {@code io.micrometer.core.instrument.MeterRegistry}, or null
     * @return a recorder into it; {@link #NONE} for null
     */
    static HookMetrics of(Object registry) {
        return registry == null ? NONE : MicrometerHookMetrics.create(registry);
    }

    /** Whether anything is recorded (callers skip reading the clock otherwise). */
    boolean enabled();

    /**
     * One call of one hook.
     *
     * @param event the event's name ({@code CreateContainer}, {@code Synchronize}, ...)
     * @param outcome {@link #OK}, {@link #ADJUSTED} or one of {@link #failure}
     */
    void hook(String chain, String hook, String event, long nanos, String outcome);

    /** A hook's failure ({@code outcome}) that its Ignore policy let the event go on without. */
    void ignored(String chain, String hook, String event, String outcome);

    /** One event through the whole chain. */
    void chain(String chain, String event, long nanos, String outcome);

    /**
     * @return {@code timeout}, {@code rejected}, {@code conflict} or {@code failed}
     */
    static String failure(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof HookTimeoutException) {
            return "timeout";
        }
        if (t instanceof HookRejectedException) {
            return "rejected";
        }
        if (t instanceof HookConflictException) {
            return "conflict";
        }
        return "failed";
    }

    /** {@link #ADJUSTED} for an answer that changes something, else {@link #OK}. */
    static String answered(Object v) {
        boolean changes =
                v instanceof io.cri4j.hook.HookResult r
                        ? !r.isEmpty()
                        : v instanceof io.cri4j.hook.PodSandboxAdjustment a
                                ? !a.isEmpty()
                                : v instanceof java.util.Collection<?> c && !c.isEmpty();
        return changes ? ADJUSTED : OK;
    }

    /** The name an event is recorded under; {@code Synchronize} for null. */
    static String event(HookEvent event) {
        return event == null ? "Synchronize" : event.displayName();
    }
}
