package io.cri4j.hook;

import java.time.Duration;
import java.util.Objects;

/**
 * A hook under {@link FailurePolicy#FAIL} did not answer within {@link HookPolicy#timeout()}.
 * The host cancelled its stage (which interrupts a blocking hook's worker).
 */
public class HookTimeoutException extends HookFailedException {
    private static final long serialVersionUID = 1L;

    private final Duration timeout;

    /**
     * @param hookName the late hook
     * @param event the event, or null for {@code Configure} and {@code Synchronize}
     * @param operation what timed out, e.g. {@code CreateContainer}
     * @param timeout the hook's timeout
     */
    public HookTimeoutException(
            String hookName, HookEvent event, String operation, Duration timeout) {
        super(
                hookName,
                event,
                operation
                        + ": hook \""
                        + hookName
                        + "\" did not answer within "
                        + Objects.requireNonNull(timeout, "timeout").toMillis()
                        + " ms",
                null,
                true);
        this.timeout = timeout;
    }

    /** The timeout that elapsed. */
    public Duration timeout() {
        return timeout;
    }
}
