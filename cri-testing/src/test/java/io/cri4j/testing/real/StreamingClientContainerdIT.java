package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.LocalPortForward;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingClient;
import io.cri4j.streaming.TerminalSize;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * cri4j's {@link StreamingClient} against containerd's own streaming server: CRI Exec and
 * PortForward on a real busybox container, over SPDY and WebSocket (containerd 1.6 answers
 * {@code v5.channel.k8s.io} with 403, so the client falls to {@code v4.channel.k8s.io}).
 */
class StreamingClientContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir static Path logs;

    static ManagedChannel channel;
    static RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    static String podId;
    static String containerId;

    @BeforeAll
    static void startContainer() {
        channel = CriChannels.newChannel(CONTAINERD.endpoint());
        runtime = RuntimeServiceGrpc.newBlockingStub(channel);
        String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build());
        PodSandboxConfig pod = TestPods.hostNetwork("streaming", "cri4j", logs).build();
        podId =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        containerId =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(TestPods.sleeper("sleeper", image))
                                        .build())
                        .getContainerId();
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .startContainer(
                        StartContainerRequest.newBuilder().setContainerId(containerId).build());
    }

    @AfterAll
    static void cleanUp() {
        if (podId != null) {
            runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .stopPodSandbox(
                            StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .removePodSandbox(
                            RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        }
        if (channel != null) {
            channel.shutdownNow();
        }
    }

    static URI exec(boolean stdin, boolean tty, String... cmd) {
        return URI.create(
                runtime.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(containerId)
                                        .addAllCmd(List.of(cmd))
                                        .setStdin(stdin)
                                        .setStdout(true)
                                        .setStderr(!tty)
                                        .setTty(tty)
                                        .build())
                        .getUrl());
    }

    @Test
    void webSocketV4ExecWithoutStdin() throws Exception {
        // containerd 1.6 refuses v5 (403) and v4 cannot signal stdin EOF, so no stdin here.
        try (StreamingClient client =
                        StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .webSocketProtocols(
                                        List.of("v5.channel.k8s.io", "v4.channel.k8s.io"))
                                .build();
                RemoteCommand cmd =
                        client.exec(
                                exec(false, false, "sh", "-c", "echo out; echo err >&2; exit 7"),
                                new CommandOptions(false, true, true, false))) {
            assertThat(cmd.protocol()).isEqualTo("v4.channel.k8s.io");
            assertThat(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8))
                    .isEqualTo("out\n");
            assertThat(new String(cmd.stderr().readAllBytes(), StandardCharsets.UTF_8))
                    .isEqualTo("err\n");
            assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isEqualTo(7);
        }
        try (StreamingClient client =
                StreamingClient.builder().transport(StreamingClient.Transport.WEBSOCKET).build()) {
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () ->
                                    client.exec(
                                            exec(false, false, "true"),
                                            new CommandOptions(false, true, true, false)))
                    .isInstanceOfSatisfying(
                            io.cri4j.streaming.StreamingException.class,
                            e -> assertThat(e.httpStatus()).isEqualTo(403));
        }
    }

    @Test
    void spdyExecWithStdinAndExitCode() throws Exception {
        for (StreamingClient.Transport t : List.of(StreamingClient.Transport.SPDY)) {
            try (StreamingClient client = StreamingClient.builder().transport(t).build();
                    RemoteCommand cmd =
                            client.exec(
                                    exec(true, false, "sh", "-c", "cat; echo err >&2; exit 42"),
                                    new CommandOptions(true, true, true, false))) {
                byte[] in = new byte[200_000];
                new Random(3).nextBytes(in);
                CompletableFuture<byte[]> out =
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return cmd.stdout().readAllBytes();
                                    } catch (IOException e) {
                                        throw new RuntimeException(e);
                                    }
                                });
                CompletableFuture<byte[]> err =
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return cmd.stderr().readAllBytes();
                                    } catch (IOException e) {
                                        throw new RuntimeException(e);
                                    }
                                });
                cmd.stdin().write(in);
                cmd.stdin().close();
                assertThat(out.get(30, TimeUnit.SECONDS)).as(t.name()).isEqualTo(in);
                assertThat(new String(err.get(30, TimeUnit.SECONDS), StandardCharsets.UTF_8))
                        .isEqualTo("err\n");
                assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).as(t.name()).isEqualTo(42);
                assertThat(cmd.protocol()).isEqualTo("v4.channel.k8s.io");
            }
        }
    }

    @Test
    void ttyExecSeesTheResize() throws Exception {
        String script =
                "echo ready; i=0; while [ \"$(stty size)\" != \"40 100\" ] && [ $i -lt 100 ]; "
                        + "do sleep 0.1; i=$((i+1)); done; stty size";
        try (StreamingClient client = StreamingClient.builder().build();
                RemoteCommand cmd =
                        client.exec(
                                exec(true, true, "sh", "-c", script),
                                new CommandOptions(true, true, false, true))) {
            StringBuilder out = new StringBuilder();
            byte[] buf = new byte[256];
            while (!out.toString().contains("ready")) {
                int n = cmd.stdout().read(buf);
                assertThat(n).as(out.toString()).isPositive();
                out.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            }
            // Sent once the process runs: containerd 1.6 drops sizes that arrive before the
            // exec'd process has its console.
            cmd.resize(new TerminalSize(100, 40));
            out.append(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8));
            assertThat(out.toString()).contains("40 100");
            assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isZero();
        }
    }

    @Test
    void portForwardToAHostNetworkPod() throws Exception {
        try (ServerSocket target = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
                StreamingClient client = StreamingClient.builder().build()) {
            CompletableFuture<Void> echo =
                    CompletableFuture.runAsync(
                            () -> {
                                try (Socket s = target.accept()) {
                                    s.getInputStream().transferTo(s.getOutputStream());
                                } catch (IOException e) {
                                    throw new RuntimeException(e);
                                }
                            });
            URI url =
                    URI.create(
                            runtime.withDeadlineAfter(10, TimeUnit.SECONDS)
                                    .portForward(
                                            PortForwardRequest.newBuilder()
                                                    .setPodSandboxId(podId)
                                                    .build())
                                    .getUrl());
            try (LocalPortForward fwd =
                            client.forwardLocal(
                                    url,
                                    target.getLocalPort(),
                                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                    Socket s =
                            new Socket(
                                    InetAddress.getLoopbackAddress(),
                                    fwd.localAddress().getPort())) {
                s.setSoTimeout(30_000);
                byte[] payload = new byte[100_000];
                new Random(5).nextBytes(payload);
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
            echo.get(30, TimeUnit.SECONDS);
        }
    }
}
