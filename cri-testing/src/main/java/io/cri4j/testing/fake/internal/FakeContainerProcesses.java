package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.grpc.StatusRuntimeException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fake containers' main processes: a started container whose config has a command (or args)
 * runs it as a host process, busybox's applet of that name when {@value #BUSYBOX} is installed (the
 * test images are busybox), the host's command otherwise. Its stdout and stderr go to the
 * container's log file in the CRI log format ({@link CriLogFile}, at the sandbox's {@code
 * log_directory} joined with the container's {@code log_path}) and to every attached client; its
 * stdin, when the config asks for one, comes from attached clients ({@code stdin_once}: closed when
 * the first client closes it). The process exiting makes the container exit with its code; stopping
 * or removing the container kills it. A container without a command, or whose command the host
 * cannot start, runs no process and stays running until stopped.
 */
public final class FakeContainerProcesses implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FakeContainerProcesses.class);

    /** The busybox binary whose applets the fake's containers run when it exists. */
    static final String BUSYBOX = "/bin/busybox";

    private static volatile Set<String> applets;

    private final FakeState state;
    private final Clock clock;
    private final Map<String, Io> ios = new ConcurrentHashMap<>();
    private final ExecutorService threads;
    private final AutoCloseable subscription;
    private volatile boolean closed;

    /** One container's process and log. */
    static final class Io {
        final String id;
        final boolean tty;
        final boolean stdinOnce;
        final CriLogFile logFile;
        final List<OutputStream> stdout = new CopyOnWriteArrayList<>();
        final List<OutputStream> stderr = new CopyOnWriteArrayList<>();
        volatile Process process;
        volatile OutputStream stdin;

        Io(String id, ContainerConfig config, CriLogFile logFile) {
            this.id = id;
            this.tty = config.getTty();
            this.stdinOnce = config.getStdinOnce();
            this.logFile = logFile;
        }

        void kill() {
            Process p = process;
            if (p != null) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }

        void closeStdin() {
            OutputStream in = stdin;
            stdin = null;
            if (in != null) {
                try {
                    in.close();
                } catch (IOException ignored) {
                    // the process is gone
                }
            }
        }
    }

    public FakeContainerProcesses(FakeState state, Clock clock) {
        this.state = state;
        this.clock = clock;
        AtomicInteger n = new AtomicInteger();
        this.threads =
                Executors.newCachedThreadPool(
                        r -> {
                            Thread t = new Thread(r, "cri4j-fake-container-" + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        this.subscription = state.subscribe(this::onEvent);
        state.onReset(this::endAll);
    }

    /** Kills every container process and closes every log file (the containers are forgotten). */
    private void endAll() {
        for (Io io : ios.values()) {
            io.kill();
            io.closeStdin();
            if (io.logFile != null) {
                io.logFile.close();
            }
        }
        ios.clear();
    }

    /** Runs under the state's lock: starting and killing a process do not block. */
    private void onEvent(ContainerEventResponse e) {
        String id = e.getContainerId();
        switch (e.getContainerEventType()) {
            case CONTAINER_STARTED_EVENT -> {
                ContainerRecord c = state.containerOrNull(id);
                if (c != null
                        && c.state == ContainerState.CONTAINER_RUNNING
                        && !closed
                        && !ios.containsKey(id)) {
                    start(c);
                }
            }
            case CONTAINER_STOPPED_EVENT -> {
                Io io = ios.get(id);
                if (io != null) {
                    io.kill();
                }
            }
            case CONTAINER_DELETED_EVENT -> {
                Io io = ios.remove(id);
                if (io != null) {
                    io.kill();
                    io.closeStdin();
                    if (io.logFile != null) {
                        io.logFile.close();
                    }
                }
            }
            default -> {
                // created: nothing runs yet
            }
        }
    }

    private void start(ContainerRecord c) {
        CriLogFile logFile = null;
        if (!c.logPath.isEmpty()) {
            try {
                logFile = new CriLogFile(Path.of(c.logPath), clock);
            } catch (IOException | RuntimeException e) {
                log.warn(
                        "container {}: cannot open its log file {}: {}",
                        c.id,
                        c.logPath,
                        e.toString());
            }
        }
        Io io = new Io(c.id, c.config, logFile);
        ios.put(c.id, io);
        List<String> cmd = new ArrayList<>(c.config.getCommandList());
        cmd.addAll(c.config.getArgsList());
        if (cmd.isEmpty()) {
            return;
        }
        ProcessBuilder pb = new ProcessBuilder(resolve(cmd));
        pb.environment().putAll(c.env());
        String workingDir = c.config.getWorkingDir();
        if (!workingDir.isEmpty() && Files.isDirectory(Path.of(workingDir))) {
            pb.directory(new File(workingDir));
        }
        pb.redirectErrorStream(io.tty);
        if (!c.config.getStdin()) {
            pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        }
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            log.warn(
                    "container {}: its command {} cannot run on this host, it runs no process: {}",
                    c.id,
                    cmd,
                    e.getMessage());
            return;
        }
        io.process = process;
        io.stdin = c.config.getStdin() ? process.getOutputStream() : null;
        c.pid = (int) process.pid();
        List<CompletableFuture<Void>> pumps = new ArrayList<>();
        pumps.add(pump(io, process.getInputStream(), false));
        if (!io.tty) {
            pumps.add(pump(io, process.getErrorStream(), true));
        }
        threads.execute(
                () -> {
                    int code;
                    try {
                        code = process.waitFor();
                        CompletableFuture.allOf(pumps.toArray(new CompletableFuture<?>[0]))
                                .get(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    } catch (Exception e) {
                        code = process.exitValue();
                    }
                    io.closeStdin();
                    try {
                        state.exitContainer(io.id, code);
                    } catch (StatusRuntimeException ignored) {
                        // stopped or removed already: the stop decided the exit
                    }
                });
    }

    private CompletableFuture<Void> pump(Io io, InputStream in, boolean isStderr) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        threads.execute(
                () -> {
                    byte[] buf = new byte[8192];
                    try (in) {
                        int n;
                        while ((n = in.read(buf)) >= 0) {
                            deliver(io, isStderr, buf, n);
                        }
                    } catch (IOException e) {
                        // the process was killed
                    } finally {
                        if (io.logFile != null) {
                            try {
                                io.logFile.endOf(isStderr);
                            } catch (IOException e) {
                                log.warn("container {}: log write failed: {}", io.id, e.toString());
                            }
                        }
                        done.complete(null);
                    }
                });
        return done;
    }

    private static void deliver(Io io, boolean isStderr, byte[] buf, int n) {
        if (io.logFile != null) {
            try {
                io.logFile.write(isStderr, buf, 0, n);
            } catch (IOException e) {
                log.warn("container {}: log write failed: {}", io.id, e.toString());
            }
        }
        List<OutputStream> clients = isStderr ? io.stderr : io.stdout;
        clients.removeIf(
                out -> {
                    try {
                        out.write(buf, 0, n);
                        out.flush();
                        return false;
                    } catch (IOException e) {
                        return true; // the attached client left
                    }
                });
    }

    /** The running process's session, empty when the container runs none. */
    Optional<Io> io(String containerId) {
        Io io = ios.get(containerId);
        return io == null || io.process == null ? Optional.empty() : Optional.of(io);
    }

    /**
     * Output of a container without a process (attach echoes stdin, as {@code cat} would): written to
     * its log and its other attached clients.
     */
    void echo(String containerId, byte[] buf, int n) {
        Io io = ios.get(containerId);
        if (io != null && io.logFile != null) {
            try {
                io.logFile.write(false, buf, 0, n);
            } catch (IOException e) {
                log.warn("container {}: log write failed: {}", containerId, e.toString());
            }
        }
    }

    /**
     * Connects an attached client to the container's process until {@code ended} says the session is
     * over: the client's stdin (if any, and if the container has one) feeds the process, its
     * stdout/stderr receive the process's output from now on.
     *
     * @return false when the container runs no process (the caller echoes instead)
     */
    boolean attach(
            String containerId,
            InputStream stdin,
            OutputStream stdout,
            OutputStream stderr,
            java.util.concurrent.CountDownLatch ended)
            throws InterruptedException {
        Optional<Io> found = io(containerId);
        if (found.isEmpty()) {
            return false;
        }
        Io io = found.get();
        // with a TTY the process's stderr is merged into stdout, as a terminal has one output
        OutputStream err = io.tty ? null : stderr;
        if (stdout != null) {
            io.stdout.add(stdout);
        }
        if (err != null) {
            io.stderr.add(err);
        }
        try {
            if (stdin != null && io.stdin != null) {
                byte[] buf = new byte[8192];
                int n;
                try {
                    while (ended.getCount() > 0 && (n = stdin.read(buf)) >= 0) {
                        OutputStream in = io.stdin;
                        if (in == null) {
                            break;
                        }
                        in.write(buf, 0, n);
                        in.flush();
                    }
                    if (io.stdinOnce) {
                        io.closeStdin();
                    }
                } catch (IOException e) {
                    // the process's stdin closed (it exited) or the client left
                }
            }
            ended.await();
            return true;
        } finally {
            io.stdout.remove(stdout);
            if (err != null) {
                io.stderr.remove(err);
            }
        }
    }

    /**
     * Closes the container's log file and opens its path again (ReopenContainerLog); a container
     * without a log path has nothing to reopen.
     *
     * @throws IOException when the path cannot be opened again
     */
    public void reopenLog(String containerId) throws IOException {
        Io io = ios.get(containerId);
        if (io != null && io.logFile != null) {
            io.logFile.reopen();
        }
    }

    /** The command to start: busybox's applet of that name when busybox is installed. */
    static List<String> resolve(List<String> cmd) {
        String first = cmd.get(0);
        String name = first.substring(first.lastIndexOf('/') + 1);
        boolean pathLike = first.contains("/");
        if ((!pathLike
                        || first.startsWith("/bin/")
                        || first.startsWith("/usr/bin/")
                        || first.startsWith("/sbin/")
                        || first.startsWith("/usr/sbin/"))
                && busyboxApplets().contains(name)) {
            List<String> out = new ArrayList<>(cmd.size() + 1);
            out.add(BUSYBOX);
            out.add(name);
            out.addAll(cmd.subList(1, cmd.size()));
            return out;
        }
        return cmd;
    }

    private static Set<String> busyboxApplets() {
        Set<String> a = applets;
        if (a == null) {
            a = Set.of();
            if (Files.isExecutable(Path.of(BUSYBOX))) {
                try {
                    Process p =
                            new ProcessBuilder(BUSYBOX, "--list")
                                    .redirectErrorStream(true)
                                    .redirectInput(
                                            ProcessBuilder.Redirect.from(new File("/dev/null")))
                                    .start();
                    String out =
                            new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    if (p.waitFor() == 0) {
                        a = Set.copyOf(out.lines().map(String::strip).toList());
                    }
                } catch (IOException e) {
                    log.debug("busybox --list failed: {}", e.toString());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            applets = a;
        }
        return a;
    }

    /** Kills every container process and closes every log file. */
    @Override
    public void close() {
        closed = true;
        try {
            subscription.close();
        } catch (Exception ignored) {
            // removing a listener does not fail
        }
        endAll();
        threads.shutdownNow();
    }
}
