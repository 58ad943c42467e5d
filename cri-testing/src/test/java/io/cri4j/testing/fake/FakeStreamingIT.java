package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Exec, attach and port-forward through the built-in streaming-core server, driven by the JDK's WebSocket
 * client speaking kubelet's channel protocols (v5.channel.k8s.io, v4.channel.k8s.io).
 */
class FakeStreamingIT {

    static ServerSocket echoServer;
    static final ExecutorService echoThreads = Executors.newCachedThreadPool();

    @RegisterExtension
    static FakeCriExtension cri =
            FakeCriExtension.unixSocket()
                    .configure(
                            b ->
                                    b.portForward(
                                            80,
                                            new InetSocketAddress(
                                                    InetAddress.getLoopbackAddress(),
                                                    echoServer.getLocalPort())));

    // opened in a static initialiser: the extension's configure lambda reads its port when the
    // server starts
    static {
        try {
            echoServer = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        echoThreads.execute(
                () -> {
                    while (!echoServer.isClosed()) {
                        try {
                            Socket s = echoServer.accept();
                            echoThreads.execute(
                                    () -> {
                                        try (s;
                                                InputStream in = s.getInputStream();
                                                OutputStream out = s.getOutputStream()) {
                                            byte[] b = new byte[1024];
                                            int n;
                                            while ((n = in.read(b)) >= 0) {
                                                out.write(
                                                        ("echo:"
                                                                        + new String(
                                                                                b,
                                                                                0,
                                                                                n,
                                                                                StandardCharsets
                                                                                        .UTF_8))
                                                                .getBytes(StandardCharsets.UTF_8));
                                            }
                                        } catch (IOException ignored) {
                                            // client went away
                                        }
                                    });
                        } catch (IOException e) {
                            return;
                        }
                    }
                });
    }

    @AfterAll
    static void stopEchoServer() throws Exception {
        echoServer.close();
        echoThreads.shutdownNow();
        assertThat(echoThreads.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
    }

    /** Collects the frames of one channel-protocol WebSocket session. */
    static final class Session implements WebSocket.Listener {
        final Map<Integer, ByteArrayOutputStream> channels =
                new java.util.concurrent.ConcurrentHashMap<>();
        final CompletableFuture<Integer> closed = new CompletableFuture<>();
        private final ByteArrayOutputStream partial = new ByteArrayOutputStream();
        WebSocket ws;

        @Override
        public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            partial.writeBytes(bytes);
            if (last) {
                byte[] frame = partial.toByteArray();
                partial.reset();
                if (frame.length > 0) {
                    synchronized (this) {
                        channels.computeIfAbsent(frame[0] & 0xff, k -> new ByteArrayOutputStream())
                                .writeBytes(java.util.Arrays.copyOfRange(frame, 1, frame.length));
                        notifyAll();
                    }
                }
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            closed.complete(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            closed.completeExceptionally(error);
        }

        synchronized String text(int channel) {
            ByteArrayOutputStream b = channels.get(channel);
            return b == null ? "" : b.toString(StandardCharsets.UTF_8);
        }

        synchronized byte[] bytes(int channel) {
            ByteArrayOutputStream b = channels.get(channel);
            return b == null ? new byte[0] : b.toByteArray();
        }

        /** Waits until the channel's text ends with {@code suffix}. */
        synchronized void awaitEnding(int channel, String suffix) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!text(channel).endsWith(suffix)) {
                long left = deadline - System.nanoTime();
                assertThat(left)
                        .as("channel %d ends with %s, has %s", channel, suffix, text(channel))
                        .isPositive();
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }

        void send(int channel, String text) {
            byte[] data = text.getBytes(StandardCharsets.UTF_8);
            ByteBuffer frame =
                    ByteBuffer.allocate(data.length + 1).put((byte) channel).put(data).flip();
            ws.sendBinary(frame, true).join();
        }
    }

    static Session open(HttpClient http, String url, String protocol) {
        Session s = new Session();
        s.ws =
                http.newWebSocketBuilder()
                        .subprotocols(protocol)
                        .buildAsync(URI.create(url.replaceFirst("^http", "ws")), s)
                        .join();
        return s;
    }

    String runningContainer() {
        String pod = cri.fakeRuntime().runPodSandbox(Cri.pod("stream", Map.of()));
        return cri.fakeRuntime().runContainer(pod, Cri.container("c", "busybox", Map.of()));
    }

    @Test
    void execRunsAHostProcessWithStdinStdoutStderrAndExitCode() throws Exception {
        String c = runningContainer();
        String url =
                cri.runtimeService()
                        .exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(c)
                                        .addCmd("sh")
                                        .addCmd("-c")
                                        .addCmd("cat; echo $GREETING >&2; exit 3")
                                        .setStdin(true)
                                        .setStdout(true)
                                        .setStderr(true)
                                        .build())
                        .getUrl();
        assertThat(url).startsWith(cri.server().streamingBaseUrl().orElseThrow().toString());
        HttpClient http = HttpClient.newHttpClient();
        Session s = open(http, url, "v5.channel.k8s.io");
        s.send(0, "hello\n");
        s.ws.sendBinary(ByteBuffer.wrap(new byte[] {(byte) 255, 0}), true)
                .join(); // v5: close stdin
        s.closed.get(10, TimeUnit.SECONDS);
        assertThat(s.text(1)).isEqualTo("hello\n");
        assertThat(s.text(2)).isEqualTo("hello\n"); // $GREETING from the container's environment
        assertThat(s.text(3)).contains("\"NonZeroExitCode\"").contains("\"3\"");
    }

    @Test
    void spdyExecWithCri4jStreamingClientAsKubeletWould() throws Exception {
        String c = runningContainer();
        java.net.URI url =
                java.net.URI.create(
                        cri.runtimeService()
                                .exec(
                                        ExecRequest.newBuilder()
                                                .setContainerId(c)
                                                .addCmd("sh")
                                                .addCmd("-c")
                                                .addCmd("tr a-z A-Z; exit 4")
                                                .setStdin(true)
                                                .setStdout(true)
                                                .setStderr(true)
                                                .build())
                                .getUrl());
        try (io.cri4j.streaming.StreamingClient client =
                        io.cri4j.streaming.StreamingClient.builder()
                                .transport(io.cri4j.streaming.StreamingClient.Transport.SPDY)
                                .build();
                io.cri4j.streaming.RemoteCommand cmd =
                        client.exec(
                                url,
                                new io.cri4j.streaming.CommandOptions(true, true, true, false))) {
            cmd.stdin().write("shout\n".getBytes(StandardCharsets.UTF_8));
            cmd.stdin().close();
            assertThat(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8))
                    .isEqualTo("SHOUT\n");
            assertThat(cmd.exitCode().get(10, TimeUnit.SECONDS)).isEqualTo(4);
        }
    }

