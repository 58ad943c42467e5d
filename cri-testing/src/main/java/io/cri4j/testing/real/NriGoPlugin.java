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
 * v0.8.0, installed beside containerd 2.1.4; with containerd 2.3.4 NRI v0.12.0's, which also has
 * {@code nri-template}) registered with a {@link LocalContainerd} built with {@link
 * LocalContainerd.Builder#containerd2WithNri()} or {@link
 * LocalContainerd.Builder#containerd23WithNri()}: the plugin written by NRI's authors, as a peer
 * for cri4j's NRI plugins.
 *
 * <p>NRI v0.12's plugins are told their socket ({@code -socket-path}; {@code nri-template}: {@code
 * -socket}). NRI v0.8's plugins have no socket option: they always dial {@value NriSocketLink#LINK}. While one
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
    private final boolean linked;
    private boolean closed;

    private NriGoPlugin(String fullName, Daemon daemon, Path log, boolean linked) {
        this.fullName = fullName;
        this.daemon = daemon;
        this.log = log;
        this.linked = linked;
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

    /**
     * Starts the plugin binary {@code name} from the containerd's own directory (2.1.4's or
     * 2.3.4's); see {@link #logger}.
     */
    public static NriGoPlugin start(
            LocalContainerd containerd, String name, int index, String... args) {
        Path socket = containerd.nriSocket();
        Path exe = executable(containerd.binDirectory(), name);
        String full = String.format("%02d-%s", index, name);
        int before = containerd.nriPluginRegistrations(full);
        boolean linked = !containerd.hasNri012();
        if (linked) {
            NriSocketLink.acquire(socket);
        }
        Daemon d = null;
        try {
            List<String> cmd = command(exe, name, index, linked ? null : socket, args);
            Path log = containerd.directory().resolve(full + ".log");
            d = Daemon.start(name, cmd, log);
            containerd.awaitNriPluginRegistrations(full, before + 1, Duration.ofSeconds(20));
            return new NriGoPlugin(full, d, log, linked);
        } catch (RuntimeException | Error e) {
            if (d != null) {
                d.stop(Duration.ofSeconds(5));
            }
            if (linked) {
                NriSocketLink.release();
            }
            throw e;
        }
    }

    /**
     * Starts NRI v0.12.0's Go plugin {@code name} ({@code nri-logger}, {@code
     * nri-device-injector}, {@code nri-template}) from containerd 2.3.4's directory ({@value
     * LocalContainerd#CONTAINERD23_BIN_DEFAULT}, or {@value LocalContainerd#CONTAINERD23_BIN_ENV})
     * against any NRI runtime listening on {@code nriSocket} (cri4j's proxy, fake runtime or
     * {@code NriHost}), with {@code -idx index}, the socket flag and {@code args}. No link and no
     * lock: several run at once. Returns once the process runs: the caller awaits the registration
     * on its runtime.
     *
     * @param logDir where the plugin's log ({@code NN-name.log}) goes
     */
    public static NriGoPlugin launchV012(
            Path nriSocket, Path logDir, String name, int index, String... args) {
        Path exe =
                executable(
                        LocalContainerd.CONTAINERD23_BIN_ENV,
                        LocalContainerd.CONTAINERD23_BIN_DEFAULT,
                        name);
        String full = String.format("%02d-%s", index, name);
        Path log = logDir.resolve(full + ".log");
        return new NriGoPlugin(
                full,
                Daemon.start(name, command(exe, name, index, nriSocket, args), log),
                log,
                false);
    }

    /** The plugin binary {@code name} in the directory {@code env} names, else {@code dir}. */
    private static Path executable(String env, String dir, String name) {
        return executable(Path.of(System.getenv().getOrDefault(env, dir)), name);
    }

    private static Path executable(Path bin, String name) {
        Path exe = bin.resolve(name);
        if (!Files.isExecutable(exe)) {
            io.cri4j.testing.real.internal.Requirements.unavailable(
                    "NRI's Go plugin "
                            + exe
                            + " is not installed (bash ../shared/peers/install-containerd2.sh and"
                            + " install-containerd23.sh install them)");
        }
        return exe;
    }

    /** The command line; {@code socket} null: the plugin dials its default socket (NRI v0.8). */
    private static List<String> command(
            Path exe, String name, int index, Path socket, String... args) {
        List<String> cmd =
                new ArrayList<>(List.of(exe.toString(), "-idx", String.format("%02d", index)));
        if (socket != null) {
            if (name.equals("nri-template")) {
                cmd.addAll(List.of("-socket", socket.toString(), "-name", name));
            } else {
                cmd.addAll(List.of("-socket-path", socket.toString()));
            }
        }
        cmd.addAll(List.of(args));
        return cmd;
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
        Path exe =
                executable(
                        LocalContainerd.CONTAINERD2_BIN_ENV,
                        LocalContainerd.CONTAINERD2_BIN_DEFAULT,
                        name);
        String full = String.format("%02d-%s", index, name);
        NriSocketLink.acquire(nriSocket);
        try {
            Path log = logDir.resolve(full + ".log");
            return new NriGoPlugin(
                    full,
                    Daemon.start(name, command(exe, name, index, null, args), log),
                    log,
                    true);
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
            if (linked) {
                NriSocketLink.release();
            }
        }
    }

    @Override
    public String toString() {
        return "NriGoPlugin[" + fullName + "]";
    }
}
