package io.cri4j.hook.cri;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletionStage;

/**
 * Intercepts CRI calls passing through a proxy, in the spirit of OkHttp's
 * {@code Interceptor.Chain}: an interceptor sees the call (method, request, metadata), may
 * replace the request, {@linkplain AsyncUnaryChain#proceed proceed} to the next link (the last
 * link is the backend runtime), change the response, or answer without proceeding. This is the
 * form a proxy runs: every link of a chain is one of these, called on the proxy's I/O thread.
 *
 * <p>Which to write:
 * <ul>
 *   <li>Code that never blocks (it computes from the request, or waits on nothing but stages):
 *       extend {@link ForwardingAsyncCriInterceptor} and override the methods you want, e.g.
 *       {@code createContainer(CreateContainerRequest, AsyncUnaryChain)}; typed, no casts.</li>
 *   <li>Code that blocks (asks a server, takes a lock, reads a file): extend
 *       {@link ForwardingCriInterceptor}, the blocking form; a proxy runs it on a worker thread
 *       ({@link CriInterceptor#async}).</li>
 *   <li>Code that sees every method alike (logging, metrics, a header check): implement this
 *       interface, or {@link CriInterceptor} when it blocks.</li>
 * </ul>
 *
 * <p>{@link #interceptUnaryAsync} and {@link #interceptServerStreaming} must return at once: no
 * I/O, no waiting on locks or futures, no sleeping. Work that has to wait goes elsewhere (an
 * executor of yours, an asynchronous client) and completes the returned stage from there;
 * {@code proceed} may be called from any thread. A proxy calls every link on the I/O thread
 * that read the call and completes the stages it hands out ({@code proceed}'s) on that thread:
 * dependent stages run there too and must not block either. An interceptor that says it never
 * blocks and then blocks stalls every call on that I/O thread.
 *
 * <p>Interceptors compose in the order they were registered: the first registered sees the call
 * first and the response last. Calls of methods for which {@link #intercepts} answers false for
 * every interceptor (and that no hook needs) are forwarded as raw bytes without being decoded.
 *
 * <p>Both {@code runtime.v1} and {@code runtime.v1alpha2} calls are presented with the
 * {@code io.cri4j.cri.v1} message classes: the two versions are wire-compatible for every message
 * the v1alpha2 API has, and fields only one side knows are kept as unknown fields. The
 * {@linkplain AsyncUnaryChain#method() method}'s full name tells which version was called;
 * compare {@link MethodDescriptor#getBareMethodName()} to treat both alike (the
 * {@code Forwarding*} bases do).
 *
 * <p>A stage that fails with a {@link StatusException} or {@link io.grpc.StatusRuntimeException}
 * (also wrapped in a {@link java.util.concurrent.CompletionException}, as dependent stages wrap
 * it) fails the call with that status; any other failure fails it with {@code INTERNAL} naming
 * the method. The stage {@link AsyncUnaryChain#proceed} returns fails with the backend's status
 * when the runtime answered with an error, and with {@code CANCELLED} when the client cancelled
 * the call or went away. An error from the runtime that reaches the client unchanged is
 * forwarded exactly as the runtime sent it (status, message and trailers); likewise a response
 * the chain passes back unchanged goes back as the bytes the runtime sent.
 */
public interface AsyncCriInterceptor {

    /**
     * Whether this interceptor wants to see calls of {@code method}. Defaults to all. A proxy asks
     * once per method when it starts.
     */
    default boolean intercepts(MethodDescriptor<?, ?> method) {
        return true;
    }

    /**
     * Intercepts a unary call without blocking. The default proceeds with the request unchanged.
     *
     * @return the response for the client, or a stage failing with the status to answer with
     */
    default <ReqT, RespT> CompletionStage<RespT> interceptUnaryAsync(
            AsyncUnaryChain<ReqT, RespT> chain) {
        return chain.proceed(chain.request());
    }

    /**
     * Intercepts a server-streaming call (for example {@code GetContainerEvents}) without
     * blocking. The default proceeds with the request unchanged and passes every response through.
     * To change responses, proceed with a wrapping {@link StreamObserver}; to answer without
     * proceeding, write to {@link StreamingChain#responses()} directly and complete it (from any
     * thread).
     */
    default <ReqT, RespT> void interceptServerStreaming(StreamingChain<ReqT, RespT> chain) {
        chain.proceed(chain.request(), chain.responses());
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
         * failed with; dependent stages run on the thread that completes it, the proxy's I/O thread
         * in a proxy, so they must not block either. Calling it more than once sends the request
         * again (for example to retry). May be called from any thread.
         */
        CompletionStage<RespT> proceed(ReqT request);
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
         * {@code responses}. Returns once the call is started, not when it ends. May be called from
         * any thread.
         */
        void proceed(ReqT request, StreamObserver<RespT> responses);
    }
}
