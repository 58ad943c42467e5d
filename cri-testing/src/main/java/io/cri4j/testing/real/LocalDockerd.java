package io.cri4j.testing.real;

import io.cri4j.testing.real.internal.Await;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.ContainerdLeftovers;
import io.cri4j.testing.real.internal.Daemon;
import io.cri4j.testing.real.internal.Requirements;
import io.cri4j.testing.real.internal.StaleHarnessDirs;
import io.cri4j.testing.real.internal.TempDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private Docker Engine (Debian {@code docker.io}, dockerd 20.10) with everything under one
 * short temp dir: data root, exec root (where dockerd starts its own containerd), pid file, an
 * empty {@code daemon.json} (so {@code /etc/docker/daemon.json} is not read) and the API socket
 * {@link #socket()}. No iptables rules and no bridge are created. Registries on
 * {@code 127.0.0.0/8} (such as a {@link LocalRegistry}) are plain-HTTP "insecure" registries to
 * dockerd by default, so it pulls from them without configuration.
 *
 * <p>{@link #close()} stops dockerd (SIGTERM, then SIGKILL after a bound), kills its containerd
 * child and anything else still running with an argument inside the temp dir, unmounts what it
 * mounted there and deletes the dir. In JUnit tests use {@link DockerdExtension}. Needs root and
 * the binaries {@code dockerd} and {@code containerd}; when one is missing
 * {@link Builder#start()} skips the calling test (fails it when {@code CI=true}).
 */
public final class LocalDockerd implements AutoCloseable {

    /** Configures a {@link LocalDockerd}. */
    public static final class Builder {
        private Duration startTimeout = Duration.ofSeconds(30);

        private Builder() {}

        /** How long start-up may take until the API answers {@code GET /_ping}; default 30 s. */
        public Builder startTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("startTimeout must be positive");
            }
            this.startTimeout = timeout;
            return this;
        }

        /** Starts dockerd and returns once its API answers {@code GET /_ping} with {@code OK}. */
        public LocalDockerd start() {
            LocalDockerd dockerd = new LocalDockerd(this);
            try {
                dockerd.startUp();
                return dockerd;
            } catch (RuntimeException | Error e) {
                dockerd.close();
                throw e;
            }
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(LocalDockerd.class);
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    private final Duration startTimeout;
    private Path dir;
    private Daemon daemon;
    private Thread shutdownHook;
    private boolean closed;

    private LocalDockerd(Builder b) {
        this.startTimeout = b.startTimeout;
    }

    /** A new builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    private void startUp() {
        Requirements.requireRoot("a private dockerd");
        Path dockerdBinary = Requirements.require("dockerd", "docker.io");
        Requirements.require("containerd", "containerd");
        StaleHarnessDirs.reapOnce();
        long t0 = System.nanoTime();
        dir = TempDirs.create(StaleHarnessDirs.DOCKERD_PREFIX);
        StaleHarnessDirs.markOwned(dir);
        shutdownHook = new Thread(this::close, "cri4j-dockerd-cleanup");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            Files.writeString(dir.resolve("daemon.json"), "{}\n");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write dockerd's daemon.json", e);
        }
        // No --containerd: dockerd starts and supervises its own containerd under exec-root.
        daemon =
                Daemon.start(
                        "dockerd",
                        List.of(
                                dockerdBinary.toString(),
                                "--data-root",
                                dir.resolve("data").toString(),
                                "--exec-root",
                                dir.resolve("exec").toString(),
                                "--pidfile",
                                dir.resolve("dockerd.pid").toString(),
                                "--config-file",
                                dir.resolve("daemon.json").toString(),
                                "-H",
                                "unix://" + socket(),
                                "--iptables=false",
                                "--ip-masq=false",
                                "--bridge=none"),
                        logFile());
        Path socket = socket();
        try {
            Await.until(
                    "dockerd answering GET /_ping on " + socket,
                    startTimeout,
                    () -> {
                        daemon.checkAlive();
                        return Files.exists(socket) && ping(socket);
                    });
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    e.getMessage() + "; log:\n" + Commands.tail(daemon.logFile(), 4000), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted starting dockerd", e);
        }
        LOG.info("dockerd ready on {} in {} ms", socket, (System.nanoTime() - t0) / 1_000_000);
    }

    /** One {@code GET /_ping} over the socket; true when dockerd answers 200 OK. */
    private static boolean ping(Path socket) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            ch.write(
                    ByteBuffer.wrap(
                            "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n"
                                    .getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer buf = ByteBuffer.allocate(512);
            while (buf.hasRemaining() && ch.read(buf) >= 0) {
                // HTTP/1.0: dockerd closes the connection after the answer
            }
            String answer = new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII);
            return answer.startsWith("HTTP/1.")
                    && answer.contains(" 200 ")
                    && answer.endsWith("OK");
        }
    }

    /** The Docker Engine API socket ({@code .../docker.sock} in the temp dir). */
    public Path socket() {
        checkStarted();
        return dir.resolve("docker.sock");
    }

    /** The temp dir holding everything of this dockerd. */
    public Path directory() {
        checkStarted();
        return dir;
    }

    /** dockerd's log file (stdout and stderr, including its containerd's), for diagnostics. */
    public Path logFile() {
        checkStarted();
        return dir.resolve("dockerd.log");
    }

    /** The process id of dockerd. */
    public long pid() {
        if (daemon == null) {
            throw new IllegalStateException("dockerd is not running");
        }
        return daemon.pid();
    }

    /**
     * Pids of processes still running with an argument inside this dockerd's temp dir: dockerd
     * itself and the containerd it started (and its shims). Empty after {@link #close()}.
     */
    public List<Long> processes() {
        return dir == null ? List.of() : ContainerdLeftovers.processesUsing(dir);
    }

    private void checkStarted() {
        if (dir == null) {
            throw new IllegalStateException("dockerd was not started");
        }
    }

    /**
     * Stops dockerd (SIGTERM, SIGKILL after 10 s), kills whatever it left running (its
     * containerd, shims), unmounts and deletes its temp dir. Idempotent; also runs from a JVM
     * shutdown hook if never called.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            List<Long> started = processes();
            if (daemon != null) {
                daemon.stop(STOP_GRACE);
            }
            if (dir != null) {
                killLeftovers();
                awaitExit(started);
                TempDirs.deleteRecursively(dir);
            }
        } finally {
            if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException ignored) {
                    // JVM is shutting down already
                }
            }
        }
    }

    private void killLeftovers() {
        // A clean dockerd shutdown stops its containerd; after a SIGKILL it would be orphaned.
        for (long pid : ContainerdLeftovers.processesUsing(dir)) {
            ProcessHandle.of(pid)
                    .ifPresent(
                            h -> {
                                LOG.warn(
                                        "killing pid {} ({}) left behind by the dockerd in {}",
                                        pid,
                                        h.info().command().orElse("?"),
                                        dir);
                                h.destroy();
                                try {
                                    h.onExit()
                                            .get(
                                                    STOP_GRACE.toMillis(),
                                                    java.util.concurrent.TimeUnit.MILLISECONDS);
                                } catch (Exception e) {
                                    h.destroyForcibly();
                                }
                            });
        }
    }

    /** Waits (bounded) until the processes seen before stopping are gone, SIGKILLing stragglers. */
    private static void awaitExit(List<Long> pids) {
        for (long pid : pids) {
            ProcessHandle.of(pid)
                    .ifPresent(
                            h -> {
                                try {
                                    h.onExit()
                                            .get(
                                                    STOP_GRACE.toMillis(),
                                                    java.util.concurrent.TimeUnit.MILLISECONDS);
                                } catch (Exception e) {
                                    LOG.warn(
                                            "pid {} still running after dockerd stopped; killing it",
                                            pid);
                                    h.destroyForcibly();
                                }
                            });
        }
    }

    @Override
    public String toString() {
        return "LocalDockerd[" + (dir == null ? "not started" : dir.resolve("docker.sock")) + "]";
    }
}
