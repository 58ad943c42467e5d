package io.cri4j.streaming;

import java.net.InetSocketAddress;

/** A local listener whose connections are forwarded to a port of a pod sandbox. */
public interface LocalPortForward extends AutoCloseable {
    /** Where it listens. */
    InetSocketAddress localAddress();

    /** Stops listening and closes all forwarded connections. Idempotent. */
    @Override
    void close();
}
