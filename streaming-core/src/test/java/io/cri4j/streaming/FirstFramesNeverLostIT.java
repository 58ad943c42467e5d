package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.streaming.testing.TestRuntime;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Many short TTY sessions back to back over both transports, each sending a resize and stdin the
 * moment the upgrade completes. Regression test for two races that lost those first frames: the
 * server installed its WebSocket session only once the 101's write had completed, and the client
 * depended on Netty's handshaker adding its frame encoder before {@code finishHandshake} removed
 * the HTTP codec. Either made a session hang with nothing delivered in one run out of tens.
 */
class FirstFramesNeverLostIT {
    @Test
    void resizeAndStdinSentRightAfterTheUpgradeAlwaysArrive() throws Exception {
        TestRuntime runtime = new TestRuntime();
        try (StreamingServer server = StreamingServer.builder(runtime).build().start()) {
            for (int i = 0; i < 300; i++) {
                for (StreamingClient.Transport t : StreamingClient.Transport.values()) {
                    URI url =
                            URI.create(
                                    server.getExec(
                                                    ExecRequest.newBuilder()
                                                            .setContainerId("c")
                                                            .addAllCmd(List.of("tty"))
                                                            .setStdin(true)
                                                            .setStdout(true)
                                                            .setTty(true)
                                                            .build())
                                            .getUrl());
                    try (StreamingClient client = StreamingClient.builder().transport(t).build();
                            RemoteCommand cmd =
                                    client.exec(url, new CommandOptions(true, true, false, true))) {
                        cmd.resize(new TerminalSize(91, 33));
                        cmd.stdin().write("ok".getBytes(StandardCharsets.US_ASCII));
                        cmd.stdin().flush();
                        StringBuilder seen = new StringBuilder();
                        CompletableFuture<Void> f =
                                CompletableFuture.runAsync(
                                        () -> {
                                            byte[] buf = new byte[64];
                                            try {
                                                while (!seen.toString().contains("size 91x33\r\n")
                                                        || !seen.toString()
                                                                .replace("size 91x33\r\n", "")
                                                                .contains("ok")) {
                                                    int n = cmd.stdout().read(buf);
                                                    if (n < 0)
                                                        throw new IllegalStateException(
                                                                "EOF after " + seen);
                                                    synchronized (seen) {
                                                        seen.append(
                                                                new String(
                                                                        buf,
                                                                        0,
                                                                        n,
                                                                        StandardCharsets.US_ASCII));
                                                    }
                                                }
                                            } catch (java.io.IOException e) {
                                                throw new RuntimeException(e);
                                            }
                                        });
                        try {
                            f.get(10, TimeUnit.SECONDS);
                        } catch (java.util.concurrent.TimeoutException e) {
                            StringBuilder dump = new StringBuilder();
                            Thread.getAllStackTraces()
                                    .forEach(
                                            (th, st) -> {
                                                dump.append(th.getName()).append('\n');
                                                for (StackTraceElement el : st)
                                                    dump.append("   ").append(el).append('\n');
                                            });
                            throw new AssertionError(
                                    "session "
                                            + i
                                            + " "
                                            + t
                                            + " seen="
                                            + seen
                                            + " sizes="
                                            + runtime.sizes
                                            + "\n"
                                            + dump);
                        }
                        cmd.stdin().write('q');
                        cmd.stdin().flush();
                        assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isZero();
                    }
                }
            }
        }
    }
}
