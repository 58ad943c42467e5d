package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.testing.TestRuntime;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamingServerTest {
    private static void assertCode(Runnable r, Status.Code code, String msg) {
        assertThatThrownBy(r::run)
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(code);
                            assertThat(e.getStatus().getDescription()).contains(msg);
                        });
    }

    @Test
    void validatesLikeKubelet() throws Exception {
        try (StreamingServer s = StreamingServer.builder(new TestRuntime()).build().start()) {
            assertCode(
                    () -> s.getExec(ExecRequest.newBuilder().setStdout(true).build()),
                    Status.Code.INVALID_ARGUMENT,
                    "missing required container_id");
            assertCode(
                    () ->
                            s.getExec(
                                    ExecRequest.newBuilder()
                                            .setContainerId("c")
                                            .setTty(true)
                                            .setStderr(true)
                                            .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "tty and stderr");
            assertCode(
                    () -> s.getExec(ExecRequest.newBuilder().setContainerId("c").build()),
                    Status.Code.INVALID_ARGUMENT,
                    "one of stdin, stdout, or stderr");
            assertCode(
                    () -> s.getAttach(AttachRequest.newBuilder().setContainerId("c").build()),
                    Status.Code.INVALID_ARGUMENT,
                    "one of stdin, stdout, and stderr");
            assertCode(
                    () -> s.getAttach(AttachRequest.newBuilder().setStdin(true).build()),
                    Status.Code.INVALID_ARGUMENT,
                    "missing required container_id");
            assertCode(
                    () -> s.getPortForward(PortForwardRequest.newBuilder().build()),
                    Status.Code.INVALID_ARGUMENT,
                    "missing required pod_sandbox_id");
            assertCode(
                    () ->
                            s.getPortForward(
                                    PortForwardRequest.newBuilder()
                                            .setPodSandboxId("p")
                                            .addPort(70000)
                                            .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "invalid port 70000");
            String url =
                    s.getExec(ExecRequest.newBuilder().setContainerId("c").setStdout(true).build())
                            .getUrl();
            assertThat(url)
                    .matches(
                            "http://127\\.0\\.0\\.1:"
                                    + s.address().getPort()
                                    + "/exec/[A-Za-z0-9_-]{22}");
            assertThat(
                            s.getPortForward(
                                            PortForwardRequest.newBuilder()
                                                    .setPodSandboxId("p")
                                                    .build())
                                    .getUrl())
                    .contains("/portforward/");
            assertThat(s.pendingRequests()).isEqualTo(2);
        }
    }

    @Test
    void fullCacheIsResourceExhausted() throws Exception {
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime()).maxInFlight(2).build().start()) {
            ExecRequest r = ExecRequest.newBuilder().setContainerId("c").setStdout(true).build();
            s.getExec(r);
            s.getExec(r);
            assertCode(() -> s.getExec(r), Status.Code.RESOURCE_EXHAUSTED, "in-flight");
        }
    }

    @Test
    void baseUrlAndPathPrefix() throws Exception {
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime())
                        .baseUrl(URI.create("https://node.example:0/cri/"))
                        .build()) {
            assertThatThrownBy(s::baseUrl).isInstanceOf(IllegalStateException.class);
            assertCode(
                    () ->
                            s.getAttach(
                                    AttachRequest.newBuilder()
                                            .setContainerId("c")
                                            .setStdin(true)
                                            .build()),
                    Status.Code.FAILED_PRECONDITION,
                    "not started");
            s.start();
            assertThat(s.baseUrl().toString())
                    .isEqualTo("https://node.example:" + s.address().getPort() + "/cri/");
            assertThat(
                            s.getAttach(
                                            AttachRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .setStdin(true)
                                                    .build())
                                    .getUrl())
                    .startsWith(s.baseUrl() + "attach/");
        }
    }

    @Test
    void baseUrlWithoutPathStillYieldsAbsolutePaths() throws Exception {
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime())
                        .baseUrl(URI.create("http://node.example:10010"))
                        .build()
                        .start()) {
            assertThat(
                            s.getExec(
                                            ExecRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .setStdout(true)
                                                    .build())
                                    .getUrl())
                    .matches("http://node\\.example:10010/exec/[A-Za-z0-9_-]{22}");
        }
    }

    @Test
    void closedServerRefusesAndCloseIsIdempotent() throws Exception {
        StreamingServer s = StreamingServer.builder(new TestRuntime()).build().start();
        s.close();
        s.close();
        assertCode(
                () ->
                        s.getExec(
                                ExecRequest.newBuilder()
                                        .setContainerId("c")
                                        .setStdout(true)
                                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "closed");
    }

    @Test
    void builderRejectsNonsense() {
        StreamingServer.Builder b = StreamingServer.builder(new TestRuntime());
        assertThatThrownBy(() -> b.idleTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.pathPrefix("x")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.remoteCommandProtocols(List.of()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.baseUrl(URI.create("/relative")))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
