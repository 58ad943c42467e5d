package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.cri.CriInterceptor;
import io.grpc.CallOptions;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The proxy's HTTP/2 relay seen from the wire: what kubelet's gRPC client does (many calls,
 * resets, large messages in both directions, a deadline, a cancellation) keeps its connection
 * and gets the runtime's answer intact.
 */
class RelayIT extends ProxyTestBase {
    private static final String VERSION_PATH = "/runtime.v1.RuntimeService/Version";

    @Test
    void streamsTheClientResetsNeverCostItsConnection() throws Exception {
        startProxy(CriProxy.builder());
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        RawClient raw = new RawClient();
        try {
            Channel ch = raw.connect(group, dir.resolve("proxy.sock"));
            // far more than Netty's default guard of 200 resets in 30 s
            for (int i = 0; i < 500; i++) {
                int id = 3 + 2 * i;
                ch.eventLoop()
                        .submit(
                                () -> {
                                    raw.h
                                            .encoder()
                                            .writeHeaders(
                                                    raw.ctx,
                                                    id,
                                                    versionHeaders(),
                                                    0,
                                                    false,
                                                    raw.ctx.newPromise());
                                    raw.h
                                            .encoder()
                                            .writeData(
                                                    raw.ctx,
                                                    id,
                                                    versionMessage(),
                                                    0,
                                                    false,
                                                    raw.ctx.newPromise());
                                    raw.h.resetStream(
                                            raw.ctx,
                                            id,
                                            Http2Error.CANCEL.code(),
                                            raw.ctx.newPromise());
                                    raw.h.flush(raw.ctx);
                                })
                        .sync();
            }
            int last = 3 + 2 * 500;
            ch.eventLoop()
                    .submit(
                            () -> {
                                raw.h
                                        .encoder()
                                        .writeHeaders(
                                                raw.ctx,
                                                last,
                                                versionHeaders(),
                                                0,
                                                false,
                                                raw.ctx.newPromise());
                                raw.h
                                        .encoder()
                                        .writeData(
                                                raw.ctx,
                                                last,
                                                versionMessage(),
                                                0,
                                                true,
                                                raw.ctx.newPromise());
                                raw.h.flush(raw.ctx);
                            })
                    .sync();
            assertThat(raw.status.get(10, TimeUnit.SECONDS))
                    .as("grpc-status of the last call")
                    .isEqualTo("0");
            assertThat(raw.goAway.get()).as("GOAWAY from the proxy").isNull();
            assertThat(raw.unexpected).as("answers on streams the client reset").isEmpty();
            ch.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void largeMessagesPassBothWaysWithFlowControl() throws Exception {
        startProxy(CriProxy.builder());
        MethodDescriptor<byte[], byte[]> echo =
                MethodDescriptor.<byte[], byte[]>newBuilder()
                        .setType(MethodDescriptor.MethodType.UNARY)
                        .setFullMethodName("test.Echo/Echo")
                        .setRequestMarshaller(TestBackend.BYTES)
                        .setResponseMarshaller(TestBackend.BYTES)
                        .build();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<?>[] calls = new Future<?>[4];
            for (int c = 0; c < calls.length; c++) {
                int seed = c;
                calls[c] =
                        pool.submit(
                                () -> {
                                    // several times the 1 MiB windows of both legs
                                    byte[] in = new byte[5 * 1024 * 1024 + seed];
                                    new Random(seed).nextBytes(in);
                                    byte[] out =
                                            ClientCalls.blockingUnaryCall(
                                                    client,
                                                    echo,
                                                    CallOptions.DEFAULT.withDeadlineAfter(
                                                            60, TimeUnit.SECONDS),
                                                    in);
                                    byte[] expected = new byte[in.length];
                                    for (int i = 0; i < in.length; i++) {
                                        expected[i] = in[in.length - 1 - i];
                                    }
                                    assertThat(Arrays.equals(out, expected))
                                            .as("echo %d intact", seed)
                                            .isTrue();
                                    return null;
                                });
            }
            for (Future<?> f : calls) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aClientWithATinyWindowGetsAllOfALargeAnswerThenItsTrailers() throws Exception {
        startProxy(CriProxy.builder());
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        // a 4 KiB stream window and the default 64 KiB connection window: the relay must split the
        // backend's frames, wait for window updates, and keep the trailers behind the data
        CollectingClient c = new CollectingClient(4096);
        try {
            Channel ch = c.connect(group, dir.resolve("proxy.sock"));
            byte[] in = new byte[300 * 1024];
            new Random(7).nextBytes(in);
            ch.eventLoop()
                    .submit(
                            () -> {
                                c.h.encoder()
                                        .writeHeaders(
                                                c.ctx,
                                                3,
                                                new DefaultHttp2Headers()
                                                        .method("POST")
                                                        .scheme("http")
                                                        .authority("localhost")
                                                        .path("/test.Echo/Echo")
                                                        .set("content-type", "application/grpc")
                                                        .set("te", "trailers"),
                                                0,
                                                false,
                                                c.ctx.newPromise());
                                c.h.encoder()
                                        .writeData(
                                                c.ctx,
                                                3,
                                                Unpooled.buffer()
                                                        .writeByte(0)
                                                        .writeInt(in.length)
                                                        .writeBytes(in),
                                                0,
                                                true,
                                                c.ctx.newPromise());
                                c.h.flush(c.ctx);
                            })
                    .sync();
            assertThat(c.status.get(30, TimeUnit.SECONDS)).as("grpc-status").isEqualTo("0");
            byte[] out = c.body.toByteArray();
            assertThat(out.length).isEqualTo(5 + in.length);
            for (int i = 0; i < in.length; i++) {
                if (out[5 + i] != in[in.length - 1 - i]) {
                    throw new AssertionError("echo differs at byte " + i);
                }
            }
            assertThat(c.afterEnd).as("frames after the trailers").isEmpty();
            ch.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aClientThatDoesNotSpeakHttp2GetsAGoAwaySayingSoAndTheProxyServesOn() throws Exception {
        startProxy(CriProxy.builder());
        byte[] got;
        try (java.nio.channels.SocketChannel sc =
                java.nio.channels.SocketChannel.open(
                        java.net.UnixDomainSocketAddress.of(dir.resolve("proxy.sock")))) {
            sc.write(
                    java.nio.ByteBuffer.wrap(
                            "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4096);
            while (sc.read(b) >= 0) { // until the proxy closes the connection
                all.write(b.array(), 0, b.position());
                b.clear();
            }
            got = all.toByteArray();
        }
        // the proxy's SETTINGS, then GOAWAY (type 7) with PROTOCOL_ERROR (1) and the reason
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(got);
        int settingsLength = (in.get() & 0xff) << 16 | (in.get() & 0xff) << 8 | (in.get() & 0xff);
        assertThat(in.get()).as("first frame type").isEqualTo((byte) 4);
        in.position(9 + settingsLength);
        while (in.remaining() >= 9) {
            int length = (in.get() & 0xff) << 16 | (in.get() & 0xff) << 8 | (in.get() & 0xff);
            byte type = in.get();
            in.position(in.position() + 5);
            if (type == 7) {
                in.getInt(); // last stream id
                assertThat(in.getInt()).as("GOAWAY error code").isEqualTo(1);
                byte[] debug = new byte[length - 8];
                in.get(debug);
                assertThat(new String(debug, java.nio.charset.StandardCharsets.UTF_8))
                        .contains("not an HTTP/2 connection preface");
                oneCallOnItsOwnConnection();
                return;
            }
            in.position(in.position() + length);
        }
        throw new AssertionError("no GOAWAY in " + got.length + " bytes");
    }

    @Test
    void interceptedCallEndsWithTheClientsDeadlineAndItsCancellationReachesTheChain()
            throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<Throwable> chainSawCancel = new CompletableFuture<>();
        CriInterceptor blocking =
                blocking(
                        "CreateContainer",
                        chain -> {
                            Context ctx = Context.current();
                            ctx.addListener(
                                    c -> chainSawCancel.complete(c.cancellationCause()),
                                    Runnable::run);
                            entered.countDown();
                            try {
                                new CountDownLatch(1).await(30, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            throw Status.ABORTED.withDescription("never answered").asException();
                        });
        startProxy(CriProxy.builder().addInterceptor(blocking));
        long t0 = System.nanoTime();
        assertThatThrownBy(
                        () ->
                                RuntimeServiceGrpc.newBlockingStub(client)
                                        .withDeadlineAfter(300, TimeUnit.MILLISECONDS)
                                        .createContainer(
                                                CreateContainerRequest.newBuilder()
                                                        .setPodSandboxId("p")
                                                        .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.DEADLINE_EXCEEDED));
        assertThat(entered.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(chainSawCancel.get(10, TimeUnit.SECONDS))
                .as("cancellation cause seen by the chain")
                .isNotNull();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(10_000);
        // the connection is fine afterwards
        CreateContainerResponse ok =
                RuntimeServiceGrpc.newBlockingStub(proxyChannelWithoutHook())
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .createContainer(
                                CreateContainerRequest.newBuilder().setPodSandboxId("p").build());
        assertThat(ok.getContainerId()).isNotEmpty();
    }

    /** A second proxy without interceptors on the same backend. */
    private ManagedChannel proxyChannelWithoutHook() throws Exception {
        CriProxy plain =
                CriProxy.builder()
                        .listen(dir.resolve("plain.sock"))
                        .backend(backend.socket)
                        .build()
                        .start();
        ManagedChannel ch = CriChannels.newChannel(plain.listenEndpoint());
        AutoCloseable close =
                () -> {
                    ch.shutdownNow();
                    plain.close();
                };
        closers.add(close);
        return ch;
    }

    private final java.util.List<AutoCloseable> closers = new java.util.ArrayList<>();

    @AfterEach
    void closeExtra() throws Exception {
        for (AutoCloseable c : closers) {
            c.close();
        }
    }

    @Test
    void backendDownWhenTheClientConnectsThenUpServesOnTheSameConnection() throws Exception {
        backend.close();
        startProxy(CriProxy.builder());
        var stub = RuntimeServiceGrpc.newBlockingStub(client);
        assertThatThrownBy(
                        () ->
                                stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                                        .version(VersionRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                            assertThat(e.getStatus().getDescription())
                                    .contains(backend.socket.toString());
                        });
        backend = new TestBackend(backend.socket, false).start();
        // no wait-for-ready: the proxy's connection to the client never went away
        assertThat(
                        stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                                .version(VersionRequest.getDefaultInstance())
                                .getRuntimeName())
                .isEqualTo("test-backend");
    }

    @Test
    void everyClientConnectionsBackendLegIsClosedWithIt() throws Exception {
        startProxy(CriProxy.builder());
        // warm up, so that lazily opened files (classes, the shared event loops) are counted before
        for (int i = 0; i < 3; i++) {
            oneCallOnItsOwnConnection();
        }
        long before = openFiles();
        for (int i = 0; i < 60; i++) {
            oneCallOnItsOwnConnection();
        }
        // each cycle opened a client socket, the proxy's accepted socket and its backend leg (and
        // the backend's accepted socket); all of them must be gone once the clients are
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        long now = openFiles();
        while (now > before + 10 && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000); // polling a condition
            now = openFiles();
        }
        assertThat(now)
                .as("open files after 60 connections came and went (before: %d)", before)
                .isLessThanOrEqualTo(before + 10);
    }

    private void oneCallOnItsOwnConnection() throws InterruptedException {
        ManagedChannel ch = CriChannels.newChannel(proxy.listenEndpoint());
        try {
            assertThat(
                            RuntimeServiceGrpc.newBlockingStub(ch)
                                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                                    .version(VersionRequest.getDefaultInstance())
                                    .getRuntimeName())
                    .isEqualTo("test-backend");
        } finally {
            ch.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }

    private static long openFiles() throws java.io.IOException {
        try (var s = java.nio.file.Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    private static Http2Headers versionHeaders() {
        return new DefaultHttp2Headers()
                .method("POST")
                .scheme("http")
                .authority("localhost")
                .path(VERSION_PATH)
                .set("content-type", "application/grpc")
                .set("te", "trailers");
    }

    private static ByteBuf versionMessage() {
        byte[] m = VersionRequest.newBuilder().setVersion("v1").build().toByteArray();
        return Unpooled.buffer().writeByte(0).writeInt(m.length).writeBytes(m);
    }

    /** A bare HTTP/2 client with a given stream window: collects one answer. */
    private static final class CollectingClient extends BareClient {
        final java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
        final CompletableFuture<String> status = new CompletableFuture<>();
        final java.util.List<String> afterEnd = new java.util.concurrent.CopyOnWriteArrayList<>();

        CollectingClient(int window) {
            super(new Http2Settings().pushEnabled(false).initialWindowSize(window));
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int padding,
                boolean endOfStream) {
            if (status.isDone()) {
                afterEnd.add("HEADERS " + headers);
            }
            CharSequence s = headers.get("grpc-status");
            if (endOfStream) {
                status.complete(s == null ? "none" : s.toString());
            }
        }

        @Override
        public int onDataRead(
                ChannelHandlerContext c,
                int streamId,
                ByteBuf data,
                int padding,
                boolean endOfStream) {
            if (status.isDone()) {
                afterEnd.add("DATA " + data.readableBytes());
            }
            byte[] b = new byte[data.readableBytes()];
            data.readBytes(b);
            body.writeBytes(b);
            return b.length + padding;
        }

        @Override
        public void onGoAwayRead(
                ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
            status.completeExceptionally(new AssertionError("GOAWAY " + errorCode));
        }

        @Override
        public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
            if (!status.isDone()) {
                status.completeExceptionally(new AssertionError("RST_STREAM " + errorCode));
            }
        }
    }

    /** A bare HTTP/2 client: records the last grpc-status and any GOAWAY. */
    private static final class RawClient extends BareClient {
        final CompletableFuture<String> status = new CompletableFuture<>();
        final AtomicReference<String> goAway = new AtomicReference<>();

        /** Frames on streams this client reset: there must be none. */
        final java.util.List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();

        RawClient() {
            super(new Http2Settings().pushEnabled(false));
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int padding,
                boolean endOfStream) {
            if (streamId != 3 + 2 * 500) {
                unexpected.add(streamId + " " + headers);
            }
            CharSequence s = headers.get("grpc-status");
            if (s != null && endOfStream && streamId == 3 + 2 * 500) {
                status.complete(s.toString());
            }
        }

        @Override
        public int onDataRead(
                ChannelHandlerContext c,
                int streamId,
                ByteBuf data,
                int padding,
                boolean endOfStream) {
            return data.readableBytes() + padding;
        }

        @Override
        public void onGoAwayRead(
                ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
            goAway.set(
                    "GOAWAY "
                            + errorCode
                            + " "
                            + debugData.toString(java.nio.charset.StandardCharsets.UTF_8));
            status.completeExceptionally(new AssertionError(goAway.get()));
        }
    }
}
