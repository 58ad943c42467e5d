package io.cri4j.hook;

/**
 * A hook under {@link FailurePolicy#FAIL} failed: it threw, its stage completed exceptionally,
 * it answered with something a host cannot use, or (as {@link HookTimeoutException}) it did not
 * answer in time. The cause is the hook's own error.
 */
public class HookFailedException extends HookException {
    private static final long serialVersionUID = 1L;

    /**
     * @param hookName the failing hook
     * @param event the event, or null for {@code Configure} and {@code Synchronize}
     * @param operation what failed, e.g. {@code CreateContainer} or {@code Configure}
     * @param cause the hook's error
     */
    public HookFailedException(
            String hookName, HookEvent event, String operation, Throwable cause) {
        super(
                hookName,
                event,
                operation + ": hook \"" + hookName + "\" failed: " + describe(cause),
                cause);
    }

    /**
     * For subclasses that word the message themselves.
     *
     * @param exactMessage marks this constructor; {@code message} is used as it is
     */
    protected HookFailedException(
            String hookName,
            HookEvent event,
            String message,
            Throwable cause,
            boolean exactMessage) {
        super(hookName, event, message, cause);
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "unknown error";
        }
        String m = t.getMessage();
        return m == null || m.isBlank() ? t.getClass().getName() : m;
    }
}
