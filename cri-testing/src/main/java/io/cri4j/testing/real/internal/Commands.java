package io.cri4j.testing.real.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs short-lived helper commands (umoci, skopeo, gcc, runc, umount ...) to completion. */
public final class Commands {

    /** The outcome of a finished command. */
    public record Result(List<String> command, int exitCode, String output) {
        /** Whether the command exited with 0. */
        public boolean ok() {
            return exitCode == 0;
        }
    }

    private Commands() {}

    /** Runs {@code command}, failing with its output when it exits non-zero. */
    public static String run(Duration timeout, String... command) {
        return run(timeout, null, Map.of(), List.of(command));
    }

    /** Runs {@code command} in {@code dir} with extra environment, failing when it exits non-zero. */
    public static String run(
            Duration timeout, Path dir, Map<String, String> env, List<String> command) {
        Result result = exec(timeout, dir, env, command);
        if (!result.ok()) {
            throw new IllegalStateException(
                    "command "
                            + String.join(" ", command)
                            + " exited with "
                            + result.exitCode()
                            + ": "
                            + result.output().strip());
        }
        return result.output();
    }

    /** Runs {@code command} and returns its exit code and combined output, whatever they are. */
    public static Result exec(
            Duration timeout, Path dir, Map<String, String> env, List<String> command) {
        ProcessBuilder pb =
                new ProcessBuilder(new ArrayList<>(command))
                        .redirectErrorStream(true)
                        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        if (dir != null) {
            pb.directory(dir.toFile());
        }
        pb.environment().putAll(env);
        Path out = null;
        Process process = null;
        try {
            // Output goes to a file so a chatty command can never block on a full pipe.
            out = Files.createTempFile("cri4j-cmd", ".out");
            pb.redirectOutput(out.toFile());
            process = pb.start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
                throw new IllegalStateException(
                        "command "
                                + String.join(" ", command)
                                + " did not finish within "
                                + timeout.toMillis()
                                + " ms: "
                                + readQuietly(out));
            }
            return new Result(List.copyOf(command), process.exitValue(), readQuietly(out));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (process != null) {
                process.destroyForcibly();
            }
            throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
        } finally {
            if (out != null) {
                try {
                    Files.deleteIfExists(out);
                } catch (IOException ignored) {
                    // best effort
                }
            }
        }
    }

    /** Reads the last {@code maxBytes} of a log file, for error messages. */
    public static String tail(Path file, int maxBytes) {
        try (var ch = Files.newByteChannel(file)) {
            long size = ch.size();
            ch.position(Math.max(0, size - maxBytes));
            try (InputStream in = java.nio.channels.Channels.newInputStream(ch)) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } catch (IOException e) {
            return "(cannot read " + file + ": " + e.getMessage() + ")";
        }
    }

    private static String readQuietly(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e.getMessage() + ")";
        }
    }
}