    @Test
    void execExitZeroReportsSuccess() throws Exception {
        String c = runningContainer();
        String url =
                cri.runtimeService()
                        .exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(c)
                                        .addCmd("echo")
                                        .addCmd("plain")
                                        .setStdout(true)
                                        .build())
                        .getUrl();
        Session s = open(HttpClient.newHttpClient(), url, "v4.channel.k8s.io");
        s.closed.get(10, TimeUnit.SECONDS);
        assertThat(s.text(1)).isEqualTo("plain\n");
        assertThat(s.text(3)).contains("\"Success\"");
    }

    @Test
    void attachConnectsToTheContainersProcessAndItsOutputGoesToTheCriLog(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path logDir) throws Exception {
        String pod =
                cri.fakeRuntime()
                        .runPodSandbox(
                                Cri.pod("attach", Map.of()).toBuilder()
                                        .setLogDirectory(logDir.toString())
                                        .build());
        String c =
                cri.fakeRuntime()
                        .runContainer(
                                pod,
                                Cri.container("cat", "busybox", Map.of()).toBuilder()
                                        .clearCommand()
                                        .clearArgs()
                                        .addCommand("sh")
                                        .addArgs("-c")
                                        .addArgs("cat; echo done >&2; exit 7")
                                        .setStdin(true)
                                        .setStdinOnce(true)
                                        .build());
        String url =
                cri.runtimeService()
                        .attach(
                                AttachRequest.newBuilder()
                                        .setContainerId(c)
                                        .setStdin(true)
                                        .setStdout(true)
                                        .setStderr(true)
                                        .build())
                        .getUrl();
        Session s = open(HttpClient.newHttpClient(), url, "v5.channel.k8s.io");
        s.send(0, "ping\n");
        s.awaitEnding(1, "ping\n");
        // closing stdin (stdin_once) ends cat: the shell's stderr, then its exit is the container's
        s.ws.sendBinary(ByteBuffer.wrap(new byte[] {(byte) 255, 0}), true).join();
        s.closed.get(10, TimeUnit.SECONDS);
        assertThat(s.text(1)).isEqualTo("ping\n");
        assertThat(s.text(2)).isEqualTo("done\n");
        ContainerStatus status =
                cri.runtimeService()
                        .containerStatus(
                                ContainerStatusRequest.newBuilder().setContainerId(c).build())
                        .getStatus();
        assertThat(status.getState()).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(status.getExitCode()).isEqualTo(7);
        // the CRI log format kubelet and crictl read: TIMESTAMP STREAM F|P LINE
        java.util.List<String> log =
                java.nio.file.Files.readAllLines(java.nio.file.Path.of(status.getLogPath()));
        assertThat(log).hasSize(2);
        assertThat(log.get(0))
                .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z stdout F ping");
        assertThat(log.get(1)).endsWith(" stderr F done");
    }

    @Test
    void attachToAContainerWithoutCommandEchoesStdinUntilTheContainerStops() throws Exception {
        String pod = cri.fakeRuntime().runPodSandbox(Cri.pod("echo", Map.of()));
        String c =
                cri.fakeRuntime()
                        .runContainer(
                                pod,
                                Cri.container("idle", "busybox", Map.of()).toBuilder()
                                        .clearCommand()
                                        .clearArgs()
                                        .build());
        String url =
                cri.runtimeService()
                        .attach(
                                AttachRequest.newBuilder()
                                        .setContainerId(c)
                                        .setStdin(true)
                                        .setStdout(true)
                                        .build())
                        .getUrl();
        Session s = open(HttpClient.newHttpClient(), url, "v5.channel.k8s.io");
        s.send(0, "ping\n");
        s.awaitEnding(1, "ping\n");
        assertThat(s.text(1)).isEqualTo("ping\n");
        cri.fakeRuntime().exitContainer(c, 0); // ends the session
        s.closed.get(10, TimeUnit.SECONDS);
    }

    @Test
    void portForwardConnectsToTheMappedLocalPort() throws Exception {
        String pod = cri.fakeRuntime().runPodSandbox(Cri.pod("pf", Map.of()));
        String url =
                cri.runtimeService()
                        .portForward(
                                PortForwardRequest.newBuilder()
                                        .setPodSandboxId(pod)
                                        .addPort(80)
                                        .build())
                        .getUrl();
        Session s = open(HttpClient.newHttpClient(), url, "v4.channel.k8s.io");
        s.send(0, "knock");
        // channel 0 starts with the port (2 bytes, little endian) then carries the echo server's
        // answer
        s.awaitEnding(0, "echo:knock");
        byte[] data = s.bytes(0);
        assertThat(data[0] & 0xff | (data[1] & 0xff) << 8).isEqualTo(80);
        assertThat(new String(data, 2, data.length - 2, StandardCharsets.UTF_8))
                .isEqualTo("echo:knock");
        s.ws.sendClose(WebSocket.NORMAL_CLOSURE, "done").join();
    }
}
