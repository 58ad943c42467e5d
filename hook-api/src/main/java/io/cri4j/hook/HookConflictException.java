package io.cri4j.hook;

import java.util.Objects;

/**
 * Two hooks tried to set the same field of one container or pod (NRI's conflict rule): the
 * event fails, naming both hooks and the field. A hook avoids the conflict by removing the field
 * before setting it ({@link Adjustments}' {@code remove...} methods), as in NRI.
 */
public class HookConflictException extends HookException {
    private static final long serialVersionUID = 1L;

    private final String field;
    private final String key;
    private final String firstHook;
    private final String subject;

    /**
     * @param event the event
     * @param subject what the field belongs to, e.g. {@code container "web"}
     * @param field the field, in NRI's spelling ({@code Env}, {@code CPUShares}, ...) or, for pod
     *     adjustments, {@code Labels}, {@code Annotations}, {@code CgroupParent}
     * @param key the entry of a keyed field (env name, mount destination, ...) or empty
     * @param firstHook the hook that set the field first
     * @param secondHook the hook that tried to set it again (the one attributed)
     */
    public HookConflictException(
            HookEvent event,
            String subject,
            String field,
            String key,
            String firstHook,
            String secondHook) {
        super(secondHook, event, message(event, subject, field, key, firstHook, secondHook), null);
        this.subject = Objects.requireNonNull(subject, "subject");
        this.field = Objects.requireNonNull(field, "field");
        this.key = Objects.requireNonNull(key, "key");
        this.firstHook = Objects.requireNonNull(firstHook, "firstHook");
    }

    private static String message(
            HookEvent event,
            String subject,
            String field,
            String key,
            String firstHook,
            String secondHook) {
        String what = key.isEmpty() ? field : field + " " + key;
        String who =
                firstHook.equals(secondHook)
                        ? "hook \"" + firstHook + "\" set " + what + " twice"
                        : "hooks \""
                                + firstHook
                                + "\" and \""
                                + secondHook
                                + "\" both tried to set "
                                + what;
        return where(event) + who + " of " + subject;
    }

    /** The field, e.g. {@code Env}, {@code CPUShares}, {@code Labels}. */
    public String field() {
        return field;
    }

    /** The entry of a keyed field (env name, mount destination, page size, ...), or empty. */
    public String key() {
        return key;
    }

    /** What the field belongs to, e.g. {@code container "web"}. */
    public String subject() {
        return subject;
    }

    /** The hook that set the field first. */
    public String firstHook() {
        return firstHook;
    }

    /** The hook that tried to set it again. */
    public String secondHook() {
        return hookName();
    }
}
