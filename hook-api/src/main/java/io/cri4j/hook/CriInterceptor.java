package io.cri4j.hook;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;

/**
 * Intercepts CRI calls passing through a proxy, in the spirit of OkHttp's
 * {@code Interceptor.Chain}: an interceptor sees the typed call (method, request, metadata), may
 * replace the request, {@linkplain UnaryChain#proceed proceed} to the next link (the last link is
 * the backend runtime), change the response, or answer without proceeding.
 *
 * <p>Interceptors compose in the order they were registered: the first registered sees the call
 * first and the response last. Calls of methods for which {@link #intercepts} answers false for
 * every interceptor (and that no hook needs) are forwarded as raw bytes without being decoded.
 *
 * <p>Both {@code runtime.v1} and {@code runtime.v1alpha2} calls are presented with the
 * {@code io.cri4j.cri.v1} message classes: the two versions are wire-compatible for every message
 * the v1alpha2 API has, and fields only one side knows are kept as unknown fields. The
 * {@linkplain UnaryChain#method() method}'s full name tells which version was called; compare
 * {@link MethodDescriptor#getBareMethodName()} to treat both alike.
 *
 * <p>Interceptors are called on worker threads and may block (for example to ask a hook
 * server); the caller's deadline and cancellation propagate to the backend call. An interceptor
 * that never blocks should implement {@link AsyncCriInterceptor} instead: a proxy then keeps
 * the call on its I/O thread, with no thread hand-off.
 */
public interface CriInterceptor {

  /** Whether this interceptor wants to see calls of {@code method}. Defaults to all. */
  default boolean intercepts(MethodDescriptor<?, ?> method) {
    return true;
  }

  /**
   * Intercepts a unary call. The default proceeds with the request unchanged.
   *
   * @return the response handed back towards the client
   * @throws StatusException to fail the call with that status
   */
  default <ReqT, RespT> RespT interceptUnary(UnaryChain<ReqT, RespT> chain)
      throws StatusException {
    return chain.proceed(chain.request());
  }

  /**
   * Intercepts a server-streaming call (for example {@code GetContainerEvents}). The default
   * proceeds with the request unchanged and passes every response through. To change responses,
   * proceed with a wrapping {@link StreamObserver}; to answer without proceeding, write to
   * {@link StreamingChain#responses()} directly and complete it.
   */
  default <ReqT, RespT> void interceptServerStreaming(StreamingChain<ReqT, RespT> chain) {
    chain.proceed(chain.request(), chain.responses());
  }

  /** The rest of the chain for a unary call. */
  interface UnaryChain<ReqT, RespT> {
    /** The called method, as named on the wire. */
    MethodDescriptor<ReqT, RespT> method();

    /** The request as handed to this link (possibly already changed by an earlier link). */
    ReqT request();

    /** The request headers the client sent; forwarded to the backend. */
    Metadata metadata();

    /**
     * Calls the next link, ultimately the backend, and returns its response.
     *
     * @throws StatusException the status the backend (or a later link) failed with
     */
    RespT proceed(ReqT request) throws StatusException;
  }

  /** The rest of the chain for a server-streaming call. */
  interface StreamingChain<ReqT, RespT> {
    /** The called method, as named on the wire. */
    MethodDescriptor<ReqT, RespT> method();

    /** The request as handed to this link. */
    ReqT request();

    /** The request headers the client sent; forwarded to the backend. */
    Metadata metadata();

    /** Where responses for the client go. */
    StreamObserver<RespT> responses();

    /**
     * Starts the next link; its responses, completion or error are delivered to
     * {@code responses}. Returns once the call is started, not when it ends.
     */
    void proceed(ReqT request, StreamObserver<RespT> responses);
  }
}
