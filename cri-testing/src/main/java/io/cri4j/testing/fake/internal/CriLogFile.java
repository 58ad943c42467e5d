package io.cri4j.testing.fake.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.format.DateTimeFormatter;

/**
 * A container's log file in the CRI log format kubelet and crictl read: one line per line of output,
 * {@code TIMESTAMP STREAM TAG CONTENT}, the timestamp in RFC 3339 with nanoseconds, the stream {@code
 * stdout} or {@code stderr}, the tag {@code F} for a full line and {@code P} for a part of a line
 * longer than {@value #MAX_LINE} bytes (the rest follows in the next entries), as containerd writes
 * it. {@link #reopen()} closes the file and opens the path again (creating it), as {@code
 * ReopenContainerLog} asks after log rotation renamed it.
 */
final class CriLogFile implements AutoCloseable {

    /** containerd's default {@code max_container_log_line_size}: longer lines are split. */
    static final int MAX_LINE = 16 * 1024;

    private final Path path;
    private final Clock clock;
    private OutputStream out;
    private final Partial stdout = new Partial("stdout");
    private final Partial stderr = new Partial("stderr");
    private boolean closed;

    private static final class Partial {
        final String stream;
        final byte[] buf = new byte[MAX_LINE];
        int len;

        Partial(String stream) {
            this.stream = stream;
        }
    }

    /** Opens (creating, with its directory) the log file at {@code path} for appending. */
    CriLogFile(Path path, Clock clock) throws IOException {
        this.path = path;
        this.clock = clock;
        this.out = open(path);
    }

    private static OutputStream open(Path path) throws IOException {
        Path dir = path.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        return Files.newOutputStream(
                path,
                StandardOpenOption.CREATE,
                StandardOpenOption.WRITE,
                StandardOpenOption.APPEND);
    }

    /** Appends output of one stream; complete lines are written at once, a rest when it ends. */
    synchronized void write(boolean isStderr, byte[] data, int off, int len) throws IOException {
        if (closed) {
            return;
        }
        Partial p = isStderr ? stderr : stdout;
        for (int i = off; i < off + len; i++) {
            byte b = data[i];
            if (b == '\n') {
                entry(p, "F");
            } else {
                p.buf[p.len++] = b;
                if (p.len == MAX_LINE) {
                    entry(p, "P");
                }
            }
        }
        out.flush();
    }

    /** The stream ended: a rest without newline is written as a full line. */
    synchronized void endOf(boolean isStderr) throws IOException {
        Partial p = isStderr ? stderr : stdout;
        if (!closed && p.len > 0) {
            entry(p, "F");
            out.flush();
        }
    }

    private void entry(Partial p, String tag) throws IOException {
        String head =
                DateTimeFormatter.ISO_INSTANT.format(clock.instant())
                        + " "
                        + p.stream
                        + " "
                        + tag
                        + " ";
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(p.buf, 0, p.len);
        out.write('\n');
        p.len = 0;
    }

    /** Closes the file and opens its path again, creating a new file when it was renamed. */
    synchronized void reopen() throws IOException {
        if (closed) {
            throw new IOException("log file " + path + " is closed");
        }
        out.close();
        out = open(path);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            out.close();
        } catch (IOException ignored) {
            // nothing more is written
        }
    }
}
