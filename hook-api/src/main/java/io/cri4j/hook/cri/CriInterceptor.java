package io.cri4j.hook.cri;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * An interceptor that may block: the blocking form of {@link AsyncCriInterceptor}, with the same
 * powers (change the request, proceed, change the response, answer without proceeding) written
 * as plain calls. For per-method typed methods extend {@link ForwardingCriInterceptor}.
 *
 * <p>A proxy runs it as an {@link AsyncCriInterceptor} through {@link #async}: each call's
 * {@link #interceptUnary} runs on a worker thread, never on the I/O thread, and may block (for
 * example to ask a server); {@link UnaryChain#proceed} hands the request to the rest of the
 * chain, which runs on the I/O thread, and waits for its answer. The worker runs in a gRPC
 * {@link io.grpc.Context} that carries the client's deadline and is cancelled when the client
 * cancels (gRPC calls the interceptor makes inherit both), and a {@code proceed} waiting then
 * fails with {@code CANCELLED}. An exception other than a {@link StatusException} (or
 * {@link io.grpc.StatusRuntimeException}) fails the call with {@code INTERNAL} naming the
 * interceptor and the method.
 */
public interface CriInterceptor {

    /**
     * Whether this interceptor wants to see calls of {@code method}. Defaults to all. A proxy asks
     * once per method when it starts.
     */
    default boolean intercepts(MethodDescriptor<?, ?> method) {
        return true;
    }

    /**
     * Intercepts a unary call; may block. The default proceeds with the request unchanged.
     *
     * @return the response handed back towards the client
     * @throws StatusException to fail the call with that status
     */
    default <ReqT, RespT> RespT interceptUnary(UnaryChain<ReqT, RespT> chain)
            throws StatusException {
        return chain.proceed(chain.request());
    }

    /**
     * Intercepts a server-streaming call (for example {@code GetContainerEvents}); may block before
     * it proceeds. The default proceeds with the request unchanged and passes every response
     * through. To change responses, proceed with a wrapping {@link StreamObserver}; to answer
     * without proceeding, write to {@link StreamingChain#responses()} directly and complete it.
     */
    default <ReqT, RespT> void interceptServerStreaming(StreamingChain<ReqT, RespT> chain) {
        chain.proceed(chain.request(), chain.responses());
    }

    /**
     * {@code interceptor} in the form a proxy runs: each call's {@link #interceptUnary} and
     * {@link #interceptServerStreaming} run on {@code worker} in the gRPC {@link io.grpc.Context}
     * current when the proxy called the adapter, the returned stage completing from there. A call
     * {@code worker} rejects fails with {@code RESOURCE_EXHAUSTED} ({@code UNAVAILABLE} once an
     * {@link java.util.concurrent.ExecutorService} is shut down), naming the method. {@code worker}
     * must run tasks on threads of its own: the interceptor waits in {@code proceed} for the rest of
     * the chain, which runs on the caller's thread (a {@code proceed} on that thread fails the call
     * with {@code INTERNAL}).
     * {@code CriProxy.Builder.addInterceptor(CriInterceptor)} does this with the proxy's own
     * bounded pool of named threads.
     */
    static AsyncCriInterceptor async(CriInterceptor interceptor, Executor worker) {
        return new BlockingInterceptor(
                Objects.requireNonNull(interceptor, "interceptor"),
                Objects.requireNonNull(worker, "worker"));
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
         * Calls the next link, ultimately the backend, and waits for its response. Calling it more
         * than once sends the request again (for example to retry).
         *
         * @throws StatusException the status the backend (or a later link) failed with;
         *     {@code CANCELLED} when the client cancelled or the waiting thread was interrupted
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
