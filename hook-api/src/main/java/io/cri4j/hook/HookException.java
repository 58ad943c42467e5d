package io.cri4j.hook;

import java.util.Objects;
import java.util.Optional;

/**
 * A lifecycle event failed because of a hook: the base of the exceptions a {@link HookChain}
 * (and every host built on it) fails an event with. Each names the hook and, where there is one,
 * the event; hosts turn them into their transport's error (a gRPC status, an NRI error).
 */
public abstract class HookException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String hookName;
    private final transient HookEvent event;

    /**
     * @param hookName the hook the failure is attributed to
     * @param event the event, or null for {@code Configure} and {@code Synchronize}
     * @param message the whole message
     * @param cause the hook's own error, or null
     */
    protected HookException(String hookName, HookEvent event, String message, Throwable cause) {
        super(message, cause);
        this.hookName = Objects.requireNonNull(hookName, "hookName");
        this.event = event;
    }

    /** The hook the failure is attributed to. */
    public String hookName() {
        return hookName;
    }

    /** The event, or empty for {@code Configure} and {@code Synchronize}. */
    public Optional<HookEvent> event() {
        return Optional.ofNullable(event);
    }

    static String where(HookEvent event) {
        return event == null ? "" : event.displayName() + ": ";
    }
}
