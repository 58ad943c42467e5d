package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.cri4j.streaming.internal.spdy.SpdyStream;
import io.cri4j.streaming.testing.RawConn;
import io.cri4j.streaming.testing.TestRuntime;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** Wire details no kubectl on this machine exercises: older WebSocket framings, legacy pairing, TLS. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class ProtocolDetailsIT {
    final TestRuntime runtime = new TestRuntime();
    StreamingServer server;
    ServerSocket echoTarget;

    @BeforeAll
    void start() throws IOException {
        server = StreamingServer.builder(runtime).build().start();
        echoTarget = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t =
                new Thread(
                        () -> {
                            while (!echoTarget.isClosed()) {
                                try {
                                    Socket s = echoTarget.accept();
                                    Thread c =
                                            new Thread(
                                                    () -> {
                                                        try (s) {
                                                            s.getInputStream()
                                                                    .transferTo(
                                                                            s.getOutputStream());
                                                        } catch (IOException e) {
                                                            // peer gone
                                                        }
                                                    });
                                    c.setDaemon(true);
                                    c.start();
                                } catch (IOException e) {
                                    return;
                                }
                            }
                        });
        t.setDaemon(true);
        t.start();
    }

    @AfterAll
    void stop() throws IOException {
        server.close();
        echoTarget.close();
    }

    URI exec(String... cmd) {
        return URI.create(
                server.getExec(
                                ExecRequest.newBuilder()
                                        .setContainerId("c")
                                        .addAllCmd(List.of(cmd))
                                        .setStdout(true)
                                        .setStderr(true)
                                        .build())
                        .getUrl());
    }

    @Test
    void preV4WebSocketWritesFailuresAsText() throws Exception {
        try (RawConn c = new RawConn(server.baseUrl())) {
            c.webSocket(exec("exit", "9"), "channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            assertThat(c.readFrame().payload()).containsExactly(1);
            RawConn.Frame f = c.readFrame();
            assertThat(f.payload()[0]).isEqualTo((byte) 3);
            assertThat(new String(f.payload(), 1, f.payload().length - 1, StandardCharsets.UTF_8))
                    .isEqualTo("command terminated with non-zero exit code: exit status 9");
        }
    }

    @Test
    void base64V4WebSocketEncodesChannelsAsDigits() throws Exception {
        try (RawConn c = new RawConn(server.baseUrl())) {
            c.webSocket(exec("echo", "hello"), "v4.base64.channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            assertThat(new String(c.readFrame().payload(), StandardCharsets.US_ASCII))
                    .isEqualTo("1");
            String out = new String(c.readFrame().payload(), StandardCharsets.US_ASCII);
            assertThat(out.charAt(0)).isEqualTo('1');
            assertThat(
                            new String(
                                    Base64.getDecoder().decode(out.substring(1)),
                                    StandardCharsets.UTF_8))
                    .isEqualTo("hello\n");
            String status = new String(c.readFrame().payload(), StandardCharsets.US_ASCII);
            assertThat(status.charAt(0)).isEqualTo('3');
            assertThat(
                            new String(
                                    Base64.getDecoder().decode(status.substring(1)),
                                    StandardCharsets.UTF_8))
                    .isEqualTo("{\"metadata\":{},\"status\":\"Success\"}");
        }
    }

    @Test
    void webSocketPortForwardWithPortsQueryAndLittleEndianPrefix() throws Exception {
        int port = echoTarget.getLocalPort();
        URI url =
                URI.create(
                        server.getPortForward(
                                                PortForwardRequest.newBuilder()
                                                        .setPodSandboxId("sb")
                                                        .build())
                                        .getUrl()
                                + "?port="
                                + port);
        try (RawConn c = new RawConn(server.baseUrl())) {
            c.webSocket(url, "v4.channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            byte lo = (byte) (port & 0xFF);
            byte hi = (byte) (port >> 8);
            assertThat(c.readFrame().payload()).containsExactly(0, lo, hi);
            assertThat(c.readFrame().payload()).containsExactly(1, lo, hi);
            c.writeFrame(2, new byte[] {0, 'p', 'i', 'n', 'g'});
            StringBuilder got = new StringBuilder();
            while (got.length() < 4) {
                RawConn.Frame f = c.readFrame();
                assertThat(f.payload()[0]).isEqualTo((byte) 0);
                got.append(
                        new String(
                                f.payload(), 1, f.payload().length - 1, StandardCharsets.US_ASCII));
            }
            assertThat(got.toString()).isEqualTo("ping");
        }
    }

    @Test
    void spdyPortForwardPairsLegacyStreamsWithoutRequestId() throws Exception {
        URI url =
                URI.create(
                        server.getPortForward(
                                        PortForwardRequest.newBuilder()
                                                .setPodSandboxId("sb")
                                                .build())
                                .getUrl());
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (RawConn c = new RawConn(server.baseUrl())) {
            c.request(
                    "POST",
                    url,
                    "Connection: Upgrade",
                    "Upgrade: SPDY/3.1",
                    "X-Stream-Protocol-Version: portforward.k8s.io");
            assertThat(c.status).isEqualTo(101);
            // Hand the upgraded socket to a SPDY client session (old clients sent no requestID:
            // error stream id N and data stream id N+2 form a pair).
            SpdySession session = new SpdySession(false, s -> s.reset());
            PipedSocket bridge = new PipedSocket(c.socket, c.in);
            Channel ch =
                    new Bootstrap()
                            .group(group)
                            .channel(NioSocketChannel.class)
                            .handler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel sc) {
                                            sc.pipeline().addLast(SpdySession.newCodec(), session);
                                        }
                                    })
                            .connect(bridge.address())
                            .sync()
                            .channel();
            String port = Integer.toString(echoTarget.getLocalPort());
            SpdyStream error = session.createStream(Map.of("streamtype", "error", "port", port));
            error.replyFuture().get(10, TimeUnit.SECONDS);
            SpdyStream data = session.createStream(Map.of("streamtype", "data", "port", port));
            data.replyFuture().get(10, TimeUnit.SECONDS);
            assertThat(data.id()).isEqualTo(error.id() + 2);
            data.output().write("legacy".getBytes(StandardCharsets.US_ASCII));
            data.output().close();
            assertThat(new String(data.input().readAllBytes(), StandardCharsets.US_ASCII))
                    .isEqualTo("legacy");
            ch.close().sync();
            bridge.close();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void tlsServesHttpsUrls(@TempDir Path dir) throws Exception {
        Path ks = dir.resolve("ks.p12");
        Process p =
                new ProcessBuilder(
                                Path.of(System.getProperty("java.home"), "bin", "keytool")
                                        .toString(),
                                "-genkeypair",
                                "-alias",
                                "s",
                                "-keyalg",
                                "EC",
                                "-dname",
                                "CN=127.0.0.1",
                                "-ext",
                                "SAN=IP:127.0.0.1",
                                "-validity",
                                "2",
                                "-storetype",
                                "PKCS12",
                                "-keystore",
                                ks.toString(),
                                "-storepass",
                                "changeit",
                                "-keypass",
                                "changeit")
                        .redirectErrorStream(true)
                        .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(new String(p.getInputStream().readAllBytes())).isZero();
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(ks)) {
            store.load(in, "changeit".toCharArray());
        }
        KeyManagerFactory kmf =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, "changeit".toCharArray());
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        try (StreamingServer tls =
                        StreamingServer.builder(runtime).tls(ctx, false).build().start();
                StreamingClient client =
                        StreamingClient.builder().insecureSkipTlsVerify().build()) {
            URI url =
                    URI.create(
                            tls.getExec(
                                            ExecRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .addAllCmd(List.of("echo", "secure"))
                                                    .setStdout(true)
                                                    .build())
                                    .getUrl());
            assertThat(url.getScheme()).isEqualTo("https");
            try (RemoteCommand cmd =
                    client.exec(url, new CommandOptions(false, true, false, false))) {
                assertThat(new String(cmd.stdout().readAllBytes(), StandardCharsets.UTF_8))
                        .isEqualTo("secure\n");
                assertThat(cmd.waitFor()).isZero();
            }
        }
    }

    /** Exposes an already upgraded blocking socket as a local TCP endpoint for a Netty client. */
    static final class PipedSocket implements AutoCloseable {
        final ServerSocket local = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        final CompletableFuture<Socket> accepted = new CompletableFuture<>();

        PipedSocket(Socket upstream, InputStream upstreamIn) throws IOException {
            Thread t =
                    new Thread(
                            () -> {
                                try {
                                    Socket s = local.accept();
                                    accepted.complete(s);
                                    Thread up = new Thread(() -> pump(s, upstream, true));
                                    up.setDaemon(true);
                                    up.start();
                                    pumpStreams(upstreamIn, s);
                                } catch (IOException e) {
                                    accepted.completeExceptionally(e);
                                }
                            });
            t.setDaemon(true);
            t.start();
        }

        java.net.InetSocketAddress address() {
            return (java.net.InetSocketAddress) local.getLocalSocketAddress();
        }

        static void pump(Socket from, Socket to, boolean ignored) {
            try {
                from.getInputStream().transferTo(to.getOutputStream());
                to.shutdownOutput();
            } catch (IOException e) {
                // closed
            }
        }

        static void pumpStreams(InputStream from, Socket to) {
            try {
                from.transferTo(to.getOutputStream());
                to.shutdownOutput();
            } catch (IOException e) {
                // closed
            }
        }

        @Override
        public void close() throws IOException {
            local.close();
            if (accepted.isDone() && !accepted.isCompletedExceptionally()) {
                accepted.join().close();
            }
        }
    }
}
