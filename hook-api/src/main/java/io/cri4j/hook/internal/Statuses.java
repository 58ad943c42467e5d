package io.cri4j.hook.internal;

import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** How a failure of an interceptor or hook becomes the status a CRI call fails with. */
public final class Statuses {
    private Statuses() {}

    /**
     * The status {@code failure} carries (under any {@link CompletionException} or
     * {@link ExecutionException} wrapping), or {@code INTERNAL} described as {@code context} and the
     * failure when it carries none.
     */
    public static StatusException of(Throwable failure, String context) {
        Throwable t = unwrap(failure);
        if (t instanceof StatusException e) {
            return e;
        }
        if (t instanceof StatusRuntimeException e) {
            return new StatusException(e.getStatus(), e.getTrailers());
        }
        return Status.INTERNAL.withDescription(context + ": " + t).withCause(t).asException();
    }

    /** {@code failure} without the wrappers completion stages and futures put around it. */
    public static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** An asynchronous interceptor broke its contract by returning no stage. */
    public static StatusException noStage(Object interceptor, MethodDescriptor<?, ?> method) {
        return Status.INTERNAL
                .withDescription(
                        "interceptor "
                                + interceptor.getClass().getName()
                                + " returned no stage for "
                                + method.getFullMethodName())
                .asException();
    }
}
