package io.cri4j.hook.koordinator;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the hook config directory's files for {@link HookConfigDirectory}: regular files only
 * (a link is followed and its target checked), at most {@link HookConfigDirectory#MAX_FILE_BYTES},
 * strict UTF-8. Java cannot open a file with {@code O_NONBLOCK}, and a FIFO swapped in between
 * the type check and the open would block {@code open(2)} until someone writes to it: the open
 * and the read run on a reader thread, and a read that takes longer than {@link #TIMEOUT_MILLIS}
 * is given up (that thread is left to its fate and a new one reads the next file), so no file
 * holds up the watch thread or close.
 */
final class ConfigFileReader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigFileReader.class);

    /** The longest one file may take to open and read. */
    static final long TIMEOUT_MILLIS = 2000;

    private ExecutorService thread = newThread();
    private int abandoned;

    private static ExecutorService newThread() {
        return Executors.newSingleThreadExecutor(
                r -> {
                    Thread t = new Thread(r, "cri4j-hook-config-reader");
                    t.setDaemon(true);
                    return t;
                });
    }

    /**
     * The text of {@code file}.
     *
     * @throws NoSuchFileException when it is gone (or a link to nothing)
     * @throws IOException naming why it cannot be a hook config (its kind, size or encoding)
     * @throws InterruptedException when the caller is interrupted (closing)
     */
    String read(Path file) throws IOException, InterruptedException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            if (Files.isSymbolicLink(file)) {
                throw new IOException(
                        "is a symbolic link to " + target(file) + ", which does not exist");
            }
            throw e;
        }
        if (!a.isRegularFile()) {
            throw new IOException("is not a regular file (" + kind(file, a) + ")");
        }
        if (a.size() > HookConfigDirectory.MAX_FILE_BYTES) {
            throw tooLarge(a.size());
        }
        Future<byte[]> f;
        synchronized (this) {
            f = thread.submit(() -> readAtMost(file));
        }
        byte[] bytes;
        try {
            bytes = f.get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            synchronized (this) {
                // open(2) on a FIFO is not interruptible: leave that thread, read on a new one
                thread.shutdownNow();
                thread = newThread();
                abandoned++;
            }
            LOG.warn(
                    "reading hook config {} took more than {} ms; given up ({} reader thread(s) left"
                            + " blocked)",
                    file,
                    TIMEOUT_MILLIS,
                    abandoned);
            throw new IOException(
                    "could not be read within "
                            + TIMEOUT_MILLIS
                            + " ms (not a regular file any more?)");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof IOException io) {
                throw io;
            }
            throw new IOException("could not be read: " + c, c);
        } catch (InterruptedException e) {
            f.cancel(true);
            throw e;
        }
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IOException("is not UTF-8 text");
        }
    }

    private static byte[] readAtMost(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] b = in.readNBytes(HookConfigDirectory.MAX_FILE_BYTES + 1);
            if (b.length > HookConfigDirectory.MAX_FILE_BYTES) {
                throw tooLarge(-1);
            }
            return b;
        }
    }

    private static IOException tooLarge(long size) {
        return new IOException(
                (size >= 0 ? "is " + size + " bytes," : "is")
                        + " larger than the "
                        + HookConfigDirectory.MAX_FILE_BYTES / 1024
                        + " KiB a hook config may have");
    }

    private static String kind(Path file, BasicFileAttributes a) {
        String what = a.isDirectory() ? "a directory" : "a FIFO, socket or device";
        return Files.isSymbolicLink(file)
                ? "a symbolic link to " + target(file) + ", " + what
                : what;
    }

    private static String target(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException | UnsupportedOperationException e) {
            return "?";
        }
    }

    @Override
    public synchronized void close() {
        thread.shutdownNow();
    }
}
