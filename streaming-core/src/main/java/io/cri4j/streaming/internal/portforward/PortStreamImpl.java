package io.cri4j.streaming.internal.portforward;

import io.cri4j.streaming.PortForwardStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

/** A {@link PortForwardStream} over any transport. */
public final class PortStreamImpl implements PortForwardStream {
    private final int port;
    private final InputStream in;
    private final OutputStream out;
    private final List<Runnable> actions = new ArrayList<>();
    private boolean closed;

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
    public synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public void onClose(Runnable action) {
        synchronized (this) {
            if (!closed) {
                actions.add(action);
                return;
            }
        }
        action.run();
    }

    public void markClosed() {
        List<Runnable> run;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            run = new ArrayList<>(actions);
        }
        run.forEach(Runnable::run);
    }
}
