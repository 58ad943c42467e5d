package io.cri4j.nri.internal.ttrpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.cri4j.nri.internal.proto.KeyValue;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.proto.Response;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ttrpc connection (containerd/ttrpc {@code PROTOCOL.md}), unary calls only, both roles: it
 * calls the peer ({@link #call}, odd stream ids counting up from 1) and, when it has a
 * {@link Service}, serves the peer's requests. Requests carry a {@code ttrpc.Request} (service,
 * method, payload, {@code timeout_nano}, metadata), answers a {@code ttrpc.Response} whose status
 * is a {@code google.rpc.Status}, left out when the call succeeded (as Go's ttrpc server does).
 * Messages are at most 4 MiB; longer ones are refused with {@code RESOURCE_EXHAUSTED} in both
 * directions.
 *
 * <p>All state lives on {@code loop}: {@link #receive} and {@link #close} run there; {@link #call}
 * may be called from any thread. A {@link Service} must not block: it answers with a stage.
 */
public final class TtrpcPeer {

    private static final Logger LOG = LoggerFactory.getLogger(TtrpcPeer.class);

    /** Where this peer's frames go, e.g. one connection of NRI's multiplexer; runs on the loop. */
    public interface Sink {
        /** Writes one encoded frame. */
        void send(byte[] frame);
    }

    /** Serves requests; called on the loop, must not block. */
    public interface Service {
        /** Answers with the response payload, or fails (a {@link StatusRuntimeException} keeps its status). */
        CompletionStage<byte[]> handle(Call call);
    }

    /**
     * A request received.
     *
     * @param streamId its stream
     * @param service the service name, e.g. {@code nri.pkg.api.v1alpha1.Plugin}
     * @param method the method name, e.g. {@code CreateContainer}
     * @param payload the request message
     * @param timeoutNanos the caller's timeout ({@code timeout_nano}), 0 when it set none
     * @param receivedNanos {@link System#nanoTime()} when the request arrived
     * @param metadata the caller's metadata
     */
    public record Call(
            int streamId,
            String service,
            String method,
            byte[] payload,
            long timeoutNanos,
            long receivedNanos,
            List<KeyValue> metadata) {

        /** {@link System#nanoTime()} by which the caller gives up, or empty without a timeout. */
        public java.util.OptionalLong deadlineNanos() {
            return timeoutNanos > 0
                    ? java.util.OptionalLong.of(receivedNanos + timeoutNanos)
                    : java.util.OptionalLong.empty();
        }

        /** {@code service/method}, for logs. */
        public String fullMethod() {
            return service + "/" + method;
        }
    }

    private final String name;
    private final EventExecutor loop;
    private final Sink sink;
    private final Service service;
    private final TtrpcFrameParser parser;
    private final Map<Integer, Pending> pending = new HashMap<>();
    private int nextStreamId = 1;
    private long lastRemoteStream;
    private int activeServerCalls;
    private final List<Runnable> whenIdle = new ArrayList<>();
    private StatusRuntimeException closed;

    private record Pending(
            CompletableFuture<byte[]> result, String method, ScheduledFuture<?> timer) {}

    /**
     * @param name for logs, e.g. {@code "plugin service (mux connection 1)"}
     * @param loop the event loop all state lives on
     * @param sink where encoded frames go
     * @param service serves the peer's requests, or {@code null} to answer them UNIMPLEMENTED
     */
    public TtrpcPeer(String name, EventExecutor loop, Sink sink, Service service) {
        this.name = name;
        this.loop = loop;
        this.sink = sink;
        this.service = service;
        this.parser =
                new TtrpcFrameParser(
                        new TtrpcFrameParser.Listener() {
                            @Override
                            public void frame(TtrpcFrame frame) {
                                onFrame(frame);
                            }

                            @Override
                            public void oversized(int streamId, int type, long length) {
                                onOversized(streamId, type, length);
                            }
                        });
    }

    /**
     * Bytes received from the peer; on the loop.
     *
     * @throws NriProtocolException when they are not ttrpc (the connection must close)
     */
    public void receive(ByteBuf bytes) {
        parser.feed(bytes);
    }

    /** Where the parser stands when the stream ends; see {@link TtrpcFrameParser#partial()}. */
    public String partialFrame() {
        return parser.partial();
    }

    /**
     * Calls {@code service/method} on the peer. Never blocks.
     *
     * @return the response payload; fails with the peer's status, with {@code DEADLINE_EXCEEDED}
     *     after {@code timeout}, with {@code RESOURCE_EXHAUSTED} for a request over 4 MiB and with
     *     {@code UNAVAILABLE} when the connection is or gets closed
     */
    public CompletableFuture<byte[]> call(
            String service, String method, byte[] payload, Duration timeout) {
        return call(service, method, payload, timeout, List.of());
    }

    /** {@link #call(String, String, byte[], Duration)} with request metadata. */
    public CompletableFuture<byte[]> call(
            String service,
            String method,
            byte[] payload,
            Duration timeout,
            List<KeyValue> metadata) {
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        try {
            onLoop(() -> startCall(service, method, payload, timeout, metadata, result));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            result.completeExceptionally(
                    TtrpcStatus.error(Status.Code.UNAVAILABLE, name + ": closed"));
        }
        return result;
    }

    private void startCall(
            String svc,
            String method,
            byte[] payload,
            Duration timeout,
            List<KeyValue> metadata,
            CompletableFuture<byte[]> result) {
        if (result.isDone()) {
            return;
        }
        if (closed != null) {
            result.completeExceptionally(closed);
            return;
        }
        byte[] data =
                Request.newBuilder()
                        .setService(svc)
                        .setMethod(method)
                        .setPayload(ByteString.copyFrom(payload))
                        .setTimeoutNano(timeout.toNanos())
                        .addAllMetadata(metadata)
                        .build()
                        .toByteArray();
        byte[] frame;
        try {
            TtrpcFrame.checkLength(data.length);
            frame = new TtrpcFrame(nextStreamId, TtrpcFrame.REQUEST, 0, data).encode();
        } catch (StatusRuntimeException e) {
            result.completeExceptionally(
                    TtrpcStatus.error(
                            Status.Code.RESOURCE_EXHAUSTED,
                            "request "
                                    + svc
                                    + "/"
                                    + method
                                    + ": "
                                    + e.getStatus().getDescription()));
            return;
        }
        int id = nextStreamId;
        nextStreamId += 2;
        String full = svc + "/" + method;
        ScheduledFuture<?> timer =
                loop.schedule(
                        () -> {
                            if (pending.remove(id) != null) {
                                result.completeExceptionally(
                                        TtrpcStatus.error(
                                                Status.Code.DEADLINE_EXCEEDED,
                                                name
                                                        + ": no answer to "
                                                        + full
                                                        + " within "
                                                        + timeout.toMillis()
                                                        + " ms"));
                            }
                        },
                        timeout.toNanos(),
                        TimeUnit.NANOSECONDS);
        pending.put(id, new Pending(result, full, timer));
        result.whenComplete(
                (v, t) ->
                        onLoop(
                                () -> {
                                    Pending p = pending.remove(id);
                                    if (p != null) {
                                        p.timer.cancel(false);
                                    }
                                }));
        sink.send(frame);
    }

    /** Calls {@code r} once no request of the peer is being served (at once if none is). On the loop. */
    public void whenIdle(Runnable r) {
        if (activeServerCalls == 0) {
            r.run();
        } else {
            whenIdle.add(r);
        }
    }

    /** Requests of the peer being served right now. On the loop. */
    public int activeServerCalls() {
        return activeServerCalls;
    }

    /**
     * The connection is gone: pending calls fail with {@code cause} (UNAVAILABLE), answers still
     * to come are dropped. Idempotent; on the loop.
     */
    public void close(String cause) {
        if (closed != null) {
            return;
        }
        closed = TtrpcStatus.error(Status.Code.UNAVAILABLE, name + ": " + cause);
        List<Pending> all = new ArrayList<>(pending.values());
        pending.clear();
        for (Pending p : all) {
            p.timer.cancel(false);
            p.result.completeExceptionally(closed);
        }
    }

    private void onFrame(TtrpcFrame f) {
        switch (f.type()) {
            case TtrpcFrame.REQUEST -> onRequest(f);
            case TtrpcFrame.RESPONSE -> onResponse(f);
            case TtrpcFrame.DATA ->
                    sendStatus(
                            f.streamId(),
                            Status.Code.INVALID_ARGUMENT,
                            "StreamID is no longer active");
            default -> LOG.debug("{}: ignoring {}", name, f);
        }
    }

    private void onRequest(TtrpcFrame f) {
        long id = Integer.toUnsignedLong(f.streamId());
        if (id % 2 != 1) {
            sendStatus(
                    f.streamId(),
                    Status.Code.INVALID_ARGUMENT,
                    "StreamID must be odd for client initiated streams");
            return;
        }
        if (id <= lastRemoteStream) {
            sendStatus(
                    f.streamId(),
                    Status.Code.INVALID_ARGUMENT,
                    "StreamID cannot be re-used and must increment");
            return;
        }
        lastRemoteStream = id;
        Request req;
        try {
            req = Request.parseFrom(f.data());
        } catch (InvalidProtocolBufferException e) {
            sendStatus(
                    f.streamId(),
                    Status.Code.INVALID_ARGUMENT,
                    "unmarshal request error: " + e.getMessage());
            return;
        }
        if (service == null) {
            sendStatus(f.streamId(), Status.Code.UNIMPLEMENTED, "service " + req.getService());
            return;
        }
        Call call =
                new Call(
                        f.streamId(),
                        req.getService(),
                        req.getMethod(),
                        req.getPayload().toByteArray(),
                        req.getTimeoutNano(),
                        System.nanoTime(),
                        req.getMetadataList());
        activeServerCalls++;
        CompletionStage<byte[]> answer;
        try {
            answer = service.handle(call);
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete(
                (payload, failure) ->
                        onLoop(
                                () -> {
                                    activeServerCalls--;
                                    respond(call, payload, failure);
                                    if (activeServerCalls == 0 && !whenIdle.isEmpty()) {
                                        List<Runnable> run = new ArrayList<>(whenIdle);
                                        whenIdle.clear();
                                        run.forEach(Runnable::run);
                                    }
                                }));
    }

    private void respond(Call call, byte[] payload, Throwable failure) {
        if (closed != null) {
            LOG.debug("{}: connection closed, dropping the answer to {}", name, call.fullMethod());
            return;
        }
        Response.Builder r = Response.newBuilder();
        if (failure != null) {
            r.setStatus(TtrpcStatus.toProto(failure));
        } else {
            r.setPayload(ByteString.copyFrom(payload));
        }
        byte[] data = r.build().toByteArray();
        if (data.length > TtrpcFrame.MAX_DATA_LENGTH) {
            String why =
                    "the answer to "
                            + call.fullMethod()
                            + " has "
                            + data.length
                            + " bytes, more than ttrpc's maximum message size of "
                            + TtrpcFrame.MAX_DATA_LENGTH;
            LOG.warn("{}: {}", name, why);
            data =
                    Response.newBuilder()
                            .setStatus(
                                    io.cri4j.nri.internal.proto.Status.newBuilder()
                                            .setCode(Status.Code.RESOURCE_EXHAUSTED.value())
                                            .setMessage(why))
                            .build()
                            .toByteArray();
        }
        sink.send(new TtrpcFrame(call.streamId(), TtrpcFrame.RESPONSE, 0, data).encode());
    }

    private void onResponse(TtrpcFrame f) {
        Pending p = pending.remove(f.streamId());
        if (p == null) {
            LOG.debug(
                    "{}: answer on stream {} that no call waits for (late or unknown)",
                    name,
                    Integer.toUnsignedString(f.streamId()));
            return;
        }
        p.timer.cancel(false);
        Response r;
        try {
            r = Response.parseFrom(f.data());
        } catch (InvalidProtocolBufferException e) {
            p.result.completeExceptionally(
                    TtrpcStatus.error(
                            Status.Code.INTERNAL,
                            name + ": unreadable answer to " + p.method + ": " + e.getMessage()));
            return;
        }
        if (r.hasStatus() && r.getStatus().getCode() != 0) {
            p.result.completeExceptionally(TtrpcStatus.fromProto(r.getStatus()));
        } else {
            p.result.complete(r.getPayload().toByteArray());
        }
    }

    private void onOversized(int streamId, int type, long length) {
        String why =
                "message length "
                        + length
                        + " exceed maximum message size of "
                        + TtrpcFrame.MAX_DATA_LENGTH;
        LOG.warn(
                "{}: skipped a {} frame on stream {}: {}",
                name,
                TtrpcFrame.typeName(type),
                Integer.toUnsignedString(streamId),
                why);
        if (type == TtrpcFrame.RESPONSE) {
            Pending p = pending.remove(streamId);
            if (p != null) {
                p.timer.cancel(false);
                p.result.completeExceptionally(
                        TtrpcStatus.error(
                                Status.Code.RESOURCE_EXHAUSTED,
                                name + ": answer to " + p.method + ": " + why));
            }
        } else {
            sendStatus(streamId, Status.Code.RESOURCE_EXHAUSTED, why);
        }
    }

    private void sendStatus(int streamId, Status.Code code, String message) {
        LOG.debug(
                "{}: answering stream {} with {}: {}",
                name,
                Integer.toUnsignedString(streamId),
                code,
                message);
        byte[] data =
                Response.newBuilder()
                        .setStatus(
                                io.cri4j.nri.internal.proto.Status.newBuilder()
                                        .setCode(code.value())
                                        .setMessage(message))
                        .build()
                        .toByteArray();
        sink.send(new TtrpcFrame(streamId, TtrpcFrame.RESPONSE, 0, data).encode());
    }

    private void onLoop(Runnable r) {
        if (loop.inEventLoop()) {
            r.run();
        } else {
            loop.execute(r);
        }
    }

    @Override
    public String toString() {
        return "TtrpcPeer[" + name + "]";
    }
}
