package io.cri4j.proxy.internal.interception;

import io.grpc.Status;
import java.io.IOException;

/**
 * What the proxy tells its client when a backend call ends. A status the runtime sent is passed
 * on unchanged. A failure of the proxy's own connection to the runtime is not: grpc-java reports
 * a write onto a connection that just died (the runtime was killed between two calls) as UNKNOWN
 * "channel closed", which a kubelet would take for a runtime error. For the client it is what it
 * is: the runtime is unavailable, try again, so it becomes UNAVAILABLE.
 */
public final class BackendStatus {
    private BackendStatus() {}

    /** The status to give the proxy's client for a backend call that ended with {@code status}. */
    public static Status forClient(Status status) {
        if (status.getCode() != Status.Code.UNKNOWN || !causedByTransport(status.getCause())) {
            return status;
        }
        return Status.UNAVAILABLE
                .withDescription("connection to the runtime was lost: " + status.getDescription())
                .withCause(status.getCause());
    }

    /** A status the runtime sent has no cause on this side; a local transport failure has one. */
    private static boolean causedByTransport(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof IOException) {
                return true;
            }
        }
        return false;
    }
}
