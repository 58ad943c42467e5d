package io.cri4j.proxy.internal.interception;

import io.cri4j.hook.internal.Statuses;
import io.cri4j.proxy.internal.relay.Capture;
import io.cri4j.proxy.internal.relay.GrpcWire;
import io.cri4j.proxy.internal.relay.HeaderBlocks;
import io.cri4j.proxy.internal.relay.RelayConnection;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A client stream of an intercepted method, answered by the proxy itself: collects the request
 * message on the event loop, runs the interceptor chain there ({@link InterceptedService}: links
 * that block run on workers of their own and hand back to the loop), and writes the response
 * (headers, messages, trailers with the status) back on the event loop. A reset or a closed client
 * connection cancels the chain: its gRPC context, if it has one (which cancels a server-streaming
 * backend call), and every pending backend call.
 */
public final class InterceptedStream {
    private static final Status CLIENT_CANCELLED =
            Status.CANCELLED.withDescription("the client cancelled the call or went away");
    private final RelayConnection conn;
    private final int streamId;
    private final MethodDescriptor<?, ?> method;

    /** The request headers, decoded when first needed (from {@link #block}) if not on arrival. */
    private Http2Headers headers;

    private byte[] block;
    private final InterceptedService service;
    private final int maxMessageSize;
    private ByteBuf body;
    private boolean ended;

    /** The chain started on the one request message, before the client half-closed. */
    private boolean early;

    /**
     * The call's gRPC context (client deadline, cancelled when the client goes away): for
     * server-streaming calls, and unary ones with a link that runs on a worker.
     */
    private volatile Context.CancellableContext context;

    private volatile boolean cancelled;
    private final long arrived = System.nanoTime();
    // unary calls; the relay* fields only on the event loop
    private Object parsed;
    private byte[] parsedBytes;
    private final java.util.concurrent.atomic.AtomicBoolean relayUsed =
            new java.util.concurrent.atomic.AtomicBoolean();
    private CompletableFuture<Object> relayCall;

    /** Backend calls of later proceeds (grpc-java), failed when the client goes away. */
    private final java.util.List<CompletableFuture<Object>> retries = new java.util.ArrayList<>(0);

    private Capture relayAnswer;
    private ByteBuf relayBody;
    private Object relayResponse;
    private Throwable relayFailure;

    public InterceptedStream(
            RelayConnection conn,
            int streamId,
            MethodDescriptor<?, ?> method,
            Http2Headers headers,
            byte[] block,
            InterceptedService service,
            int maxMessageSize) {
        this.conn = conn;
        this.streamId = streamId;
        this.method = method;
        this.headers = headers;
        this.block = block;
        this.service = service;
        this.maxMessageSize = maxMessageSize;
    }

    /**
     * Request bytes (on the event loop). The chain starts as soon as the one request message of the
     * method is all here, without waiting for the client's half-close: grpc-java's client (with its
     * default retry support) often sends that in an empty DATA frame of its own, a write later.
     */
    public void onData(ByteBuf data, boolean endOfStream) {
        if (ended) {
            if (early && data.isReadable() && !cancelled) {
                tooMany();
            }
            return;
        }
        if (body == null) {
            body = Unpooled.buffer(Math.min(data.readableBytes() + 64, maxMessageSize + 5));
        }
        if (body.readableBytes() + data.readableBytes() > maxMessageSize + 5L) {
            ended = true;
            body.release();
            body = null;
            answer(
                    Status.RESOURCE_EXHAUSTED.withDescription(
                            "request of "
                                    + method.getFullMethodName()
                                    + " is larger than "
                                    + maxMessageSize
                                    + " bytes"),
                    null);
            return;
        }
        body.writeBytes(data);
        if (endOfStream) {
            onEnd();
        } else if (method.getType().clientSendsOneMessage() && wholeMessage(body)) {
            early = true;
            onEnd();
        }
    }

    /** Whether {@code b} holds exactly one whole gRPC message (length prefix and bytes). */
    private static boolean wholeMessage(ByteBuf b) {
        int n = b.readableBytes();
        return n >= 5 && n - 5 == b.getUnsignedInt(b.readerIndex() + 1);
    }

