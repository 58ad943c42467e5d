package io.cri4j.hook.host;

import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookException;
import io.cri4j.hook.HookRejectedException;
import io.cri4j.hook.HookTimeoutException;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The gRPC status a CRI host fails a call with when its hooks fail the event; the description
 * is the exception's message, which names the hook (and for a conflict both hooks and the field).
 *
 * <ul>
 *   <li>{@link HookTimeoutException}: {@code DEADLINE_EXCEEDED};</li>
 *   <li>{@link HookConflictException}, {@link HookRejectedException}, {@link
 *       UnsupportedAdjustmentException}: {@code FAILED_PRECONDITION} (the request cannot be
 *       carried out as the hooks changed it);</li>
 *   <li>any other {@link HookException} (a hook failed): {@code UNKNOWN}, as containerd answers
 *       a failing NRI plugin;</li>
 *   <li>a status exception keeps its status; anything else is {@code INTERNAL}.</li>
 * </ul>
 */
public final class HookStatuses {
    private HookStatuses() {}

    /** The status for {@code failure} (completion and execution wrappers removed). */
    public static Status of(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof StatusRuntimeException e) {
            return e.getStatus();
        }
        if (t instanceof StatusException e) {
            return e.getStatus();
        }
        Status s;
        if (t instanceof HookTimeoutException) {
            s = Status.DEADLINE_EXCEEDED;
        } else if (t instanceof HookConflictException
                || t instanceof HookRejectedException
                || t instanceof UnsupportedAdjustmentException) {
            s = Status.FAILED_PRECONDITION;
        } else if (t instanceof HookException) {
            s = Status.UNKNOWN;
        } else {
            return Status.INTERNAL.withDescription("hook host failed: " + t).withCause(t);
        }
        return s.withDescription(t.getMessage()).withCause(t);
    }
}
