package io.cri4j.streaming.internal.remotecommand;

import io.cri4j.streaming.internal.ServerContext;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an exec/attach on the server's executor once all streams exist, then finishes the session
 * in upstream's order: output streams half-closed, the status written, the connection closed after
 * everything queued before it went out (so output is never truncated).
 */
public final class CommandRunner {
    private static final Logger LOG = LoggerFactory.getLogger(CommandRunner.class);

    /** Writes the final status in the negotiated protocol's format. */
    public interface StatusWriter {
        void write(StatusJson status) throws IOException;
    }

    private CommandRunner() {}

    public static void start(
            ServerContext ctx,
            CommandRequest req,
            SessionStreams streams,
            StatusWriter statusWriter,
            Runnable closeConnection) {
        Runnable task =
                () -> {
                    StatusJson status;
                    try {
                        if (req.exec()) {
                            int code = ctx.runtime().exec(req.containerId(), req.cmd(), streams);
                            status = code == 0 ? StatusJson.success() : StatusJson.exitCode(code);
                        } else {
                            ctx.runtime().attach(req.containerId(), streams);
                            status = StatusJson.success();
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        status =
                                StatusJson.internalError(
                                        "error executing command in container: interrupted");
                    } catch (Throwable t) {
                        if (!streams.isClosed()) {
                            LOG.warn(
                                    "{} in container {} failed: {}",
                                    req.exec() ? "exec" : "attach",
                                    req.containerId(),
                                    t.toString());
                        }
                        status =
                                StatusJson.internalError(
                                        (req.exec()
                                                        ? "error executing command in container: "
                                                        : "error attaching to container: ")
                                                + (t.getMessage() == null
                                                        ? t.toString()
                                                        : t.getMessage()));
                    }
                    finish(streams, status, statusWriter, closeConnection);
                };
        try {
            ctx.executor().execute(task);
        } catch (RejectedExecutionException e) {
            finish(
                    streams,
                    StatusJson.internalError("streaming server is shutting down or overloaded"),
                    statusWriter,
                    closeConnection);
        }
    }

    private static void finish(
            SessionStreams streams,
            StatusJson status,
            StatusWriter statusWriter,
            Runnable closeConnection) {
        closeQuietly(streams.stdout().orElse(null));
        closeQuietly(streams.stderr().orElse(null));
        if (!streams.isClosed()) {
            try {
                statusWriter.write(status);
            } catch (IOException e) {
                LOG.debug("could not write status: {}", e.toString());
            }
        }
        streams.stdin()
                .ifPresent(
                        in -> {
                            try {
                                in.close();
                            } catch (IOException ignored) {
                                // nothing to do
                            }
                        });
        closeConnection.run();
    }

    private static void closeQuietly(OutputStream out) {
        if (out == null) {
            return;
        }
        try {
            out.close();
        } catch (IOException ignored) {
            // the client is gone; the status write will tell
        }
    }
}
