package io.cri4j.streaming;

import java.io.InputStream;
import java.io.OutputStream;

/**
 * One forwarded connection to a port of a pod sandbox: bytes from the client on {@link #input()}
 * (-1 once the client half-closed), bytes to the client on {@link #output()} (closing it half-closes
 * towards the client).
 */
public interface PortForwardStream {
    /** The port in the pod sandbox the client asked for. */
    int port();

    /** Bytes sent by the client. */
    InputStream input();

    /** Bytes for the client. */
    OutputStream output();

    /** Whether the client side is gone. */
    boolean isClosed();

    /** Runs {@code action} once when the client side closes (immediately if already closed). */
    void onClose(Runnable action);
}