    /**
     * The client sent more after the one request message its method takes, while the chain runs on
     * that message: the chain and its backend call are dropped, and the client gets INTERNAL.
     */
    private void tooMany() {
        cancel(); // also keeps later bytes from coming here again
        RelayConnection.Pair p = conn.pair(streamId);
        if (p != null) {
            conn.abandonBackend(p);
            conn.finish(
                    p,
                    Status.INTERNAL.withDescription(
                            "more than one request message for "
                                    + method.getFullMethodName()
                                    + ", which takes one"),
                    null);
        }
    }

    /**
     * The request is complete (on the event loop): the client half-closed, or its one message is
     * all here; decode the request and run the chain.
     */
    public void onEnd() {
        if (ended) {
            return;
        }
        ended = true;
        ByteBuf b = body;
        body = null;
        byte[] message;
        try {
            message = unframe(b);
        } catch (StatusException e) {
            answer(e.getStatus(), null);
            return;
        } finally {
            if (b != null) {
                b.release();
            }
        }
        if (method.getType() == MethodDescriptor.MethodType.UNARY) {
            runUnary(message);
        } else {
            runServerStreaming(message);
        }
    }

    /**
     * The call's gRPC context, made now (on the event loop): the client's deadline, counted from
     * when its headers came, cancelled when the client goes away.
     *
     * @throws StatusException INTERNAL when the headers do not decode or the timeout is malformed
     */
    private Context.CancellableContext makeContext() throws StatusException {
        Deadline deadline = deadline();
        Context.CancellableContext ctx =
                deadline != null
                        ? Context.ROOT.withDeadline(deadline, conn.eventLoop())
                        : Context.ROOT.withCancellation();
        context = ctx;
        return ctx;
    }

    /**
     * A unary call: the chain runs here, on the event loop. Its first backend call goes out on the
     * paired backend connection with the client's headers (so the backend sees the client's
     * deadline) and its answer is collected on the event loop; the rest of the chain runs there
     * when it comes (links that block run on their workers, hooks that may block on hook threads,
     * and hand back). An answer the chain passes back unchanged, success or error, goes to the
     * client as the runtime sent it.
     */
    private void runUnary(byte[] message) {
        Object request = parse(message);
        if (request == null) {
            return;
        }
        if (service.needsContext(method)) {
            try {
                makeContext();
            } catch (StatusException e) {
                answer(e.getStatus(), null);
                return;
            }
        }
        parsed = request;
        parsedBytes = message;
        CompletableFuture<Object> outcome;
        try {
            outcome = service.unary(method, request, new ChainCall(null));
        } catch (RuntimeException e) {
            outcome = CompletableFuture.failedFuture(e);
        }
        outcome.whenComplete((response, failure) -> onLoop(() -> answerWith(response, failure)));
    }

    /** The links' view of this call. */
    private final class ChainCall implements InterceptedService.AsyncCall {
        private Metadata metadata;

        ChainCall(Metadata metadata) {
            this.metadata = metadata;
        }

        @Override
        public synchronized Metadata metadata() {
            if (metadata == null) {
                try {
                    metadata = GrpcWire.metadata(headers());
                } catch (StatusException e) {
                    throw e.getStatus().asRuntimeException();
                }
            }
            return metadata;
        }

        @Override
        public CompletableFuture<Object> backend(Object request) {
            return relayUsed.compareAndSet(false, true) ? relay(request) : again(request);
        }

        @Override
        public io.netty.channel.EventLoop loop() {
            return conn.eventLoop();
        }

        @Override
        public Context.CancellableContext context() {
            return context;
        }

        /** A second backend call (a link retrying): through grpc-java, with the client's deadline. */
        private CompletableFuture<Object> again(Object request) {
            Deadline deadline;
            try {
                deadline = deadline();
            } catch (StatusException e) {
                return CompletableFuture.failedFuture(e);
            }
            CompletableFuture<Object> call =
                    service.callBackend(method, request, metadata(), deadline);
            synchronized (InterceptedStream.this) {
                if (!cancelled) {
                    retries.add(call);
                    return call;
                }
            }
            call.completeExceptionally(CLIENT_CANCELLED.asException());
            return call;
        }
    }

