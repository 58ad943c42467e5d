package io.cri4j.nri.internal.plugin;

import io.cri4j.nri.internal.ttrpc.TtrpcStatus;
import io.grpc.StatusRuntimeException;

/** One-line descriptions of failures for logs and exceptions. */
final class PluginServiceMessages {

    private PluginServiceMessages() {}

    static String describe(Throwable t) {
        Throwable c = TtrpcStatus.unwrap(t);
        if (c instanceof StatusRuntimeException s) {
            String d = s.getStatus().getDescription();
            return s.getStatus().getCode() + (d == null ? "" : ": " + d);
        }
        return c.getMessage() == null ? c.getClass().getName() : c.getMessage();
    }
}
