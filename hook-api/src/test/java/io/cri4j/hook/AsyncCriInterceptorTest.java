package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** How an asynchronous interceptor takes part in a chain that runs on a worker. */
class AsyncCriInterceptorTest {
  private static final MethodDescriptor<VersionRequest, VersionResponse> VERSION =
      RuntimeServiceGrpc.getVersionMethod();

  /** An interceptor whose async link is {@code body}. */
  private static AsyncCriInterceptor async(Function<AsyncCriInterceptor.AsyncUnaryChain<
      VersionRequest, VersionResponse>, CompletionStage<VersionResponse>> body) {
    return new AsyncCriInterceptor() {
      @Override
      @SuppressWarnings("unchecked")
      public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
        return (CompletionStage<R>) body.apply(
            (AsyncUnaryChain<VersionRequest, VersionResponse>) chain);
      }
    };
  }

  /** The rest of a synchronous chain: {@code next} answers each request it gets. */
  private static CriInterceptor.UnaryChain<VersionRequest, VersionResponse> chain(
      VersionRequest request, List<VersionRequest> sent, Next next) {
    return new CriInterceptor.UnaryChain<>() {
      @Override public MethodDescriptor<VersionRequest, VersionResponse> method() {
        return VERSION;
      }

      @Override public VersionRequest request() { return request; }

      @Override public Metadata metadata() { return new Metadata(); }

      @Override public VersionResponse proceed(VersionRequest r) throws StatusException {
        sent.add(r);
        return next.answer(r);
      }
    };
  }

  @FunctionalInterface
  private interface Next {
    VersionResponse answer(VersionRequest r) throws StatusException;
  }

  private static VersionRequest version(String v) {
    return VersionRequest.newBuilder().setVersion(v).build();
  }

  @Test
  void changesTheRequestAndTheResponseThroughTheSynchronousChain() throws Exception {
    List<VersionRequest> sent = new CopyOnWriteArrayList<>();
    AsyncCriInterceptor i = async(c -> c.proceed(version(c.request().getVersion() + "+"))
        .thenApply(r -> r.toBuilder().setRuntimeName(r.getRuntimeName() + "!").build()));
    VersionResponse r = i.interceptUnary(chain(version("v"), sent,
        q -> VersionResponse.newBuilder().setRuntimeName("rt-" + q.getVersion()).build()));
    assertThat(sent).extracting(VersionRequest::getVersion).containsExactly("v+");
    assertThat(r.getRuntimeName()).isEqualTo("rt-v+!");
  }

  @Test
  void waitsForAStageCompletedElsewhere() throws Exception {
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      AsyncCriInterceptor i = async(c -> CompletableFuture.supplyAsync(
          () -> VersionResponse.newBuilder().setRuntimeName("elsewhere").build(), other));
      assertThat(i.interceptUnary(chain(version("v"), new CopyOnWriteArrayList<>(), q -> null))
          .getRuntimeName()).isEqualTo("elsewhere");
    } finally {
      other.shutdownNow();
    }
  }

  @Test
  void theNextLinksStatusReachesTheStageAndFailuresBecomeStatuses() {
    List<Status> seen = new CopyOnWriteArrayList<>();
    AsyncCriInterceptor passOn = async(c -> c.proceed(c.request())
        .whenComplete((v, e) -> seen.add(Status.fromThrowable(e))));
    assertThatThrownBy(() -> passOn.interceptUnary(chain(version("v"),
        new CopyOnWriteArrayList<>(), q -> {
          throw Status.NOT_FOUND.withDescription("gone").asException();
        })))
        .isInstanceOfSatisfying(StatusException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
          assertThat(e.getStatus().getDescription()).isEqualTo("gone");
        });
    assertThat(seen).singleElement()
        .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.NOT_FOUND));

    AsyncCriInterceptor throwing = async(c -> {
      throw new IllegalStateException("boom");
    });
    assertThatThrownBy(() -> throwing.interceptUnary(chain(version("v"),
        new CopyOnWriteArrayList<>(), q -> null)))
        .isInstanceOfSatisfying(StatusException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
          assertThat(e.getStatus().getDescription())
              .contains("runtime.v1.RuntimeService/Version").contains("boom");
        });

    AsyncCriInterceptor failedStage = async(c -> CompletableFuture.failedFuture(
        new IllegalArgumentException("bad")));
    assertThatThrownBy(() -> failedStage.interceptUnary(chain(version("v"),
        new CopyOnWriteArrayList<>(), q -> null)))
        .isInstanceOfSatisfying(StatusException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
          assertThat(e.getStatus().getDescription()).contains("bad");
        });

    AsyncCriInterceptor noStage = async(c -> null);
    assertThatThrownBy(() -> noStage.interceptUnary(chain(version("v"),
        new CopyOnWriteArrayList<>(), q -> null)))
        .isInstanceOfSatisfying(StatusException.class, e ->
            assertThat(e.getStatus().getDescription()).contains("returned no stage"));
  }

  @Test
  void anInterruptedWaitEndsTheCallCancelled() {
    AsyncCriInterceptor never = async(c -> new CompletableFuture<>());
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> never.interceptUnary(chain(version("v"),
          new CopyOnWriteArrayList<>(), q -> null)))
          .isInstanceOfSatisfying(StatusException.class, e ->
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.CANCELLED));
      assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept").isTrue();
    } finally {
      Thread.interrupted();
    }
  }
}
