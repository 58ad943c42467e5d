package io.cri4j.testing.fake.internal;

import io.cri4j.testing.fake.ExecContext;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The fake's streaming behaviour on plain streams, used by {@link FakeStreamingRuntime}: an
 * interactive exec runs the command as a host process with its stdin/stdout/stderr connected to the given
 * streams; a port-forward connects a stream pair to a local TCP address. Pumping runs on the given executor.
 */
public final class HostProcessStreams {

    private HostProcessStreams() {}

    /**
     * Runs the command, pumping the streams until it exits.
     *
     * @param context what to run (timeout ignored: a stream ends when the client ends it)
     * @param stdin   the client's stdin, or null for none (the process sees end of input)
     * @param stdout  where stdout goes, or null to discard
     * @param stderr  where stderr goes, or null to discard; with {@code tty} stderr is merged into stdout
     * @param tty     whether a terminal was asked for (there is no pty: stderr is merged as a terminal would)
     * @param pumps   runs the copy loops
     * @return the exit code
     * @throws IOException when the command cannot be started (message as runc's)
     * @throws InterruptedException when interrupted: the process tree is killed
     */
    public static int exec(
            ExecContext context,
            InputStream stdin,
            OutputStream stdout,
            OutputStream stderr,
            boolean tty,
            Executor pumps)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(context.command());
        pb.environment().putAll(context.env());
        if (!context.workingDir().isEmpty() && Files.isDirectory(Path.of(context.workingDir()))) {
            pb.directory(new File(context.workingDir()));
        }
        pb.redirectErrorStream(tty);
        if (stdin == null) {
            pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        }
        if (stdout == null) {
            pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        }
        if (stderr == null && !tty) {
            pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        }
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IOException(
                    "OCI runtime exec failed: exec failed: unable to start container process: exec: \""
                            + context.command().get(0)
                            + "\": "
                            + e.getMessage(),
                    e);
        }
        List<Future<?>> outputs = new ArrayList<>();
        try {
            if (stdin != null) {
                // stdin ends the process's input when the client closes it; it is not waited for
                pump(stdin, process.getOutputStream(), pumps, true);
            }
            if (stdout != null) {
                outputs.add(pump(process.getInputStream(), stdout, pumps, false));
            }
            if (stderr != null && !tty) {
                outputs.add(pump(process.getErrorStream(), stderr, pumps, false));
            }
            int code = process.waitFor();
            for (Future<?> f : outputs) {
                try {
                    f.get(10, TimeUnit.SECONDS);
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    // the client went away while output was copied: the exit code still stands
                }
            }
            return code;
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw e;
        }
    }

    /**
     * Connects a port-forward stream to a local TCP address and copies both ways until either side ends.
     *
     * @throws IOException when the target refuses the connection
     */
    public static void forward(
            InetSocketAddress target, InputStream fromClient, OutputStream toClient, Executor pumps)
            throws IOException, InterruptedException {
        try (Socket socket = new Socket()) {
            socket.connect(target, 5000);
            Future<?> up = pump(fromClient, socket.getOutputStream(), pumps, false);
            Future<?> down = pump(socket.getInputStream(), toClient, pumps, false);
            try {
                up.get();
                socket.shutdownOutput();
                down.get();
            } catch (ExecutionException e) {
                // one side failed: closing the socket ends the other
            }
        }
    }

    private static Future<?> pump(
            InputStream in, OutputStream out, Executor pumps, boolean closeOut) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        pumps.execute(
                () -> {
                    // 32 KiB, the buffer of Go's io.Copy with which containerd copies a pipe
                    byte[] buf = new byte[32 * 1024];
                    try {
                        int n;
                        while ((n = in.read(buf)) >= 0) {
                            out.write(buf, 0, n);
                            out.flush();
                        }
                        done.complete(null);
                    } catch (IOException e) {
                        done.completeExceptionally(e);
                    } finally {
                        if (closeOut) {
                            try {
                                out.close();
                            } catch (IOException ignored) {
                                // the process is gone
                            }
                        }
                    }
                });
        return done;
    }
}
