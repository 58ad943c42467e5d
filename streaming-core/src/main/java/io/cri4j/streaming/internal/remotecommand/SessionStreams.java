package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.RemoteCommandStreams;
import io.cri4j.streaming.TerminalSizeQueue;
import io.cri4j.streaming.internal.io.CloseActions;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Optional;

/** The streams handed to a runtime. */
public final class SessionStreams implements RemoteCommandStreams {
    private final InputStream stdin;
    private final OutputStream stdout;
    private final OutputStream stderr;
    private final boolean tty;
    private final SizeQueue resizes;
    private final CloseActions closeActions = new CloseActions();

    public SessionStreams(
            InputStream stdin,
            OutputStream stdout,
            OutputStream stderr,
            boolean tty,
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
    public boolean isClosed() {
        return closeActions.isClosed();
    }

    @Override
    public void onClose(Runnable action) {
        closeActions.add(action);
    }

    /** Marks the connection closed: ends the resize queue and runs the close actions once. */
    public void markClosed() {
        resizes.end();
        closeActions.close();
    }

    SizeQueue sizeQueue() {
        return resizes;
    }
}
