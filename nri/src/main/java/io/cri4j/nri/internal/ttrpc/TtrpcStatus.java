package io.cri4j.nri.internal.ttrpc;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * ttrpc carries errors as {@code google.rpc.Status} (its fields, in {@code ttrpc.Status}) in its
 * Response; Java sees them as gRPC's {@link StatusRuntimeException}, whose codes are the same.
 */
public final class TtrpcStatus {

    private TtrpcStatus() {}

    /** An error with this code and description. */
    public static StatusRuntimeException error(Status.Code code, String description) {
        return Status.fromCode(code).withDescription(description).asRuntimeException();
    }

    /** The status a peer receives for {@code failure}: its own status, or UNKNOWN with the message. */
    public static io.cri4j.nri.internal.proto.Status toProto(Throwable failure) {
        Throwable t = unwrap(failure);
        Status s;
        if (t instanceof StatusRuntimeException e) {
            s = e.getStatus();
        } else if (t instanceof StatusException e) {
            s = e.getStatus();
        } else if (t instanceof CancellationException) {
            s = Status.CANCELLED.withDescription("cancelled");
        } else {
            String m = t.getMessage();
            s = Status.UNKNOWN.withDescription(m == null ? t.getClass().getName() : m);
        }
        io.cri4j.nri.internal.proto.Status.Builder b =
                io.cri4j.nri.internal.proto.Status.newBuilder().setCode(s.getCode().value());
        if (s.getDescription() != null) {
            b.setMessage(s.getDescription());
        }
        return b.build();
    }

    /** The Java form of a status received from a peer. */
    public static StatusRuntimeException fromProto(io.cri4j.nri.internal.proto.Status status) {
        return Status.fromCodeValue(status.getCode())
                .withDescription(status.getMessage())
                .asRuntimeException();
    }

    /** The cause inside the wrappers {@link java.util.concurrent.CompletableFuture} adds. */
    public static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
