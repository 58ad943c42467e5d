package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.testing.real.internal.Await;
import io.cri4j.testing.real.internal.StaleHarnessDirs;
import io.cri4j.testing.real.internal.TempDirs;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link LocalContainerd#close()} leaves behind: nothing, whether the pods were removed or
 * not, and even when containerd itself was killed first.
 */
class LocalContainerdLifecycleIT {

    @TempDir Path logs;

    @Test
    void closeRemovesRunningPodsProcessesShimsMountsAndTheTempDir() throws Exception {
        Leftovers before;
        LocalContainerd containerd = LocalContainerd.builder().start();
        try {
            before = runPodWithOwnNetworkAndKeepIt(containerd);
        } finally {
            containerd.close();
        }
        assertAllGone(containerd, before);
        containerd.close(); // idempotent
    }

    @Test
    void closeCleansUpAfterContainerdWasKilled() throws Exception {
        Leftovers before;
        LocalContainerd containerd = LocalContainerd.builder().start();
        try {
            before = runPodWithOwnNetworkAndKeepIt(containerd);
            ProcessHandle daemon = ProcessHandle.of(containerd.pid()).orElseThrow();
            assertThat(daemon.destroyForcibly()).isTrue();
            daemon.onExit().get(10, TimeUnit.SECONDS);
        } finally {
            containerd.close();
        }
        assertAllGone(containerd, before);
    }

    @Test
    void leftoversOfADeadHarnessJvmAreReapedAndLiveOnesAreNot() throws Exception {
        Leftovers before;
        LocalContainerd containerd = LocalContainerd.builder().start();
        try {
            before = runPodWithOwnNetworkAndKeepIt(containerd);
            Path tmp = containerd.directory().getParent();

            StaleHarnessDirs.reap(tmp);
            assertThat(containerd.directory()).as("dir of a live JVM").exists();
            assertThat(ProcessHandle.of(containerd.pid())).isPresent();

            // pretend the owning JVM died: a finished process's pid and start time
            // (one that waits on its stdin: a process that already exited has no start time)
            Process gone = new ProcessBuilder("cat").start();
            long started = gone.toHandle().info().startInstant().orElseThrow().toEpochMilli();
            gone.getOutputStream().close();
            assertThat(gone.waitFor(10, TimeUnit.SECONDS)).isTrue();
            Files.writeString(containerd.directory().resolve("owner"), gone.pid() + " " + started);

            StaleHarnessDirs.reap(tmp);
            Await.until(
                    "containerd killed",
                    Duration.ofSeconds(5),
                    () -> isGoneOrZombie(containerd.pid()));
        } finally {
            containerd.close();
        }
        assertAllGone(containerd, before);
    }