    /** The first backend call, on the relay's paired connection (from any thread). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private CompletableFuture<Object> relay(Object request) {
        CompletableFuture<Object> sent = new InterceptedService.LoopFuture();
        ByteBuf body;
        try {
            body =
                    request == parsed
                            ? Messages.frame(parsedBytes)
                            : Messages.frame(method.getRequestMarshaller(), request);
        } catch (RuntimeException e) {
            // the changed request could not be encoded
            sent.completeExceptionally(
                    Statuses.of(e, "cannot encode the request of " + method.getFullMethodName()));
            return sent;
        }
        onLoop(
                () -> {
                    RelayConnection.Pair p = conn.pair(streamId);
                    if (p == null || cancelled) {
                        body.release();
                        sent.completeExceptionally(CLIENT_CANCELLED.asException());
                        return;
                    }
                    relayCall = sent;
                    // the client's block goes on as it came; headers are only encoded again if it
                    // cannot
                    conn.forwardCaptured(
                            p,
                            p.requestBlock != null ? null : headersOrNull(),
                            body,
                            new Capture(
                                    maxMessageSize + 5, answer -> onBackendAnswer(sent, answer)));
                });
        return sent;
    }

    /**
     * The backend's answer to the relayed call (on the event loop): kept, so that if the chain
     * passes it on unchanged it goes to the client as it came; the chain gets it parsed, or the
     * status it failed with.
     */
    private void onBackendAnswer(CompletableFuture<Object> sent, Capture answer) {
        relayCall = null;
        if (cancelled) {
            answer.release();
            sent.completeExceptionally(CLIENT_CANCELLED.asException());
            return;
        }
        if (answer.failure != null) {
            // the connection to the runtime failed under the call
            relayFailure = answer.failure.asException();
            sent.completeExceptionally(relayFailure);
            return;
        }
        if (answer.tooLarge) {
            answer.release();
            sent.completeExceptionally(
                    Status.RESOURCE_EXHAUSTED
                            .withDescription(
                                    "response of "
                                            + method.getFullMethodName()
                                            + " is larger than "
                                            + maxMessageSize
                                            + " bytes")
                            .asException());
            return;
        }
        relayAnswer = answer;
        relayBody = answer.body;
        answer.body = null;
        Http2Headers end = answer.trailers != null ? answer.trailers : answer.headers;
        Status status = GrpcWire.status(end);
        if (!status.isOk()) {
            relayFailure = new StatusException(status, end == null ? null : GrpcWire.metadata(end));
            sent.completeExceptionally(relayFailure);
            return;
        }
        ByteBuf b = relayBody;
        if (b == null || b.readableBytes() < 5 || b.getByte(b.readerIndex()) != 0) {
            relayFailure =
                    Status.INTERNAL
                            .withDescription(
                                    "the runtime's answer to "
                                            + method.getFullMethodName()
                                            + " has no message the proxy can read")
                            .asException();
            sent.completeExceptionally(relayFailure);
            return;
        }
        try {
            relayResponse =
                    Messages.parse(
                            method.getResponseMarshaller(),
                            b,
                            b.readerIndex() + 5,
                            b.readableBytes() - 5);
        } catch (RuntimeException e) {
            relayFailure =
                    Status.INTERNAL
                            .withDescription(
                                    "cannot parse the runtime's answer to "
                                            + method.getFullMethodName()
                                            + ": "
                                            + e.getMessage())
                            .asException();
            sent.completeExceptionally(relayFailure);
            return;
        }
        sent.complete(relayResponse);
    }

