package io.cri4j.streaming.internal.io;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The "client connection went away" signal a runtime sees on its streams: actions registered
 * before the close run once when it happens, actions registered after it run at once. A failing
 * action is logged and does not stop the others (close runs on a Netty event loop).
 */
public final class CloseActions {
    private static final Logger LOG = LoggerFactory.getLogger(CloseActions.class);

    private final List<Runnable> actions = new ArrayList<>();
    private boolean closed;

    /** Whether {@link #close()} has happened. */
    public synchronized boolean isClosed() {
        return closed;
    }

    /** Runs {@code action} on close, or now when already closed. */
    public void add(Runnable action) {
        synchronized (this) {
            if (!closed) {
                actions.add(action);
                return;
            }
        }
        action.run();
    }

    /** Marks closed and runs the registered actions, once; later calls do nothing. */
    public void close() {
        List<Runnable> run;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            run = new ArrayList<>(actions);
            actions.clear();
        }
        for (Runnable r : run) {
            try {
                r.run();
            } catch (RuntimeException e) {
                LOG.warn("close action failed", e);
            }
        }
    }
}
