package io.cri4j.testing.real.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes what a private containerd may leave outside a clean CRI shutdown: runc containers
 * under its runc root, shims serving its socket, their sockets in {@code /run/containerd/s},
 * CNI result cache entries and its CNI bridge. Works from the containerd's directory alone, so
 * it also cleans after a containerd whose JVM died.
 */
public final class ContainerdLeftovers {

    private static final Logger LOG = LoggerFactory.getLogger(ContainerdLeftovers.class);
    private static final Path CNI_RESULTS = Path.of("/var/lib/cni/results");

    private ContainerdLeftovers() {}

    /**
     * Cleans up after the (already stopped) containerd whose directory is {@code dir}.
     *
     * @param dir the containerd's temp dir (config, root, state, runc root, socket)
     * @param namespace the containerd namespace its CRI plugin used
     * @param networkName its CNI network name
     * @param bridgeName its CNI bridge interface
     */
    public static void clean(Path dir, String namespace, String networkName, String bridgeName) {
        Path socket = dir.resolve("containerd.sock");
        Set<String> ids = new HashSet<>();
        Path runcRoot = dir.resolve("runc").resolve(namespace);
        Path tasks =
                dir.resolve("state").resolve("io.containerd.runtime.v2.task").resolve(namespace);
        for (Path p :
                list(
                        dir.resolve("root")
                                .resolve("io.containerd.grpc.v1.cri")
                                .resolve("sandboxes"))) {
            ids.add(p.getFileName().toString());
        }
        List<Path> runcContainers = list(runcRoot);
        for (Path container : runcContainers) {
            ids.add(container.getFileName().toString());
            LOG.warn("runc container {} was left running by containerd; deleting it", container);
            Commands.exec(
                    Duration.ofSeconds(20),
                    null,
                    Map.of(),
                    List.of(
                            "runc",
                            "--root",
                            runcRoot.toString(),
                            "delete",
                            "--force",
                            container.getFileName().toString()));
        }
        if (runcContainers.isEmpty() && !shimPids(socket).isEmpty()) {
            try {
                // After a clean removal shims exit on their own right after their last task is
                // deleted.
                Await.until(
                        "containerd shims exiting",
                        Duration.ofSeconds(3),
                        () -> shimPids(socket).isEmpty());
            } catch (TimeoutException e) {
                LOG.debug("shims still running after 3 s", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // Shims whose containerd is gone wait for it forever.
        for (long pid : shimPids(socket)) {
            LOG.warn("killing containerd shim {} left behind by the containerd in {}", pid, dir);
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        // Shim sockets live in /run/containerd/s; each task dir records its shim's address.
        for (Path task : list(tasks)) {
            ids.add(task.getFileName().toString());
            Path address = task.resolve("address");
            try {
                if (Files.isRegularFile(address)) {
                    String uri = Files.readString(address, StandardCharsets.UTF_8).strip();
                    Path shimSocket = Path.of(uri.startsWith("unix://") ? uri.substring(7) : uri);
                    if (shimSocket.startsWith("/run/containerd/s")) {
                        Files.deleteIfExists(shimSocket);
                    }
                }
            } catch (IOException e) {
                LOG.warn("cannot remove shim socket of {}: {}", task, e.toString());
            }
        }
        // CNI results cache entries are named NETWORK-SANDBOXID-IFNAME (also "cni-loopback-...").
        for (Path r : list(CNI_RESULTS)) {
            String name = r.getFileName().toString();
            if (name.startsWith(networkName + "-")
                    || ids.stream().anyMatch(id -> name.contains("-" + id + "-"))) {
                try {
                    Files.deleteIfExists(r);
                } catch (IOException e) {
                    LOG.warn("cannot remove {}: {}", r, e.toString());
                }
            }
        }
        if (Files.exists(Path.of("/sys/class/net", bridgeName))) {
            Commands.exec(
                    Duration.ofSeconds(10),
                    null,
                    Map.of(),
                    List.of("ip", "link", "delete", bridgeName));
        }
    }

    /** Pids of shims started for {@code socket}: their command line has {@code -address SOCKET}. */
    public static List<Long> shimPids(Path socket) {
        String address = socket.toString();
        return processes(
                args -> {
                    if (args.length == 0 || !args[0].contains("containerd-shim")) {
                        return false;
                    }
                    for (int i = 0; i + 1 < args.length; i++) {
                        if (args[i].equals("-address") && args[i + 1].equals(address)) {
                            return true;
                        }
                    }
                    return false;
                });
    }

    /** Pids of processes with an argument inside {@code dir} (a daemon started with its config). */
    public static List<Long> processesUsing(Path dir) {
        String prefix = dir.toString() + "/";
        return processes(
                args -> {
                    for (String arg : args) {
                        if (arg.startsWith(prefix)) {
                            return true;
                        }
                    }
                    return false;
                });
    }

    private static List<Long> processes(Predicate<String[]> matches) {
        List<Long> pids = new ArrayList<>();
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> proc = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : proc) {
                try {
                    long pid = Long.parseLong(p.getFileName().toString());
                    byte[] cmdline = Files.readAllBytes(p.resolve("cmdline"));
                    if (pid != self
                            && cmdline.length > 0
                            && matches.test(
                                    new String(cmdline, StandardCharsets.UTF_8).split("\0"))) {
                        pids.add(pid);
                    }
                } catch (IOException | NumberFormatException ignored) {
                    // the process exited meanwhile
                }
            }
        } catch (IOException e) {
            LOG.warn("cannot scan /proc: {}", e.toString());
        }
        return pids;
    }

    static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}
