package io.cri4j.proxy.internal.interception;

import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.hook.internal.BlockingAdapters;
import io.cri4j.hook.internal.Statuses;
import io.cri4j.hook.internal.Tracing;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoop;
import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The one chain runner: runs the interceptors of the calls some interceptor wants, decoded, and
 * ends the chain with the call to the backend (request headers forwarded). Every link is an
 * {@link AsyncCriInterceptor} called on the call's I/O thread: a {@code proceed} from another
 * thread (a blocking interceptor's worker, an executor of an interceptor's own) runs the next link
 * there, and a stage a link returns that completes elsewhere is taken back there before the
 * previous link sees it. A unary chain ends in a backend call over the relay's connection
 * ({@link AsyncCall#backend}); a server-streaming chain ends in a grpc-java call. Everything else
 * the relay forwards as HTTP/2 frames and never decodes.
 */
public final class InterceptedService {
    private static final AsyncCriInterceptor[] NONE = new AsyncCriInterceptor[0];
    private final Channel backend;
    private final Tracing tracing;
    private final Map<AsciiString, MethodDescriptor<?, ?>> byPath = new HashMap<>();

    /** Each intercepted method's links, outermost first. */
    private final Map<MethodDescriptor<?, ?>, Links> chains = new HashMap<>();

    /**
     * The links of one method; {@code blocking} when one of them runs on a worker, which then runs
     * in the call's gRPC context.
     */
    private record Links(AsyncCriInterceptor[] links, boolean blocking) {}

    /** One intercepted call: what its chain's links need of it. */
    interface AsyncCall {
        /** The client's request headers as metadata (decoded when first asked for). */
        Metadata metadata();

        /**
         * Sends {@code request} to the backend (on the event loop); completes with its response or
         * fails with status, on the event loop.
         */
        CompletableFuture<Object> backend(Object request);

        /** The call's I/O thread: where every link runs; keeps the timeouts of hooks. */
        EventLoop loop();

        /** The call's gRPC context (deadline, cancellation), or null when it has none. */
        Context.CancellableContext context();
    }

    /**
     * A future the runner completes on the call's event loop (so a link's stage that is one needs
     * no hand-back). Its dependents are plain futures.
     */
    static final class LoopFuture extends CompletableFuture<Object> {}

    /**
     * The links' view of a call's event loop, for the proxy's own links (the hooks keep their
     * timeouts on its timer).
     */
    public interface OnLoop {
        /** The call's I/O thread. */
        ScheduledExecutorService loop();
    }

    /**
     * @param backend the channel server-streaming calls (and repeated unary proceeds) go to
     * @param interceptors the chain, outermost first
     * @param methods the methods that may be intercepted; those no interceptor wants, and
     *     client-streaming or bidirectional ones, stay pass-through
     */
    public InterceptedService(
            Channel backend,
            List<AsyncCriInterceptor> interceptors,
            List<MethodDescriptor<?, ?>> methods) {
        this(backend, interceptors, methods, Tracing.NONE);
    }

    /**
     * As {@link #InterceptedService(Channel, List, List)}, recording a span of each unary call
     * (parent: the client's W3C trace context) with its backend call under it, the links running
     * in it.
     */
    public InterceptedService(
            Channel backend,
            List<AsyncCriInterceptor> interceptors,
            List<MethodDescriptor<?, ?>> methods,
            Tracing tracing) {
        this.backend = backend;
        this.tracing = tracing;
        for (MethodDescriptor<?, ?> m : methods) {
            MethodDescriptor.MethodType t = m.getType();
            if (t != MethodDescriptor.MethodType.UNARY
                    && t != MethodDescriptor.MethodType.SERVER_STREAMING) {
                continue;
            }
            List<AsyncCriInterceptor> wanting = new ArrayList<>();
            boolean blocking = false;
            for (AsyncCriInterceptor i : interceptors) {
                if (i.intercepts(m)) {
                    wanting.add(i);
                    blocking |= BlockingAdapters.isBlocking(i);
                }
            }
            if (!wanting.isEmpty()) {
                byPath.put(AsciiString.of("/" + m.getFullMethodName()), m);
                chains.put(m, new Links(wanting.toArray(NONE), blocking));
            }
        }
    }

    /** The intercepted method for an HTTP/2 {@code :path}, or null when it passes through. */
    public MethodDescriptor<?, ?> method(CharSequence path) {
        return path == null ? null : byPath.get(AsciiString.of(path));
    }

    /** Number of intercepted methods. */
    public int size() {
        return byPath.size();
    }

    /**
     * Whether a link of {@code m}'s chain runs on a worker: its calls then get a gRPC context with
     * the client's deadline, cancelled when the client cancels.
     */
    boolean needsContext(MethodDescriptor<?, ?> m) {
        Links l = chains.get(m);
        return l != null && l.blocking();
    }

    /**
     * Runs a unary call through the chain, on the call's event loop. The outcome completes there.
     */
    CompletableFuture<Object> unary(MethodDescriptor<?, ?> m, Object req, AsyncCall call) {
        if (!tracing.enabled()) {
            return unaryFrom(0, chains.get(m).links(), m, req, call, null);
        }
        Object span =
                tracing.startFrom(
                        call.metadata(),
                        m.getFullMethodName(),
                        Tracing.Kind.SERVER,
                        rpcAttributes(m));
        CompletableFuture<Object> out = unaryFrom(0, chains.get(m).links(), m, req, call, span);
        out.whenComplete((v, e) -> tracing.end(span, e, "rpc.grpc.status_code", statusCode(e)));
        return out;
    }

    private static String[] rpcAttributes(MethodDescriptor<?, ?> m) {
        return new String[] {
            "rpc.system", "grpc",
            "rpc.service", m.getServiceName(),
            "rpc.method", m.getBareMethodName()
        };
    }

    private static String statusCode(Throwable e) {
        return Integer.toString(e == null ? 0 : Status.fromThrowable(e).getCode().value());
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private CompletableFuture<Object> unaryFrom(
            int i,
            AsyncCriInterceptor[] links,
            MethodDescriptor m,
            Object req,
            AsyncCall call,
            Object span) {
        if (i == links.length) {
            return span == null
                    ? backOnLoop(call.backend(req), call.loop())
                    : tracedBackend(m, req, call, span);
        }
        AsyncCriInterceptor link = links[i];
        CompletionStage<Object> stage;
        Context.CancellableContext ctx = call.context();
        Context previous = ctx == null ? null : ctx.attach();
        Tracing.Scope scope = span == null ? null : tracing.open(span);
        try {
            stage = link.interceptUnaryAsync(new UnaryLink(i + 1, links, m, req, call, span));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        } finally {
            if (scope != null) {
                scope.close();
            }
            if (ctx != null) {
                ctx.detach(previous);
            }
        }
        if (stage == null) {
            return CompletableFuture.failedFuture(Statuses.noStage(link, m));
        }
        return backOnLoop(stage, call.loop());
    }

    /** The rest of a unary chain, as a link sees it. */
    private final class UnaryLink
            implements AsyncCriInterceptor.AsyncUnaryChain<Object, Object>, OnLoop {
        private final int next;
        private final AsyncCriInterceptor[] links;
        private final MethodDescriptor<Object, Object> method;
        private final Object request;
        private final AsyncCall call;
        private final Object span;

        UnaryLink(
                int next,
                AsyncCriInterceptor[] links,
                MethodDescriptor<Object, Object> method,
                Object request,
                AsyncCall call,
                Object span) {
            this.next = next;
            this.links = links;
            this.method = method;
            this.request = request;
            this.call = call;
            this.span = span;
        }

        @Override
        public MethodDescriptor<Object, Object> method() {
            return method;
        }

        @Override
        public Object request() {
            return request;
        }

        @Override
        public Metadata metadata() {
            return call.metadata();
        }

        @Override
        public ScheduledExecutorService loop() {
            return call.loop();
        }

        @Override
        public CompletionStage<Object> proceed(Object request) {
            EventLoop loop = call.loop();
            if (loop.inEventLoop()) {
                return unaryFrom(next, links, method, request, call, span);
            }
            LoopFuture out = new LoopFuture();
            onLoop(
                    loop,
                    () ->
                            unaryFrom(next, links, method, request, call, span)
                                    .whenComplete((v, e) -> complete(out, v, e)),
                    out);
            return out;
        }
    }

    /**
     * The call to the backend as a span under the call's; its outcome completes the chain in the
     * call's span, so what runs on it (a host's events after the runtime answered) is under it.
     */
    private CompletableFuture<Object> tracedBackend(
            MethodDescriptor<?, ?> m, Object req, AsyncCall call, Object span) {
        Object client =
                tracing.start(span, m.getFullMethodName(), Tracing.Kind.CLIENT, rpcAttributes(m));
        CompletableFuture<Object> answer;
        try {
            answer = call.backend(req);
        } catch (RuntimeException e) {
            tracing.end(client, e, "rpc.grpc.status_code", statusCode(e));
            throw e;
        }
        LoopFuture out = new LoopFuture();
        answer.whenComplete(
                (v, e) -> {
                    tracing.end(client, e, "rpc.grpc.status_code", statusCode(e));
                    Runnable done =
                            () -> {
                                Tracing.Scope scope = tracing.open(span);
                                try {
                                    complete(out, v, e);
                                } finally {
                                    scope.close();
                                }
                            };
                    if (call.loop().inEventLoop()) {
                        done.run();
                    } else {
                        onLoop(call.loop(), done, out);
                    }
                });
        return out;
    }

    /**
     * {@code stage}, completing on {@code loop}: as it is when it already does (the runner's own
     * futures, or one already complete), else a future completed there once it completes.
     */
    private static CompletableFuture<Object> backOnLoop(
            CompletionStage<Object> stage, EventLoop loop) {
        if (stage instanceof LoopFuture f) {
            return f;
        }
        if (stage instanceof CompletableFuture<Object> f && f.isDone()) {
            return f; // its dependents run on the thread that adds them: this loop
        }
        LoopFuture out = new LoopFuture();
        stage.whenComplete(
                (v, e) -> {
                    if (loop.inEventLoop()) {
                        complete(out, v, e);
                    } else {
                        onLoop(loop, () -> complete(out, v, e), out);
                    }
                });
        return out;
    }

    private static void complete(CompletableFuture<Object> f, Object v, Throwable e) {
        if (e != null) {
            f.completeExceptionally(e);
        } else {
            f.complete(v);
        }
    }

    /** Runs {@code task} on {@code loop}; fails {@code orElse} when the loop is shut down. */
    private static void onLoop(EventLoop loop, Runnable task, CompletableFuture<?> orElse) {
        try {
            loop.execute(task);
        } catch (RejectedExecutionException e) {
            orElse.completeExceptionally(
                    Status.UNAVAILABLE
                            .withDescription("the proxy is shutting down")
                            .withCause(e)
                            .asException());
        }
    }

    /**
     * A unary call straight to the backend through grpc-java, with the client's headers and
     * deadline: a chain's second {@code proceed} (its first goes over the relay). Failing the
     * returned future first (the client went away) cancels the call. Completes on the channel's
     * thread.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    CompletableFuture<Object> callBackend(
            MethodDescriptor m, Object req, Metadata headers, io.grpc.Deadline deadline) {
        CompletableFuture<Object> out = new CompletableFuture<>();
        CallOptions options =
                deadline == null ? CallOptions.DEFAULT : CallOptions.DEFAULT.withDeadline(deadline);
        io.grpc.ClientCall call = withHeaders(headers).newCall(m, options);
        out.whenComplete(
                (v, e) -> {
                    if (e != null) {
                        call.cancel(
                                "the proxy's client cancelled the call",
                                null); // no-op once it ended
                    }
                });
        ClientCalls.asyncUnaryCall(
                call,
                req,
                new StreamObserver<Object>() {
                    @Override
                    public void onNext(Object value) {
                        out.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        out.completeExceptionally(
                                t instanceof StatusRuntimeException e
                                        ? new StatusException(
                                                BackendStatus.forClient(e.getStatus()),
                                                e.getTrailers())
                                        : t);
                    }

                    @Override
                    public void onCompleted() {
                        if (!out.isDone()) {
                            out.completeExceptionally(
                                    Status.INTERNAL
                                            .withDescription(
                                                    "the runtime answered "
                                                            + m.getFullMethodName()
                                                            + " with no message")
                                            .asException());
                        }
                    }
                });
        return out;
    }

    /**
     * Runs a server-streaming call through the chain, on the call's event loop; the outcome goes to
     * {@code out}. The backend call is made in {@code ctx}: its deadline, and its cancellation when
     * the client goes away, reach the runtime.
     */
    void serverStreaming(
            MethodDescriptor<?, ?> m,
            Object req,
            Metadata headers,
            Context.CancellableContext ctx,
            EventLoop loop,
            StreamObserver<Object> out) {
        streamFrom(0, chains.get(m).links(), m, req, headers, ctx, loop, out);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void streamFrom(
            int i,
            AsyncCriInterceptor[] links,
            MethodDescriptor m,
            Object req,
            Metadata headers,
            Context.CancellableContext ctx,
            EventLoop loop,
            StreamObserver<Object> out) {
        Context previous = ctx.attach();
        try {
            if (i == links.length) {
                startBackendStream(m, req, headers, out);
                return;
            }
            links[i].interceptServerStreaming(
                    new AsyncCriInterceptor.StreamingChain<Object, Object>() {
                        @Override
                        public MethodDescriptor<Object, Object> method() {
                            return m;
                        }

                        @Override
                        public Object request() {
                            return req;
                        }

                        @Override
                        public Metadata metadata() {
                            return headers;
                        }

                        @Override
                        public StreamObserver<Object> responses() {
                            return out;
                        }

                        @Override
                        public void proceed(Object request, StreamObserver<Object> responses) {
                            if (loop.inEventLoop()) {
                                streamFrom(i + 1, links, m, request, headers, ctx, loop, responses);
                                return;
                            }
                            try {
                                loop.execute(
                                        () ->
                                                streamFrom(
                                                        i + 1, links, m, request, headers, ctx,
                                                        loop, responses));
                            } catch (RejectedExecutionException e) {
                                responses.onError(
                                        Status.UNAVAILABLE
                                                .withDescription("the proxy is shutting down")
                                                .asException());
                            }
                        }
                    });
        } catch (RuntimeException e) {
            out.onError(Statuses.of(e, "interceptor failed on " + m.getFullMethodName()));
        } finally {
            ctx.detach(previous);
        }
    }

    private <Q, R> void startBackendStream(
            MethodDescriptor<Q, R> m, Q req, Metadata headers, StreamObserver<R> out) {
        ClientCalls.asyncServerStreamingCall(
                withHeaders(headers).newCall(m, CallOptions.DEFAULT),
                req,
                new StreamObserver<R>() {
                    @Override
                    public void onNext(R value) {
                        out.onNext(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        out.onError(
                                t instanceof StatusRuntimeException e
                                        ? BackendStatus.forClient(e.getStatus())
                                                .asRuntimeException(e.getTrailers())
                                        : t);
                    }

                    @Override
                    public void onCompleted() {
                        out.onCompleted();
                    }
                });
    }

    private Channel withHeaders(Metadata headers) {
        return headers == null || headers.keys().isEmpty()
                ? backend
                : ClientInterceptors.intercept(
                        backend, MetadataUtils.newAttachHeadersInterceptor(headers));
    }
}
