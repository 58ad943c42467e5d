package io.cri4j.proxy.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A backend connection that dies under a call must reach the proxy's client as UNAVAILABLE
 * (retry later), while a status the runtime itself sent passes through unchanged.
 */
class BackendStatusTest {

  @Test
  void localTransportFailureBecomesUnavailable() {
    ClosedChannelException closed = new ClosedChannelException();
    Status mapped = BackendStatus.forClient(
        Status.UNKNOWN.withDescription("channel closed").withCause(closed));
    assertThat(mapped.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(mapped.getDescription()).contains("connection to the runtime was lost")
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

  @Test
  void rawForwarderRelaysADeadConnectionAsUnavailable() throws Exception {
    String name = InProcessServerBuilder.generateName();
    Server server = InProcessServerBuilder.forName(name).directExecutor()
        .fallbackHandlerRegistry(new RawForwarder(new DeadConnection())).build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    try {
      assertThatThrownBy(() -> RuntimeServiceGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .listContainers(ListContainersRequest.getDefaultInstance()))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription()).contains("channel closed");
          });
    } finally {
      channel.shutdownNow();
      server.shutdownNow();
    }
  }

  /** A backend whose connection is gone: every call ends as grpc-netty reports a dead socket. */
  private static final class DeadConnection extends Channel {
    @Override
    public <Q, R> ClientCall<Q, R> newCall(MethodDescriptor<Q, R> method, CallOptions options) {
      return new ClientCall<>() {
        private Listener<R> listener;

        @Override public void start(Listener<R> l, Metadata headers) { listener = l; }

        @Override public void request(int n) {}

        @Override public void cancel(String message, Throwable cause) {}

        @Override public void halfClose() {
          listener.onClose(Status.UNKNOWN.withDescription("channel closed")
              .withCause(new ClosedChannelException()), new Metadata());
        }

        @Override public void sendMessage(Q message) {}
      };
    }

    @Override
    public String authority() {
      return "dead";
    }
  }
}
