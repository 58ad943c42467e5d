package io.cri4j.hook;

import io.cri4j.hook.internal.Statuses;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * A {@link CriInterceptor} whose unary calls never block the thread they are called on. When
 * every interceptor that wants a unary method is one of these (runtime hooks count as one), a
 * proxy runs the whole chain on the I/O thread that read the call, sends the backend call on its
 * own connection to the runtime, and runs the rest of the chain when the answer comes in: no
 * thread hand-off, tens of microseconds less per call on a small node than the worker the
 * blocking {@link CriInterceptor#interceptUnary} needs.
 *
 * <p>{@link #interceptUnaryAsync} must return at once: no I/O, no waiting on locks or futures,
 * no sleeping. Work that has to wait goes elsewhere (an executor of yours, an asynchronous
 * client) and completes the returned stage from there; the proxy then writes the answer from
 * its I/O thread. An interceptor that says it never blocks and then blocks stalls every call on
 * that I/O thread.
 *
 * <p>A stage that fails with a {@link StatusException} or {@link io.grpc.StatusRuntimeException}
 * (also wrapped in a {@link java.util.concurrent.CompletionException}, as dependent stages wrap
 * it) fails the call with that status; any other failure fails it with {@code INTERNAL} naming
 * the method. The stage {@link AsyncUnaryChain#proceed} returns fails with the backend's status
 * when the runtime answered with an error, and with {@code CANCELLED} when the client cancelled
 * the call or went away. An error from the runtime that reaches the client unchanged is
 * forwarded exactly as the runtime sent it (status, message and trailers); likewise a response
 * the chain passes back unchanged goes back as the bytes the runtime sent.
 *
 * <p>Server-streaming calls go through {@link #interceptServerStreaming} as for every
 * interceptor; a chain that also has a blocking interceptor for a unary method runs
 * {@link #interceptUnary}, which by default runs {@link #interceptUnaryAsync} and waits for it.
 */
public interface AsyncCriInterceptor extends CriInterceptor {

  /**
   * Intercepts a unary call without blocking.
   *
   * @return the response for the client, or a stage failing with the status to answer with
   */
  <ReqT, RespT> CompletionStage<RespT> interceptUnaryAsync(AsyncUnaryChain<ReqT, RespT> chain);

  /**
   * Runs {@link #interceptUnaryAsync} on the calling thread with the rest of the chain called
   * synchronously, and waits for its answer: how this interceptor takes part in a chain that
   * runs on a worker.
   */
  @Override
  default <ReqT, RespT> RespT interceptUnary(UnaryChain<ReqT, RespT> chain)
      throws StatusException {
    CompletionStage<RespT> stage;
    try {
      stage = interceptUnaryAsync(new AsyncUnaryChain<ReqT, RespT>() {
        @Override public MethodDescriptor<ReqT, RespT> method() { return chain.method(); }

        @Override public ReqT request() { return chain.request(); }

        @Override public Metadata metadata() { return chain.metadata(); }

        @Override public CompletionStage<RespT> proceed(ReqT request) {
          try {
            return CompletableFuture.completedFuture(chain.proceed(request));
          } catch (StatusException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
          }
        }
      });
    } catch (RuntimeException e) {
      throw Statuses.of(e, "interceptor failed on " + chain.method().getFullMethodName());
    }
    if (stage == null) {
      throw Statuses.noStage(this, chain.method());
    }
    try {
      return stage.toCompletableFuture().get();
    } catch (ExecutionException e) {
      throw Statuses.of(e.getCause(),
          "interceptor failed on " + chain.method().getFullMethodName());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted while waiting for the interceptor on "
          + chain.method().getFullMethodName()).asException();
    }
  }

  /** The rest of the chain for a unary call, asynchronously. */
  interface AsyncUnaryChain<ReqT, RespT> {
    /** The called method, as named on the wire. */
    MethodDescriptor<ReqT, RespT> method();

    /** The request as handed to this link (possibly already changed by an earlier link). */
    ReqT request();

    /** The request headers the client sent; forwarded to the backend. */
    Metadata metadata();

    /**
     * Calls the next link, ultimately the backend, with the client's headers and deadline. The
     * stage completes with the response, or fails with the status the backend (or a later link)
     * failed with; dependent stages run on the thread that completes it, usually the proxy's I/O
     * thread, so they must not block either. Calling it more than once sends the request again
     * (for example to retry).
     */
    CompletionStage<RespT> proceed(ReqT request);
  }
}
