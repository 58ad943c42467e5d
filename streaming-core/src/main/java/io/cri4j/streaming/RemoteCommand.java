package io.cri4j.streaming;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * A running exec or attach seen from the client. Closing {@link #stdin()} tells the remote side
 * (SPDY half-close, WebSocket v5 CLOSE signal); {@link #stdout()} and {@link #stderr()} end when
 * the remote side is done. Closing the command drops the connection.
 */
public interface RemoteCommand extends AutoCloseable {
    /** The negotiated protocol, e.g. {@code v4.channel.k8s.io}. */
    String protocol();

    /**
     * Stdin of the remote process (a sink that discards when stdin was not requested). Closing
     * it ends the remote stdin, except over WebSocket {@code v4.channel.k8s.io}, which has no
     * way to say so.
     */
    OutputStream stdin();

    /** Stdout of the remote process (empty when not requested). */
    InputStream stdout();

    /** Stderr of the remote process (empty when not requested). */
    InputStream stderr();

    /** Sends a terminal size (TTY sessions). */
    void resize(TerminalSize size) throws IOException;

    /**
     * Completes with the exit code (0 on success) once the remote side reported its status; fails
     * with a {@link StreamingException} for failures that are not an exit code.
     */
    CompletableFuture<Integer> exitCode();

    /**
     * Waits for {@link #exitCode()}.
     *
     * @throws IOException its failure: a {@link StreamingException}, the I/O error that ended the
     *     session, or any other cause wrapped in an {@code IOException}
     */
    default int waitFor() throws IOException, InterruptedException {
        try {
            return exitCode().get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException(e.getCause());
        }
    }

    @Override
    void close();
}
