package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who owns a unix socket path: an exclusive lock file beside the socket ({@code <socket>.lock})
 * makes exactly one server serve a path, and a server removes only the socket file it bound.
 */
class SocketOwnershipIT {

    @TempDir Path dir;

    private static String runtimeName(Path socket) {
        ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(socket));
        try {
            return RuntimeServiceGrpc.newBlockingStub(ch)
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .version(VersionRequest.getDefaultInstance())
                    .getRuntimeName();
        } finally {
            ch.shutdownNow();
        }
    }

    private static CriServer server(Path socket, String name) {
        return CriServer.builder(CriEndpoint.unix(socket))
                .addService(new CriServerIT.VersionService(name))
                .build();
    }

    @Test
    void twoServersStartedAtOnceInOneProcessExactlyOneServes() throws Exception {
        Path socket = dir.resolve("race.sock");
        for (int round = 0; round < 20; round++) {
            CyclicBarrier together = new CyclicBarrier(2);
            List<CompletableFuture<CriServer>> starts = new ArrayList<>();
            for (String name : new String[] {"a" + round, "b" + round}) {
                starts.add(
                        CompletableFuture.supplyAsync(
                                () -> {
                                    CriServer s = server(socket, name);
                                    try {
                                        together.await(10, TimeUnit.SECONDS);
                                        return s.start();
                                    } catch (Exception e) {
                                        s.close();
                                        return null;
                                    }
                                }));
            }
            List<CriServer> serving = new ArrayList<>();
            for (CompletableFuture<CriServer> f : starts) {
                CriServer s = f.get(30, TimeUnit.SECONDS);
                if (s != null) {
                    serving.add(s);
                }
            }
            assertThat(serving).as("servers serving after round " + round).hasSize(1);
            try (CriServer winner = serving.get(0)) {
                assertThat(runtimeName(socket)).endsWith("" + round);
            }
            assertThat(socket).doesNotExist();
        }
    }

    @Test
    void twoProcessesStartedAtOnceOnOnePathExactlyOneServes() throws Exception {
        Path socket = dir.resolve("procs.sock");
        for (int round = 0; round < 5; round++) {
            List<Process> ps = new ArrayList<>();
            for (String name : new String[] {"p" + round + "a", "p" + round + "b"}) {
                ps.add(
                        new ProcessBuilder(
                                        Path.of(System.getProperty("java.home"), "bin", "java")
                                                .toString(),
                                        "-cp",
                                        System.getProperty("java.class.path"),
                                        SocketOwner.class.getName(),
                                        socket.toString(),
                                        name)
                                .redirectErrorStream(false)
                                .start());
            }
            try {
                List<String> first = new ArrayList<>();
                for (Process p : ps) {
                    first.add(firstLine(p));
                }
                assertThat(first)
                        .as("round " + round)
                        .filteredOn(l -> l.startsWith("serving"))
                        .hasSize(1);
                String refused =
                        first.stream()
                                .filter(l -> !l.startsWith("serving"))
                                .findFirst()
                                .orElseThrow();
                assertThat(refused).startsWith("refused").contains(socket.toString());
                String winner =
                        first.stream()
                                .filter(l -> l.startsWith("serving"))
                                .findFirst()
                                .orElseThrow()
                                .substring("serving ".length());
                assertThat(runtimeName(socket)).as("the one that said so serves").isEqualTo(winner);
            } finally {
                for (Process p : ps) {
                    p.getOutputStream().close();
                    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
                }
            }
            assertThat(socket).as("removed by its owner").doesNotExist();
            assertThat(dir.resolve("procs.sock.lock")).as("the lock file too").doesNotExist();
        }
    }

    @Test
    void underUmask000TheLockFileIsTheOwnersOnlyAndTheSocketKeepsItsMode() throws Exception {
        Path socket = dir.resolve("umask.sock");
        Files.writeString(dir.resolve("umask.sock.lock"), ""); // an old server's, world-writable
        Files.setPosixFilePermissions(
                dir.resolve("umask.sock.lock"), PosixFilePermissions.fromString("rw-rw-rw-"));
        Process p =
                new ProcessBuilder(
                                "sh",
                                "-c",
                                "umask 000; exec \"$0\" \"$@\"",
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                SocketOwner.class.getName(),
                                socket.toString(),
                                "umask")
                        .start();
        try {
            assertThat(firstLine(p)).isEqualTo("serving umask");
            assertThat(
                            PosixFilePermissions.toString(
                                    Files.getPosixFilePermissions(dir.resolve("umask.sock.lock"))))
                    .isEqualTo("rw-------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)))
                    .isEqualTo("rw-rw----");
            Files.delete(dir.resolve("umask.sock.lock"));
            Files.delete(socket);
            p.getOutputStream().close();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            p.destroy();
        }
        // a fresh lock file under umask 000
        Process q =
                new ProcessBuilder(
                                "sh",
                                "-c",
                                "umask 000; exec \"$0\" \"$@\"",
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                SocketOwner.class.getName(),
                                socket.toString(),
                                "fresh")
                        .start();
        try {
            assertThat(firstLine(q)).isEqualTo("serving fresh");
            assertThat(
                            PosixFilePermissions.toString(
                                    Files.getPosixFilePermissions(dir.resolve("umask.sock.lock"))))
                    .isEqualTo("rw-------");
            q.getOutputStream().close();
            assertThat(q.waitFor(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            q.destroy();
        }
    }

    private static String firstLine(Process p) throws Exception {
        BufferedReader r =
                new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line =
                CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return r.readLine();
                                    } catch (IOException e) {
                                        return "io " + e;
                                    }
                                })
                        .get(60, TimeUnit.SECONDS);
        return line == null
                ? "exited " + new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8)
                : line;
    }

    @Test
    void aServerDoesNotRemoveASocketItNoLongerOwns() throws Exception {
        Path socket = dir.resolve("owned.sock");
        Path lock = dir.resolve("owned.sock.lock");
        CriServer old = server(socket, "old").start();
        assertThat(lock).as("the lock file beside the socket").exists();
        // an operator cleans up by hand while the old server still runs
        Files.delete(socket);
        Files.delete(lock);
        try (CriServer now = server(socket, "new").start()) {
            assertThat(runtimeName(socket)).isEqualTo("new");
            old.close();
            assertThat(socket)
                    .as("the new owner's socket survives the old server's close")
                    .exists();
            assertThat(runtimeName(socket)).isEqualTo("new");
            assertThat(lock).as("the new owner's lock file survives too").exists();
        }
        assertThat(socket).doesNotExist();
    }

    @Test
    void theLockRefusesASecondOwnerEvenWhenTheSocketFileIsGone() throws Exception {
        Path socket = dir.resolve("held.sock");
        try (CriServer first = server(socket, "first").start()) {
            Files.delete(socket); // the socket file removed, the first server still running
            CriServer second = server(socket, "second");
            assertThatThrownBy(second::start)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining(socket.toString())
                    .hasMessageContaining("held.sock.lock");
            second.close();
            assertThat(socket).doesNotExist();
        }
        try (CriServer again = server(socket, "again").start()) {
            assertThat(runtimeName(socket))
                    .as("the path is free once the owner closed")
                    .isEqualTo("again");
        }
        try (var left = Files.list(dir)) {
            assertThat(left).as("nothing left in the directory").isEmpty();
        }
    }
}
