package io.cri4j.hook.host;

import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookException;
import java.util.List;

/**
 * A hook under {@link io.cri4j.hook.FailurePolicy#FAIL} asked for changes the host cannot carry;
 * the message names the hook and every such field.
 */
public class UnsupportedAdjustmentException extends HookException {
    private static final long serialVersionUID = 1L;

    private final transient List<UnsupportedAdjustment> fields;

    /**
     * @param hook the hook
     * @param event the event
     * @param fields what it asked for that cannot be carried
     */
    public UnsupportedAdjustmentException(
            String hook, HookEvent event, List<UnsupportedAdjustment> fields) {
        super(
                hook,
                event,
                (event == null ? "" : event.displayName() + ": ")
                        + (hook.isEmpty() ? "a hook" : "hook \"" + hook + "\"")
                        + " asked for changes the runtime interface cannot carry: "
                        + String.join(
                                ", ",
                                fields.stream().map(UnsupportedAdjustment::describe).toList()),
                null);
        this.fields = List.copyOf(fields);
    }

    /** The fields that cannot be carried. */
    public List<UnsupportedAdjustment> fields() {
        return fields;
    }
}