    @Test
    void ownedRegistryIsClosedWithContainerd() {
        LocalContainerd containerd = LocalContainerd.builder().start();
        LocalRegistry registry = containerd.registry();
        assertThat(registry.isRunning()).isTrue();
        containerd.close();
        assertThat(registry.isRunning()).isFalse();
        assertThat(registry.directory()).doesNotExist();
        assertThatThrownBy(() -> registry.push(TestImage.busybox()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aRegistryPassedInStaysOwnedByTheCaller() {
        try (LocalRegistry registry = LocalRegistry.builder().start()) {
            try (LocalContainerd containerd =
                    LocalContainerd.builder().registry(registry).start()) {
                assertThat(containerd.registry()).isSameAs(registry);
                assertThat(containerd.sandboxImage())
                        .isEqualTo(registry.reference(TestImage.pause()));
            }
            assertThat(registry.isRunning()).isTrue();
        }
    }

    private record Leftovers(
            Path dir,
            Path socket,
            List<Long> pids,
            List<Path> shimSockets,
            String podId,
            String bridge) {}

    private Leftovers runPodWithOwnNetworkAndKeepIt(LocalContainerd containerd) throws Exception {
        ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
        try {
            CriCalls cri = new CriCalls(channel);
            String image = containerd.registry().push(TestImage.busybox()).reference();
            cri.pull(image);
            PodSandboxConfig pod = CriCalls.podConfig("it-own-net", false, logs);
            String podId = cri.runPod(pod);
            String ip =
                    cri.runtime
                            .podSandboxStatus(
                                    PodSandboxStatusRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build())
                            .getStatus()
                            .getNetwork()
                            .getIp();
            assertThat(ip).as("pod IP from the private CNI bridge").startsWith("10.254.254.");
            String containerId = cri.startSleeper(podId, pod, image);
            String bridge =
                    JsonParser.parseString(
                                    Files.readString(
                                            containerd
                                                    .directory()
                                                    .resolve("cni/net.d/10-cri4j.conflist")))
                            .getAsJsonObject()
                            .getAsJsonArray("plugins")
                            .get(0)
                            .getAsJsonObject()
                            .get("bridge")
                            .getAsString();
            assertThat(Path.of("/sys/class/net", bridge)).as("CNI bridge").exists();
            List<Long> pids = List.of(cri.sandboxPid(podId), cri.containerPid(containerId));
            for (long pid : pids) {
                assertThat(ProcessHandle.of(pid)).as("pid %d running", pid).isPresent();
            }
            assertThat(shimPids(containerd.socketPath())).isNotEmpty();
            assertThat(TempDirs.mountsUnder(containerd.directory())).isNotEmpty();
            return new Leftovers(
                    containerd.directory(),
                    containerd.socketPath(),
                    pids,
                    shimSockets(containerd.directory()),
                    podId,
                    bridge);
        } finally {
            channel.shutdownNow();
        }
    }

    private static void assertAllGone(LocalContainerd containerd, Leftovers before)
            throws Exception {
        for (long pid : before.pids()) {
            // a killed process may linger as a zombie of its reaper for a moment
            Await.until("pid " + pid + " gone", Duration.ofSeconds(5), () -> isGoneOrZombie(pid));
        }
        assertThat(shimPids(before.socket())).as("shims of our containerd").isEmpty();
        assertThat(before.shimSockets()).isNotEmpty();
        for (Path socket : before.shimSockets()) {
            assertThat(socket).as("shim socket").doesNotExist();
        }
        assertThat(TempDirs.mountsUnder(before.dir())).isEmpty();
        Path cniResults = Path.of("/var/lib/cni/results");
        if (Files.isDirectory(cniResults)) {
            try (Stream<Path> results = Files.list(cniResults)) {
                assertThat(results.map(p -> p.getFileName().toString()))
                        .as("CNI results cache")
                        .noneMatch(n -> n.contains(before.podId()));
            }
        }
        assertThat(before.dir()).doesNotExist();
        assertThat(containerd.registry().isRunning()).isFalse();
        assertThat(Path.of("/sys/class/net", before.bridge())).as("CNI bridge").doesNotExist();
    }

    private static boolean isGoneOrZombie(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("State:")) {
                    return line.contains("Z");
                }
            }
            return true;
        } catch (IOException e) {
            return true;
        }
    }

    private static List<Path> shimSockets(Path dir) throws IOException {
        List<Path> sockets = new ArrayList<>();
        Path tasks = dir.resolve("state/io.containerd.runtime.v2.task/k8s.io");
        try (Stream<Path> s = Files.list(tasks)) {
            for (Path task : s.toList()) {
                String uri = Files.readString(task.resolve("address")).strip();
                sockets.add(Path.of(uri.replaceFirst("^unix://", "")));
            }
        }
        return sockets;
    }

    static List<Long> shimPids(Path socket) {
        List<Long> pids = new ArrayList<>();
        try (DirectoryStream<Path> proc = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : proc) {
                try {
                    String cmdline =
                            new String(
                                    Files.readAllBytes(p.resolve("cmdline")),
                                    StandardCharsets.UTF_8);
                    if (cmdline.contains("containerd-shim")
                            && cmdline.contains("\0" + socket + "\0")) {
                        pids.add(Long.parseLong(p.getFileName().toString()));
                    }
                } catch (IOException ignored) {
                    // exited meanwhile
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return pids;
    }
}
