package io.cri4j.testing.real.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A long-running child process (containerd, docker-registry) whose output goes to a log file. */
public final class Daemon {

    private static final Logger LOG = LoggerFactory.getLogger(Daemon.class);

    private final String name;
    private final Process process;
    private final Path logFile;

    private Daemon(String name, Process process, Path logFile) {
        this.name = name;
        this.process = process;
        this.logFile = logFile;
    }

    /** Starts {@code command}, appending stdout and stderr to {@code logFile}. */
    public static Daemon start(String name, List<String> command, Path logFile) {
        return start(name, command, java.util.Map.of(), logFile);
    }

    /** Like {@link #start(String, List, Path)} with these environment variables set or replaced. */
    public static Daemon start(
            String name, List<String> command, java.util.Map<String, String> env, Path logFile) {
        ProcessBuilder pb =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.environment().putAll(env);
        try {
            Process p = pb.start();
            LOG.debug("started {} (pid {}): {}", name, p.pid(), command);
            return new Daemon(name, p, logFile);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + ": " + command, e);
        }
    }

    /** The process id. */
    public long pid() {
        return process.pid();
    }

    /** Whether the process is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** The log file, for diagnostics. */
    public Path logFile() {
        return logFile;
    }

    /** Fails with the log tail when the process has exited (for use inside readiness loops). */
    public void checkAlive() {
        if (!process.isAlive()) {
            throw new DaemonExitedException(
                    name
                            + " exited with "
                            + process.exitValue()
                            + "; log "
                            + logFile
                            + ":\n"
                            + Commands.tail(logFile, 4000));
        }
    }

    /** SIGKILL; waits for the process to be gone. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, then SIGKILL after {@code grace}; waits for the process to be gone. */
    public void stop(Duration grace) {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn(
                        "{} (pid {}) ignored SIGTERM for {} ms; killing it",
                        name,
                        process.pid(),
                        grace.toMillis());
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
