package io.cri4j.testing.fake.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.testing.fake.ExecContext;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Interactive exec as real host processes and port-forward to a real local socket. */
class HostProcessStreamsIT {

    final ExecutorService pumps = Executors.newCachedThreadPool();

    @AfterEach
    void stop() throws InterruptedException {
        pumps.shutdownNow();
        assertThat(pumps.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
    }

    static ExecContext ctx(String... cmd) {
        return new ExecContext(
                "c1", "p1", List.of(cmd), Map.of("GREETING", "hi"), "", Duration.ZERO);
    }

    @Test
    void catEchoesStdinAndStderrStaysSeparate() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code =
                HostProcessStreams.exec(
                        ctx("sh", "-c", "cat; echo $GREETING >&2; exit 3"),
                        new ByteArrayInputStream(
                                "line one\nline two\n".getBytes(StandardCharsets.UTF_8)),
                        out,
                        err,
                        false,
                        pumps);
        assertThat(code).isEqualTo(3);
        assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("line one\nline two\n");
        assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("hi\n");
    }

    @Test
    void ttyMergesStderrIntoStdout() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code =
                HostProcessStreams.exec(
                        ctx("sh", "-c", "echo a; echo b >&2"), null, out, null, true, pumps);
        assertThat(code).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("a\n").contains("b\n");
    }

    @Test
    void missingBinaryIsNamed() {
        assertThatThrownBy(
                        () ->
                                HostProcessStreams.exec(
                                        ctx("/no/such/tool"), null, null, null, false, pumps))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("/no/such/tool");
    }

    @Test
    void forwardsToALocalPort() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> received =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try (Socket s = server.accept();
                                        InputStream in = s.getInputStream();
                                        OutputStream o = s.getOutputStream()) {
                                    String got =
                                            new String(in.readAllBytes(), StandardCharsets.UTF_8);
                                    o.write(("echo:" + got).getBytes(StandardCharsets.UTF_8));
                                    return got;
                                } catch (IOException e) {
                                    throw new IllegalStateException(e);
                                }
                            },
                            pumps);
            ByteArrayOutputStream back = new ByteArrayOutputStream();
            HostProcessStreams.forward(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()),
                    new ByteArrayInputStream("ping".getBytes(StandardCharsets.UTF_8)),
                    back,
                    pumps);
            assertThat(received.get(5, TimeUnit.SECONDS)).isEqualTo("ping");
            assertThat(back.toString(StandardCharsets.UTF_8)).isEqualTo("echo:ping");
        }
    }
}
