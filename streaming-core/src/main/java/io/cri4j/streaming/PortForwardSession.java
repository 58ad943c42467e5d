package io.cri4j.streaming;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;

/** A port-forward connection to a pod sandbox; each {@link #open} is one forwarded connection. */
public interface PortForwardSession extends AutoCloseable {
    /** Opens a forwarded connection to {@code port} in the pod sandbox. */
    Connection open(int port) throws IOException;

    @Override
    void close();

    /** One forwarded connection. */
    interface Connection extends AutoCloseable {
        /** Bytes from the port. */
        InputStream input();

        /** Bytes to the port; closing half-closes. */
        OutputStream output();

        /** Completes with the error the server reported for this connection ("" when none). */
        CompletableFuture<String> error();

        @Override
        void close();
    }
}
