package io.cri4j.proxy.internal.interception;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.nio.channels.ClosedChannelException;
import org.junit.jupiter.api.Test;

/**
 * A backend connection that dies under a call must reach the proxy's client as UNAVAILABLE
 * (retry later), while a status the runtime itself sent passes through unchanged.
 */
class BackendStatusTest {

    @Test
    void localTransportFailureBecomesUnavailable() {
        ClosedChannelException closed = new ClosedChannelException();
        Status mapped =
                BackendStatus.forClient(
                        Status.UNKNOWN.withDescription("channel closed").withCause(closed));
        assertThat(mapped.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(mapped.getDescription())
                .contains("connection to the runtime was lost")
                .contains("channel closed");
        assertThat(mapped.getCause()).isSameAs(closed);
    }

    @Test
    void statusesTheRuntimeSentPassUnchanged() {
        Status fromRuntime = Status.UNKNOWN.withDescription("server is not initialized yet");
        assertThat(BackendStatus.forClient(fromRuntime)).isSameAs(fromRuntime);
        Status notFound = Status.NOT_FOUND.withDescription("container \"x\" not found");
        assertThat(BackendStatus.forClient(notFound)).isSameAs(notFound);
        Status internal = Status.UNKNOWN.withCause(new IllegalStateException("a bug"));
        assertThat(BackendStatus.forClient(internal)).isSameAs(internal);
    }
}
