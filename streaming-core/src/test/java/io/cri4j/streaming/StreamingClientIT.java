package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.testing.TestRuntime;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Our Java client against our server, over SPDY and WebSocket. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class StreamingClientIT {
    final TestRuntime runtime = new TestRuntime();
    StreamingServer server;

    @BeforeAll
    void start() throws IOException {
        server = StreamingServer.builder(runtime).build().start();
    }

    @AfterAll
    void stop() {
        server.close();
    }

    URI exec(boolean stdin, boolean tty, String... cmd) {
        return URI.create(
                server.getExec(
                                ExecRequest.newBuilder()
                                        .setContainerId("c")
                                        .addAllCmd(List.of(cmd))
                                        .setStdin(stdin)
                                        .setStdout(true)
                                        .setStderr(!tty)
                                        .setTty(tty)
                                        .build())
                        .getUrl());
    }

    static StreamingClient client(StreamingClient.Transport t) {
        return StreamingClient.builder().transport(t).build();
    }

    @ParameterizedTest
    @EnumSource(StreamingClient.Transport.class)
    void execCatExitCodesAndStderr(StreamingClient.Transport t) throws Exception {
        try (StreamingClient client = client(t)) {
            try (RemoteCommand cmd =
                    client.exec(
                            exec(true, false, "cat"),
                            new CommandOptions(true, true, true, false))) {
                byte[] in = new byte[3_000_000];
                new Random(7).nextBytes(in);
                CompletableFuture<byte[]> out =
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return cmd.stdout().readAllBytes();
                                    } catch (IOException e) {
                                        throw new RuntimeException(e);
                                    }
                                });
                cmd.stdin().write(in);
                cmd.stdin().close();
                assertThat(out.get(30, TimeUnit.SECONDS)).isEqualTo(in);
                assertThat(cmd.waitFor()).isZero();
                assertThat(cmd.protocol())
                        .isEqualTo(
                                t == StreamingClient.Transport.SPDY
                                        ? "v4.channel.k8s.io"
                                        : "v5.channel.k8s.io");
            }
            try (RemoteCommand cmd =
                    client.exec(
                            exec(false, false, "exit", "42"),
                            new CommandOptions(false, true, true, false))) {
                assertThat(cmd.stdout().readAllBytes()).isEmpty();
                assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isEqualTo(42);
            }
            try (RemoteCommand cmd =
                    client.exec(
                            exec(false, false, "err", "to stderr"),
                            new CommandOptions(false, true, true, false))) {
                assertThat(new String(cmd.stderr().readAllBytes(), StandardCharsets.UTF_8))
                        .isEqualTo("to stderr\n");
                assertThat(cmd.waitFor()).isEqualTo(3);
            }
            try (RemoteCommand cmd =
                    client.exec(
                            exec(false, false, "fail"),
                            new CommandOptions(false, true, true, false))) {
                assertThatThrownBy(cmd::waitFor)
                        .isInstanceOf(StreamingException.class)
                        .hasMessageContaining("boom");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(StreamingClient.Transport.class)
    void ttyResizeReachesTheRuntime(StreamingClient.Transport t) throws Exception {
        runtime.sizes.clear();
        try (StreamingClient client = client(t);
                RemoteCommand cmd =
                        client.exec(
                                exec(true, true, "tty"),
                                new CommandOptions(true, true, false, true))) {
            cmd.resize(new TerminalSize(91, 33));
            cmd.stdin().write("ok".getBytes(StandardCharsets.US_ASCII));
            cmd.stdin().flush();
            byte[] buf = new byte[64];
            StringBuilder seen = new StringBuilder();
            // the echo of "ok" and the runtime's size line come from two threads and may interleave
            // ("o" + "size 91x33\r\n" + "k"), so look for "ok" once the size line is taken out
            while (!seen.toString().contains("size 91x33\r\n")
                    || !seen.toString().replace("size 91x33\r\n", "").contains("ok")) {
                int n = cmd.stdout().read(buf);
                assertThat(n).as(seen.toString()).isPositive();
                seen.append(new String(buf, 0, n, StandardCharsets.US_ASCII));
            }
            try {
                cmd.stdin().write('q');
                cmd.stdin().flush();
            } catch (IOException e) {
                // Diagnose a session that ended early: what did the server report?
                throw new AssertionError(
                        t
                                + ": session ended before 'q'; exit status: "
                                + cmd.exitCode()
                                        .handle((c, x) -> x == null ? "code " + c : x.toString())
                                        .get(10, TimeUnit.SECONDS)
                                + "; output: "
                                + seen,
                        e);
            }
            assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isZero();
            assertThat(runtime.sizes).contains(new TerminalSize(91, 33));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"})
    void olderSpdyProtocolsReportFailuresAsText(String protocol) throws Exception {
        try (StreamingClient client =
                StreamingClient.builder().remoteCommandProtocols(List.of(protocol)).build()) {
            try (RemoteCommand cmd =
                    client.exec(
                            exec(false, false, "echo", "hi"),
                            new CommandOptions(false, true, true, false))) {
                assertThat(cmd.protocol()).isEqualTo(protocol);
                assertThat(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8))
                        .isEqualTo("hi\n");
                assertThat(cmd.waitFor()).isZero();
            }
            try (RemoteCommand cmd =
                    client.exec(
                            exec(false, false, "exit", "5"),
                            new CommandOptions(false, true, true, false))) {
                assertThatThrownBy(cmd::waitFor)
                        .isInstanceOf(StreamingException.class)
                        .hasMessageContaining("non-zero exit code");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(StreamingClient.Transport.class)
    void attach(StreamingClient.Transport t) throws Exception {
        URI url =
                URI.create(
                        server.getAttach(
                                        AttachRequest.newBuilder()
                                                .setContainerId("c")
                                                .setStdin(true)
                                                .setStdout(true)
                                                .build())
                                .getUrl());
        try (StreamingClient client = client(t);
                RemoteCommand cmd =
                        client.exec(url, new CommandOptions(true, true, false, false))) {
            cmd.stdin().write("attached\n".getBytes(StandardCharsets.UTF_8));
            cmd.stdin().close();
            assertThat(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8))
                    .isEqualTo("attached\n");
            assertThat(cmd.waitFor()).isZero();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    void refusedUpgradeCarriesTheHttpStatus(int which) throws Exception {
        URI bad = server.baseUrl().resolve("exec/unknown-token");
        try (StreamingClient client =
                client(
                        which == 0
                                ? StreamingClient.Transport.SPDY
                                : StreamingClient.Transport.WEBSOCKET)) {
            assertThatThrownBy(
                            () -> client.exec(bad, new CommandOptions(false, true, false, false)))
                    .isInstanceOfSatisfying(
                            StreamingException.class,
                            e -> assertThat(e.httpStatus()).isEqualTo(404));
        }
    }

    @ParameterizedTest
    @EnumSource(StreamingClient.Transport.class)
    void localPortForwarderRoundTripsBytes(StreamingClient.Transport t) throws Exception {
        try (ServerSocket target = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
                StreamingClient client = client(t)) {
            CompletableFuture<Void> echo =
                    CompletableFuture.runAsync(
                            () -> {
                                for (int i = 0; i < 3; i++) {
                                    try (Socket s = target.accept()) {
                                        s.getInputStream().transferTo(s.getOutputStream());
                                    } catch (IOException e) {
                                        throw new RuntimeException(e);
                                    }
                                }
                            });
            URI url =
                    URI.create(
                            server.getPortForward(
                                            PortForwardRequest.newBuilder()
                                                    .setPodSandboxId("sb")
                                                    .build())
                                    .getUrl());
            try (LocalPortForward fwd =
                    client.forwardLocal(
                            url,
                            target.getLocalPort(),
                            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
                for (int i = 0; i < 3; i++) {
                    byte[] payload = new byte[200_000 + i];
                    new Random(i).nextBytes(payload);
                    try (Socket s =
                            new Socket(
                                    InetAddress.getLoopbackAddress(),
                                    fwd.localAddress().getPort())) {
                        s.setSoTimeout(30_000);
                        CompletableFuture<byte[]> back =
                                CompletableFuture.supplyAsync(
                                        () -> {
                                            try {
                                                return s.getInputStream().readAllBytes();
                                            } catch (IOException e) {
                                                throw new RuntimeException(e);
                                            }
                                        });
                        s.getOutputStream().write(payload);
                        s.shutdownOutput();
                        assertThat(back.get(30, TimeUnit.SECONDS)).isEqualTo(payload);
                    }
                }
            }
            echo.get(30, TimeUnit.SECONDS);
        }
    }

    @org.junit.jupiter.api.Test
    void portForwardErrorsReachTheErrorStream() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        URI url =
                URI.create(
                        server.getPortForward(
                                        PortForwardRequest.newBuilder()
                                                .setPodSandboxId("sb")
                                                .build())
                                .getUrl());
        try (StreamingClient client = StreamingClient.builder().build();
                PortForwardSession pf = client.portForward(url)) {
            PortForwardSession.Connection c = pf.open(closedPort);
            assertThat(c.input().readAllBytes()).isEmpty();
            assertThat(c.error().get(30, TimeUnit.SECONDS))
                    .contains(
                            "\"closeConnection\":true",
                            "error forwarding port " + closedPort + " to pod sb");
        }
    }
}
