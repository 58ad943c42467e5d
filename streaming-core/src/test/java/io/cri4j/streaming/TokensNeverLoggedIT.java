package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.streaming.testing.RawConn;
import io.cri4j.streaming.testing.TestRuntime;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Streaming URLs carry secrets: no log line, at any level we emit, may contain a token. */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class TokensNeverLoggedIT {
    @Test
    void noTokenInAnyLogLine() throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        List<String> tokens = new ArrayList<>();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime())
                        .streamCreationTimeout(Duration.ofMillis(200))
                        .build()
                        .start()) {
            assertThat(org.slf4j.LoggerFactory.getLogger("io.cri4j.streaming").isDebugEnabled())
                    .as("debug logging must be on for this test to mean anything")
                    .isTrue();
            for (String[] cmd : new String[][] {{"fail"}, {"exit", "3"}, {"echo", "x"}}) {
                URI u =
                        URI.create(
                                s.getExec(
                                                ExecRequest.newBuilder()
                                                        .setContainerId("c")
                                                        .addAllCmd(List.of(cmd))
                                                        .setStdout(true)
                                                        .build())
                                        .getUrl());
                tokens.add(u.getPath().substring(u.getPath().lastIndexOf('/') + 1));
                try (RawConn c = new RawConn(s.baseUrl())) {
                    c.webSocket(u, "v4.channel.k8s.io");
                    c.readToEof();
                }
            }
            URI timeout =
                    URI.create(
                            s.getExec(
                                            ExecRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .addCmd("cat")
                                                    .setStdin(true)
                                                    .build())
                                    .getUrl());
            tokens.add(timeout.getPath().substring(timeout.getPath().lastIndexOf('/') + 1));
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request(
                        "POST",
                        timeout,
                        "Connection: Upgrade",
                        "Upgrade: SPDY/3.1",
                        "X-Stream-Protocol-Version: v4.channel.k8s.io");
                c.readToEof();
            }
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request("GET", s.baseUrl().resolve("exec/" + tokens.get(0)));
                assertThat(c.status).isEqualTo(404);
            }
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        original.print(log);
        assertThat(log).contains("timed out waiting for client to create streams");
        for (String t : tokens) {
            assertThat(log).doesNotContain(t);
        }
    }
}
