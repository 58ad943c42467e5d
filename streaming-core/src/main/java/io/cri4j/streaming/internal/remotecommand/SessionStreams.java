package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.RemoteCommandStreams;
import io.cri4j.streaming.TerminalSizeQueue;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The streams handed to a runtime. */
public final class SessionStreams implements RemoteCommandStreams {
    private final InputStream stdin;
    private final OutputStream stdout;
    private final OutputStream stderr;
    private final boolean tty;
    private final SizeQueue resizes;
    private final List<Runnable> closeActions = new ArrayList<>();
    private boolean closed;

    public SessionStreams(InputStream stdin, OutputStream stdout, OutputStream stderr, boolean tty,
            SizeQueue resizes) {
        this.stdin = stdin;
        this.stdout = stdout;
        this.stderr = stderr;
        this.tty = tty;
        this.resizes = resizes;
    }

    @Override
    public Optional<InputStream> stdin() {
        return Optional.ofNullable(stdin);
    }

    @Override
    public Optional<OutputStream> stdout() {
        return Optional.ofNullable(stdout);
    }

    @Override
    public Optional<OutputStream> stderr() {
        return Optional.ofNullable(stderr);
    }

    @Override
    public boolean tty() {
        return tty;
    }

    @Override
    public TerminalSizeQueue resizes() {
        return resizes;
    }

    @Override
    public synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public void onClose(Runnable action) {
        synchronized (this) {
            if (!closed) {
                closeActions.add(action);
                return;
            }
        }
        action.run();
    }

    /** Marks the connection closed and runs the close actions once. */
    public void markClosed() {
        List<Runnable> run;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            run = new ArrayList<>(closeActions);
            closeActions.clear();
        }
        resizes.end();
        for (Runnable r : run) {
            try {
                r.run();
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(SessionStreams.class).warn("close action failed", e);
            }
        }
    }

    SizeQueue sizeQueue() {
        return resizes;
    }
}
