package io.cri4j.streaming;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.Optional;

/**
 * The streams of one exec or attach session, handed to a {@link StreamingRuntime}. Reading stdin
 * returns -1 once the client closed it; writes to stdout/stderr block while the client is slow
 * (back-pressure) and fail with an {@link java.io.IOException} once the client is gone. The server
 * closes all streams after the runtime call returns; a runtime may close stdout/stderr earlier.
 */
public interface RemoteCommandStreams {
    /** The client's stdin, if the request asked for it. */
    Optional<InputStream> stdin();

    /** The client's stdout, if the request asked for it. */
    Optional<OutputStream> stdout();

    /** The client's stderr, if the request asked for it (never with a TTY). */
    Optional<OutputStream> stderr();

    /** Whether the session runs in a TTY. */
    boolean tty();

    /** Terminal size events; an already ended queue when there is no TTY or no resize support. */
    TerminalSizeQueue resizes();

    /** Whether the client connection is gone (the runtime should then stop the session). */
    boolean isClosed();

    /**
     * Runs {@code action} once when the client connection closes (immediately if already closed).
     * Useful to stop a process whose streams are blocked.
     */
    void onClose(Runnable action);
}
