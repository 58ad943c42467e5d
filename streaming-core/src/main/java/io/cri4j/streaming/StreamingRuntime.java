package io.cri4j.streaming;

import java.util.List;

/**
 * What a container runtime implements to serve exec, attach and port-forward sessions. The server
 * calls these methods on its own bounded executor (never on a network event loop); they may block
 * for the whole session. An implementation never sees SPDY or WebSocket.
 */
public interface StreamingRuntime {
    /**
     * Runs {@code cmd} in a container and copies its stdio from/to {@code streams}.
     *
     * @return the process exit code; non-zero codes reach the client (kubectl exits with it)
     * @throws Exception any failure that is not an exit code; reported to the client as an internal
     *     error
     */
    int exec(String containerId, List<String> cmd, RemoteCommandStreams streams) throws Exception;

    /**
     * Attaches to the main process of a container until the client or the process goes away.
     *
     * @throws Exception any failure; reported to the client as an internal error
     */
    default void attach(String containerId, RemoteCommandStreams streams) throws Exception {
        throw new UnsupportedOperationException("attach is not supported by this runtime");
    }

    /**
     * Copies bytes between {@code stream} and {@code port} inside the network namespace of the pod
     * sandbox until either side closes.
     *
     * @throws Exception any failure; reported to the client on the stream's error channel
     */
    default void portForward(String podSandboxId, int port, PortForwardStream stream)
            throws Exception {
        throw new UnsupportedOperationException("port-forward is not supported by this runtime");
    }
}