    /**
     * Writes the chain's outcome (on the event loop). What the runtime answered goes back as it
     * came when the chain passed it on unchanged; a changed response keeps the runtime's headers
     * and trailers; a response the chain made itself gets fresh ones.
     */
    // ReferenceEquality: whether the message is that very buffer, not an equal one
    @SuppressWarnings({"unchecked", "rawtypes", "ReferenceEquality"})
    private void answerWith(Object response, Throwable failure) {
        endContext();
        RelayConnection.Pair p = conn.pair(streamId);
        Capture kept = relayAnswer;
        ByteBuf keptBody = relayBody;
        relayAnswer = null;
        relayBody = null;
        if (p == null || cancelled) {
            release(kept, keptBody);
            return;
        }
        if (failure != null) {
            Throwable f = Statuses.unwrap(failure);
            if (f == relayFailure && kept != null) {
                conn.answerCaptured(p, kept, keptBody); // the runtime's error, as it came
                return;
            }
            release(kept, keptBody);
            StatusException se =
                    Statuses.of(f, "interceptor failed on " + method.getFullMethodName());
            conn.finish(p, se.getStatus(), se.getTrailers());
            return;
        }
        if (response == null) {
            release(kept, keptBody);
            conn.finish(
                    p,
                    Status.INTERNAL.withDescription(
                            "the interceptor chain of "
                                    + method.getFullMethodName()
                                    + " completed without a response"),
                    null);
            return;
        }
        ByteBuf message;
        try {
            message =
                    response == relayResponse && keptBody != null
                            ? keptBody
                            : Messages.frame(method.getResponseMarshaller(), response);
        } catch (RuntimeException e) {
            release(kept, keptBody);
            conn.finish(
                    p,
                    Status.INTERNAL.withDescription(
                            "cannot encode the response of "
                                    + method.getFullMethodName()
                                    + ": "
                                    + e),
                    null);
            return;
        }
        if (message != keptBody && keptBody != null) {
            keptBody.release();
        }
        if (kept != null && relayFailure == null) {
            conn.answerCaptured(p, kept, message); // the runtime's headers and trailers
        } else {
            release(kept, null);
            conn.sendMessage(p, message);
            conn.finish(p, Status.OK, null);
        }
    }

    /** The call is answered: its context (if any) is cancelled, as grpc-java's server does. */
    private void endContext() {
        Context.CancellableContext ctx = context;
        if (ctx != null) {
            ctx.cancel(null);
        }
    }

    private static void release(Capture answer, ByteBuf body) {
        if (answer != null) {
            answer.release();
        }
        if (body != null) {
            body.release();
        }
    }

    /** Runs {@code task} on the event loop: now if this is it, else as a task there. */
    private void onLoop(Runnable task) {
        if (conn.eventLoop().inEventLoop()) {
            task.run();
        } else {
            conn.execute(task);
        }
    }

    /**
     * The request headers, decoded now if they were not on arrival (any thread).
     *
     * @throws StatusException INTERNAL when the block does not decode
     */
    private synchronized Http2Headers headers() throws StatusException {
        if (headers == null) {
            try {
                headers = HeaderBlocks.decodeLater(block, RelayConnection.MAX_HEADER_LIST);
            } catch (io.netty.handler.codec.http2.Http2Exception e) {
                throw Status.INTERNAL
                        .withDescription(
                                "cannot decode the request headers of "
                                        + method.getFullMethodName()
                                        + ": "
                                        + e.getMessage())
                        .asException();
            }
            block = null;
        }
        return headers;
    }

    /**
     * The client's deadline, its {@code grpc-timeout} counted from when the headers came; null
     * when it set none.
     *
     * @throws StatusException INTERNAL when the headers do not decode or the timeout is malformed
     */
    private Deadline deadline() throws StatusException {
        long timeout;
        try {
            timeout = GrpcWire.timeoutNanos(headers().get(GrpcWire.GRPC_TIMEOUT));
        } catch (IllegalArgumentException e) {
            throw Status.INTERNAL.withDescription(e.getMessage()).asException();
        }
        return timeout < 0
                ? null
                : Deadline.after(timeout - (System.nanoTime() - arrived), TimeUnit.NANOSECONDS);
    }

    private Http2Headers headersOrNull() {
        try {
            return headers();
        } catch (StatusException e) {
            return null;
        }
    }

