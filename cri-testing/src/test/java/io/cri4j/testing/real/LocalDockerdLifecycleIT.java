package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.testing.real.internal.TempDirs;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link LocalDockerd} answers the Engine API, and {@link LocalDockerd#close()} leaves nothing
 * behind: no dockerd, no containerd it started, no mounts, no temp dir; also when dockerd was
 * killed first (its mounts and any orphaned containerd).
 */
class LocalDockerdLifecycleIT {

    @RegisterExtension static final DockerdExtension DOCKERD = new DockerdExtension();

    @Test
    void extensionServesTheEngineApiOnItsSocket(LocalDockerd dockerd) throws IOException {
        assertThat(dockerd.socket()).isEqualTo(DOCKERD.socket());
        assertThat(DOCKERD.socket().toString().length()).as("short socket path").isLessThan(100);
        String version = get(DOCKERD.socket(), "/version");
        assertThat(version).startsWith("HTTP/1.0 200").contains("\"ApiVersion\":\"1.");
    }

    @Test
    void closeStopsDockerdAndItsOwnContainerdAndRemovesTheTempDir() throws Exception {
        LocalDockerd dockerd = LocalDockerd.builder().start();
        Path dir = dockerd.directory();
        List<Long> running;
        try {
            running = dockerd.processes();
            assertThat(running)
                    .as("dockerd and the containerd it started")
                    .contains(dockerd.pid())
                    .hasSizeGreaterThanOrEqualTo(2);
            assertThat(running)
                    .anyMatch(pid -> command(pid).contains("containerd --config " + dir));
            assertThat(TempDirs.mountsUnder(dir)).as("dockerd mounts its data root").isNotEmpty();
        } finally {
            dockerd.close();
        }
        assertAllGone(dockerd, dir, running);
        dockerd.close(); // idempotent
    }

    @Test
    void closeCleansUpAfterDockerdWasKilled() throws Exception {
        LocalDockerd dockerd = LocalDockerd.builder().start();
        Path dir = dockerd.directory();
        List<Long> running;
        try {
            running = dockerd.processes();
            ProcessHandle daemon = ProcessHandle.of(dockerd.pid()).orElseThrow();
            assertThat(daemon.destroyForcibly()).isTrue();
            daemon.onExit().get(10, TimeUnit.SECONDS);
            // dockerd 20.10 gives its containerd a parent-death signal; either way none may remain
        } finally {
            dockerd.close();
        }
        assertAllGone(dockerd, dir, running);
    }

    private static void assertAllGone(LocalDockerd dockerd, Path dir, List<Long> before)
            throws Exception {
        assertThat(dockerd.processes()).isEmpty();
        for (long pid : before) {
            // a killed process may stay a zombie until its new parent reaps it: bounded wait
            var h = ProcessHandle.of(pid);
            if (h.isPresent()) {
                h.get().onExit().get(10, TimeUnit.SECONDS);
            }
        }
        assertThat(TempDirs.mountsUnder(dir)).isEmpty();
        assertThat(Files.exists(dir)).isFalse();
        assertThatThrownBy(() -> get(dir.resolve("docker.sock"), "/_ping"))
                .isInstanceOf(IOException.class);
    }

    private static String command(long pid) {
        return ProcessHandle.of(pid).flatMap(h -> h.info().commandLine()).orElse("");
    }

    private static String get(Path socket, String path) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            ch.write(
                    ByteBuffer.wrap(
                            ("GET " + path + " HTTP/1.0\r\nHost: docker\r\n\r\n")
                                    .getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
            while (buf.hasRemaining() && ch.read(buf) >= 0) {
                // until dockerd closes the HTTP/1.0 connection
            }
            return new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8);
        }
    }
}
