package io.cri4j.testing.real;

import io.cri4j.testing.real.internal.Daemon;
import io.cri4j.testing.real.internal.NriSocketLink;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One of NRI's own Go example plugins ({@code nri-logger}, {@code nri-device-injector}, NRI
 * v0.8.0, installed beside containerd 2.1.4) registered with a {@link LocalContainerd} built with
 * {@link LocalContainerd.Builder#containerd2WithNri()}: the plugin written by NRI's authors, as a
 * peer for cri4j's NRI plugins.
 *
 * <p>These plugins have no socket option: they always dial {@value NriSocketLink#LINK}. While one
 * runs, that path is a symbolic link to the containerd's private socket, and this JVM holds the
 * machine-wide lock {@value NriSocketLink#LOCK} (several Go plugins of one test share it); {@link
 * #close()} stops the plugin and, with the last one, removes the link and releases the lock. A
 * test on another containerd waits for the lock. Skips (fails when {@code CI=true}) when the
 * binaries are missing, or when a real runtime serves {@value NriSocketLink#LINK} on this machine.
 */
public final class NriGoPlugin implements AutoCloseable {

    private final String fullName;
    private final Daemon daemon;
    private final Path log;
    private boolean closed;

    private NriGoPlugin(String fullName, Daemon daemon, Path log) {
        this.fullName = fullName;
        this.daemon = daemon;
        this.log = log;
    }

    /**
     * Starts NRI's {@code nri-logger} with index {@code index} and {@code args} (e.g.
     * {@code -add-env K=V}, {@code -add-annotation K=V}); returns once containerd has registered it.
     */
    public static NriGoPlugin logger(LocalContainerd containerd, int index, String... args) {
        return start(containerd, "nri-logger", index, args);
    }

    /**
     * Starts NRI's {@code nri-device-injector} (devices from the pod annotation
     * {@code devices.nri.io/container.NAME}); returns once containerd has registered it.
     */
    public static NriGoPlugin deviceInjector(
            LocalContainerd containerd, int index, String... args) {
        return start(containerd, "nri-device-injector", index, args);
    }

    /** Starts the plugin binary {@code name} from containerd 2.1.4's directory; see {@link #logger}. */
    public static NriGoPlugin start(
            LocalContainerd containerd, String name, int index, String... args) {
        Path socket = containerd.nriSocket();
        Path binary = containerd.directory().resolve("shimbin").resolve("containerd-shim-runc-v2");
        Path bin;
        try {
            bin = Files.readSymbolicLink(binary).getParent();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot find containerd 2.1.4's directory: " + e, e);
        }
        Path exe = bin.resolve(name);
        if (!Files.isExecutable(exe)) {
            io.cri4j.testing.real.internal.Requirements.unavailable(
                    "NRI's Go plugin "
                            + exe
                            + " is not installed (bash ../shared/peers/install-containerd2.sh installs it)");
        }
        String full = String.format("%02d-%s", index, name);
        int before = containerd.nriPluginRegistrations(full);
        NriSocketLink.acquire(socket);
        Daemon d = null;
        try {
            List<String> cmd =
                    new ArrayList<>(List.of(exe.toString(), "-idx", String.format("%02d", index)));
            cmd.addAll(List.of(args));
            Path log = containerd.directory().resolve(full + ".log");
            d = Daemon.start(name, cmd, log);
            containerd.awaitNriPluginRegistrations(full, before + 1, Duration.ofSeconds(20));
            return new NriGoPlugin(full, d, log);
        } catch (RuntimeException | Error e) {
            if (d != null) {
                d.stop(Duration.ofSeconds(5));
            }
            NriSocketLink.release();
            throw e;
        }
    }

    /**
     * Starts NRI's Go plugin {@code name} ({@code nri-logger}, {@code nri-device-injector}) from
     * containerd 2.1.4's directory ({@value LocalContainerd#CONTAINERD2_BIN_DEFAULT}, or {@value
     * LocalContainerd#CONTAINERD2_BIN_ENV}) against any NRI runtime listening on {@code nriSocket}
     * (cri4j's own {@code NriHost}, for one), with {@code -idx index} and {@code args}. Returns
     * once the process runs: the caller awaits the registration on its runtime. The link and lock
     * rules are those of {@link #logger}.
     *
     * @param logDir where the plugin's log ({@code NN-name.log}) goes
     */
    public static NriGoPlugin launch(
            Path nriSocket, Path logDir, String name, int index, String... args) {
        Path bin =
                Path.of(
                        System.getenv()
                                .getOrDefault(
                                        LocalContainerd.CONTAINERD2_BIN_ENV,
                                        LocalContainerd.CONTAINERD2_BIN_DEFAULT));
        Path exe = bin.resolve(name);
        if (!Files.isExecutable(exe)) {
            io.cri4j.testing.real.internal.Requirements.unavailable(
                    "NRI's Go plugin "
                            + exe
                            + " is not installed (bash ../shared/peers/install-containerd2.sh installs it)");
        }
        String full = String.format("%02d-%s", index, name);
        NriSocketLink.acquire(nriSocket);
        try {
            List<String> cmd =
                    new ArrayList<>(List.of(exe.toString(), "-idx", String.format("%02d", index)));
            cmd.addAll(List.of(args));
            Path log = logDir.resolve(full + ".log");
            return new NriGoPlugin(full, Daemon.start(name, cmd, log), log);
        } catch (RuntimeException | Error e) {
            NriSocketLink.release();
            throw e;
        }
    }

    /** The plugin process's id (to stop or kill it from a test). */
    public long pid() {
        return daemon.pid();
    }

    /** The name containerd knows it by, e.g. {@code 20-nri-logger}. */
    public String fullName() {
        return fullName;
    }

    /** The plugin's own log (stdout and stderr). */
    public Path logFile() {
        return log;
    }

    /** Whether the plugin process still runs. */
    public boolean isAlive() {
        return daemon.isAlive();
    }

    /** Stops the plugin (SIGTERM); the last one removes the socket link and releases the lock. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            daemon.stop(Duration.ofSeconds(5));
        } finally {
            NriSocketLink.release();
        }
    }

    @Override
    public String toString() {
        return "NriGoPlugin[" + fullName + "]";
    }
}