    /** The client reset the stream or went away (on the event loop). */
    public void cancel() {
        cancelled = true;
        ended = true;
        if (body != null) {
            body.release();
            body = null;
        }
        Context.CancellableContext ctx = context;
        if (ctx != null) {
            ctx.cancel(CLIENT_CANCELLED.asException());
        }
        CompletableFuture<Object> pending = relayCall;
        relayCall = null;
        if (pending != null) {
            pending.completeExceptionally(CLIENT_CANCELLED.asException());
        }
        // an answer kept for a chain that has not finished (it may never)
        release(relayAnswer, relayBody);
        relayAnswer = null;
        relayBody = null;
        List<CompletableFuture<Object>> later;
        synchronized (this) {
            later = List.copyOf(retries);
            retries.clear();
        }
        for (CompletableFuture<Object> f : later) {
            f.completeExceptionally(CLIENT_CANCELLED.asException()); // cancels its grpc-java call
        }
    }

    private byte[] unframe(ByteBuf b) throws StatusException {
        if (b == null || b.readableBytes() < 5) {
            throw Status.INTERNAL
                    .withDescription("no request message for " + method.getFullMethodName())
                    .asException();
        }
        int flags = b.readUnsignedByte();
        long length = b.readUnsignedInt();
        if (flags != 0) {
            throw Status.UNIMPLEMENTED
                    .withDescription(
                            "compressed requests are not accepted for "
                                    + method.getFullMethodName()
                                    + " (the proxy decodes it for its interceptors)")
                    .asException();
        }
        if (length != b.readableBytes()) {
            throw Status.INTERNAL
                    .withDescription(
                            "expected one request message for "
                                    + method.getFullMethodName()
                                    + " of "
                                    + length
                                    + " bytes, got "
                                    + b.readableBytes())
                    .asException();
        }
        return ByteBufUtil.getBytes(b);
    }

    /** The request message, or null once the call was answered with INTERNAL (unparsable). */
    private Object parse(byte[] message) {
        try {
            return Messages.parse(method.getRequestMarshaller(), message);
        } catch (RuntimeException e) {
            answer(
                    Status.INTERNAL.withDescription(
                            "cannot parse the request of "
                                    + method.getFullMethodName()
                                    + ": "
                                    + e.getMessage()),
                    null);
            return null;
        }
    }

    /**
     * A server-streaming call: the chain runs here, on the event loop, in the call's context; its
     * backend call goes through grpc-java in that context, and the responses are written back on
     * the event loop in the order they come.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void runServerStreaming(byte[] message) {
        MethodDescriptor m = method;
        Object request = parse(message);
        if (request == null) {
            return;
        }
        Context.CancellableContext ctx;
        Metadata md;
        try {
            md = GrpcWire.metadata(headers());
            ctx = makeContext();
        } catch (StatusException e) {
            answer(e.getStatus(), null);
            return;
        }
        if (cancelled) {
            ctx.cancel(CLIENT_CANCELLED.asException());
            return;
        }
        service.serverStreaming(
                m,
                request,
                md,
                ctx,
                conn.eventLoop(),
                new StreamObserver<Object>() {
                    @Override
                    public void onNext(Object value) {
                        send(m, value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        Status s = Status.fromThrowable(t);
                        answer(s, Status.trailersFromThrowable(t));
                    }

                    @Override
                    public void onCompleted() {
                        answer(Status.OK, null);
                    }
                });
    }

    /** Writes a message of a server-streaming call on the event loop. */
    @SuppressWarnings("rawtypes")
    private void send(MethodDescriptor m, Object response) {
        ByteBuf framed = Messages.frame(m.getResponseMarshaller(), response);
        conn.execute(
                () -> {
                    RelayConnection.Pair p = conn.pair(streamId);
                    if (p == null || cancelled) {
                        framed.release();
                        return;
                    }
                    conn.sendMessage(p, framed);
                });
    }

    /**
     * Ends the stream with {@code status}, from any thread. Always a task on the event loop, even
     * from the loop itself: queued behind the messages {@link #send} queued before it.
     */
    private void answer(Status status, Metadata trailers) {
        conn.execute(
                () -> {
                    endContext();
                    RelayConnection.Pair p = conn.pair(streamId);
                    if (p != null && !cancelled) {
                        conn.finish(p, status, trailers);
                    }
                });
    }
}
