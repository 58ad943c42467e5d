package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.grpc.MethodDescriptor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An intercepted call's chain starts once its one request message is all in, not at the
 * client's half-close, which grpc-java's client often sends a write later; a client that then
 * sends a second message gets INTERNAL, and the chain's answer never follows.
 */
class EarlyDispatchIT extends ProxyTestBase {
    private static final String CREATE_PATH = "/runtime.v1.RuntimeService/CreateContainer";

    private EventLoopGroup group;
    private StreamsClient raw;
    private Channel channel;

    @BeforeEach
    void group() {
        group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    }

    @AfterEach
    void closeGroup() throws InterruptedException {
        if (channel != null) {
            channel.close().sync();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    @Test
    void theChainRunsOnTheOneMessageBeforeTheClientHalfCloses() throws Exception {
        AtomicInteger ran = new AtomicInteger();
        startProxy(CriProxy.builder().addInterceptor(annotating(ran, null, null)));
        connect();
        CompletableFuture<String> first = raw.open(3, message("pod-a"), false);
        // answered while the client has not half-closed
        assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("0");
        assertThat(ran).hasValue(1);
        String id = CreateContainerResponse.parseFrom(unframe(raw.body(3))).getContainerId();
        assertThat(backend.containers.get(id).getAnnotationsMap()).containsEntry("stamp", "early");

        raw.send(3, Unpooled.EMPTY_BUFFER, true); // the half-close comes late: nothing follows it
        assertThat(raw.open(5, message("pod-b"), true).get(10, TimeUnit.SECONDS)).isEqualTo("0");
        assertThat(raw.ends(3)).as("answers on stream 3").isEqualTo(1);
        assertThat(raw.trouble).isEmpty();
        assertThat(ran).hasValue(2);
    }

    @Test
    void aSecondMessageForAMethodThatTakesOneFailsTheCallAndTheChainsAnswerNeverFollows()
            throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<Void> release = new CompletableFuture<>();
        startProxy(
                CriProxy.builder()
                        .addInterceptor(annotating(new AtomicInteger(), entered, release)));
        connect();
        CompletableFuture<String> call = raw.open(3, message("pod-a"), false);
        assertThat(entered.await(10, TimeUnit.SECONDS)).as("the chain started").isTrue();
        raw.send(3, message("pod-again"), true);
        assertThat(call.get(10, TimeUnit.SECONDS))
                .startsWith("13 ")
                .contains(
                        "more than one request message for runtime.v1.RuntimeService/CreateContainer");

        release.complete(null); // the held chain goes on now: its answer must go nowhere
        assertThat(raw.open(5, message("pod-b"), true).get(10, TimeUnit.SECONDS)).isEqualTo("0");
        assertThat(raw.ends(3)).as("answers on stream 3").isEqualTo(1);
        assertThat(raw.trouble).isEmpty();
        assertThat(backend.received(CreateContainerRequest.class))
                .extracting(CreateContainerRequest::getPodSandboxId)
                .doesNotContain("pod-again");
    }

    private void connect() throws InterruptedException {
        raw = new StreamsClient();
        channel = raw.connect(group, dir.resolve("proxy.sock"));
    }

    /**
     * Annotates every CreateContainer; when {@code entered} is given, counts it down and waits for
     * {@code release} before it proceeds.
     */
    private static AsyncCriInterceptor annotating(
            AtomicInteger ran, CountDownLatch entered, CompletableFuture<Void> release) {
        return new AsyncCriInterceptor() {
            @Override
            public boolean intercepts(MethodDescriptor<?, ?> m) {
                return m.getBareMethodName().equals("CreateContainer");
            }

            @Override
            @SuppressWarnings("unchecked")
            public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
                ran.incrementAndGet();
                CreateContainerRequest r = (CreateContainerRequest) chain.request();
                Q changed =
                        (Q)
                                r.toBuilder()
                                        .setConfig(
                                                r.getConfig().toBuilder()
                                                        .putAnnotations("stamp", "early"))
                                        .build();
                if (entered == null) {
                    return chain.proceed(changed);
                }
                entered.countDown();
                return release.thenCompose(v -> chain.proceed(changed));
            }
        };
    }

    private static ByteBuf message(String pod) {
        byte[] m = CreateContainerRequest.newBuilder().setPodSandboxId(pod).build().toByteArray();
        return Unpooled.buffer().writeByte(0).writeInt(m.length).writeBytes(m);
    }

    private static byte[] unframe(byte[] framed) {
        return java.util.Arrays.copyOfRange(framed, 5, framed.length);
    }

    /** A bare client of several streams: their statuses, bodies, and any reset or GOAWAY. */
    private static final class StreamsClient extends BareClient {
        private final Map<Integer, CompletableFuture<String>> statuses = new ConcurrentHashMap<>();
        private final Map<Integer, ByteArrayOutputStream> bodies = new ConcurrentHashMap<>();
        private final Map<Integer, AtomicInteger> ends = new ConcurrentHashMap<>();
        final List<String> trouble = new CopyOnWriteArrayList<>();

        StreamsClient() {
            super(new Http2Settings().pushEnabled(false));
        }

        /** Opens stream {@code id} with CreateContainer's headers and {@code message}. */
        CompletableFuture<String> open(int id, ByteBuf message, boolean endOfStream)
                throws InterruptedException {
            CompletableFuture<String> status = new CompletableFuture<>();
            statuses.put(id, status);
            bodies.put(id, new ByteArrayOutputStream());
            ends.put(id, new AtomicInteger());
            Http2Headers headers =
                    new DefaultHttp2Headers()
                            .method("POST")
                            .scheme("http")
                            .authority("localhost")
                            .path(CREATE_PATH)
                            .set("content-type", "application/grpc")
                            .set("te", "trailers");
            ctx.executor()
                    .submit(
                            () -> {
                                h.encoder()
                                        .writeHeaders(ctx, id, headers, 0, false, ctx.newPromise());
                                h.encoder()
                                        .writeData(
                                                ctx, id, message, 0, endOfStream, ctx.newPromise());
                                h.flush(ctx);
                            })
                    .sync();
            return status;
        }

        void send(int id, ByteBuf data, boolean endOfStream) throws InterruptedException {
            ctx.executor()
                    .submit(
                            () -> {
                                h.encoder()
                                        .writeData(ctx, id, data, 0, endOfStream, ctx.newPromise());
                                h.flush(ctx);
                            })
                    .sync();
        }

        byte[] body(int id) {
            return bodies.get(id).toByteArray();
        }

        int ends(int id) {
            return ends.get(id).get();
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int padding,
                boolean endOfStream) {
            if (endOfStream) {
                ends.get(streamId).incrementAndGet();
                CharSequence s = headers.get("grpc-status");
                CharSequence m = headers.get("grpc-message");
                statuses.get(streamId)
                        .complete(s == null ? "none" : m == null ? s.toString() : s + " " + m);
            }
        }

        @Override
        public int onDataRead(
                ChannelHandlerContext c,
                int streamId,
                ByteBuf data,
                int padding,
                boolean endOfStream) {
            int n = data.readableBytes();
            byte[] b = new byte[n];
            data.readBytes(b);
            bodies.get(streamId).writeBytes(b);
            return n + padding;
        }

        @Override
        public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
            trouble.add("RST_STREAM " + streamId + " " + errorCode);
        }

        @Override
        public void onGoAwayRead(
                ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
            trouble.add("GOAWAY " + errorCode);
        }
    }
}
