package io.cri4j.streaming.internal.portforward;

import io.cri4j.streaming.PortForwardStream;
import io.cri4j.streaming.internal.io.CloseActions;
import java.io.InputStream;
import java.io.OutputStream;

/** A {@link PortForwardStream} over any transport. */
public final class PortStreamImpl implements PortForwardStream {
    private final int port;
    private final InputStream in;
    private final OutputStream out;
    private final CloseActions closeActions = new CloseActions();

    public PortStreamImpl(int port, InputStream in, OutputStream out) {
        this.port = port;
        this.in = in;
        this.out = out;
    }

    @Override
    public int port() {
        return port;
    }

    @Override
    public InputStream input() {
        return in;
    }

    @Override
    public OutputStream output() {
        return out;
    }

    @Override
    public boolean isClosed() {
        return closeActions.isClosed();
    }

    @Override
    public void onClose(Runnable action) {
        closeActions.add(action);
    }

    public void markClosed() {
        closeActions.close();
    }
}
