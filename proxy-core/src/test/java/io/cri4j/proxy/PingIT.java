package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PINGs through the proxy, seen from the wire on both sides: a runtime's PINGs are answered by the
 * client and a client's by the runtime, as without the proxy; the proxy acks only beyond those
 * that may wait, a client's PING that would be a ping strike at the runtime (no HEADERS or DATA
 * from it since the last), and those a runtime connection took with it when it went away.
 */
class PingIT {
    private static final String VERSION_PATH = "/runtime.v1.RuntimeService/Version";

    /** "PING" in the high half of every payload the backend sends. */
    private static final long PING = 0x50494E47_00000000L;

    private Path dir;
    private EventLoopGroup group;
    private RawBackend backend;
    private CriProxy proxy;
    private PingClient client;
    private Channel clientChannel;

    @BeforeEach
    void start(@org.junit.jupiter.api.io.TempDir Path dir) {
        this.dir = dir;
        group = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
    }

    @AfterEach
    void stop() throws Exception {
        if (clientChannel != null) {
            clientChannel.close().sync();
        }
        if (proxy != null) {
            proxy.close();
        }
        if (backend != null) {
            backend.close();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    /** @param backendAcksPings whether there is a backend and it acks at once (null: none) */
    private void startAll(Boolean backendAcksPings, boolean clientAcksPings) throws Exception {
        Path backendSocket = dir.resolve("backend.sock");
        if (backendAcksPings != null) {
            backend = new RawBackend(backendAcksPings, 0).start(group, backendSocket);
        }
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(backendSocket)
                        .build()
                        .start();
        client = new PingClient(clientAcksPings);
        clientChannel = client.connect(group, dir.resolve("proxy.sock"));
    }

    @Test
    void aRuntimesPingReachesTheClientAndOnlyTheClientsAckGoesBack() throws Exception {
        startAll(true, false);
        assertThat(client.version(3, 1)).as("grpc-status").isEqualTo("0");
        assertThat(client.pings.poll(10, TimeUnit.SECONDS))
                .as("the runtime's first PING")
                .isEqualTo(PING | 1);
        // the second call's answer comes after anything the proxy wrote when the first PING came
        assertThat(client.version(5, 1)).isEqualTo("0");
        assertThat(client.pings.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | 2);
        assertThat(backend.acks).as("acks the runtime got before the client acked").isEmpty();

        client.ack(PING | 1);
        assertThat(backend.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | 1);
        client.ack(PING | 2);
        assertThat(backend.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | 2);
        client.ack(PING | 9); // acks a PING nobody sent: goes nowhere
        assertThat(client.version(7, 0)).isEqualTo("0");
        assertThat(backend.acks).as("acks beyond the client's two").isEmpty();
    }

    @Test
    void aClientsPingAfterTheRuntimesAnswerGoesToTheRuntimeAndItsAckComesBack() throws Exception {
        startAll(false, true); // a runtime that acks only when told to
        assertThat(client.version(3, 0)).isEqualTo("0"); // the runtime sent HEADERS and DATA
        client.ping(0x1111);
        assertThat(backend.pings.poll(10, TimeUnit.SECONDS))
                .as("the client's PING at the runtime")
                .isEqualTo(0x1111);
        // an ack from the proxy would have been written before this answer
        assertThat(client.version(5, 0)).isEqualTo("0");
        assertThat(client.acks).as("acks before the runtime acked").isEmpty();
        backend.ack(0x1111);
        assertThat(client.acks.poll(10, TimeUnit.SECONDS))
                .as("the runtime's ack")
                .isEqualTo(0x1111);
    }

    @Test
    void aClientsPingThatFollowsNoDataOfTheRuntimeIsAnsweredByTheProxy() throws Exception {
        startAll(false, true);
        client.ping(0x0A); // nothing from the runtime yet
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(0x0A);
        assertThat(client.version(3, 0)).isEqualTo("0");
        client.ping(0x0B); // goes on: the runtime answered since
        client.ping(0x0C); // would be a ping strike at the runtime: the proxy acks
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(0x0C);
        assertThat(client.version(5, 0)).isEqualTo("0");
        client.ping(0x0D);
        assertThat(backend.pings.poll(10, TimeUnit.SECONDS)).isEqualTo(0x0B);
        assertThat(backend.pings.poll(10, TimeUnit.SECONDS))
                .as("the next PING at the runtime")
                .isEqualTo(0x0D);
        backend.ack(0x0D);
        backend.ack(0x0B);
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(0x0D);
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(0x0B);
        backend.ack(0x0B); // an ack to a PING that no longer waits: goes nowhere
        assertThat(client.version(7, 0)).isEqualTo("0");
        assertThat(client.acks).isEmpty();
    }

    @Test
    void theProxyAcksTheClientsPingsBeyondWhatMayWaitForTheRuntime() throws Exception {
        startAll(false, true);
        int waiting = 8; // PingRelay.MAX_FORWARDED_PINGS
        for (int i = 1; i <= waiting + 1; i++) {
            assertThat(client.version(2 * i + 1, 0)).isEqualTo("0");
            client.ping(i);
        }
        assertThat(client.acks.poll(10, TimeUnit.SECONDS))
                .as("the proxy's ack")
                .isEqualTo(waiting + 1);
        for (long i = 1; i <= waiting; i++) {
            assertThat(backend.pings.poll(10, TimeUnit.SECONDS)).isEqualTo(i);
        }
        for (long i = 1; i <= waiting; i++) {
            backend.ack(i);
            assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(i);
        }
        assertThat(backend.pings).as("PINGs beyond eight at the runtime").isEmpty();
    }

    @Test
    void theClientsPingsARuntimeTookWithItAreAckedByTheProxy() throws Exception {
        startAll(false, true);
        assertThat(client.version(3, 0)).isEqualTo("0");
        client.ping(0x3333);
        assertThat(backend.pings.poll(10, TimeUnit.SECONDS)).isEqualTo(0x3333);
        backend.close();
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).as("the proxy's ack").isEqualTo(0x3333);
    }

    @Test
    void theProxyAcksTheRuntimesPingsBeyondWhatMayWaitForTheClient() throws Exception {
        startAll(true, false);
        int waiting = 8; // PingRelay.MAX_FORWARDED_PINGS
        assertThat(client.version(3, waiting + 4)).isEqualTo("0");
        List<Long> acked = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            acked.add(backend.acks.poll(10, TimeUnit.SECONDS));
        }
        assertThat(acked)
                .as("acks from the proxy")
                .containsExactly(PING | 9, PING | 10, PING | 11, PING | 12);
        List<Long> atClient = new ArrayList<>();
        for (int i = 0; i < waiting; i++) {
            atClient.add(client.pings.poll(10, TimeUnit.SECONDS));
        }
        assertThat(atClient)
                .containsExactly(
                        PING | 1, PING | 2, PING | 3, PING | 4, PING | 5, PING | 6, PING | 7,
                        PING | 8);
        for (long i = 1; i <= waiting; i++) {
            client.ack(PING | i);
            assertThat(backend.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | i);
        }
    }

    @Test
    void pingsOfARuntimeThatWentAwayAreForgottenAndTheNextRuntimesGoToTheClient() throws Exception {
        startAll(true, false);
        int waiting = 8; // PingRelay.MAX_FORWARDED_PINGS: all of them wait for the client
        assertThat(client.version(3, waiting)).isEqualTo("0");
        for (int i = 1; i <= waiting; i++) {
            assertThat(client.pings.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | i);
        }
        backend.close();
        backend = new RawBackend(true, 100).start(group, dir.resolve("backend.sock"));
        // the proxy learns of the lost leg and connects again for a later call
        String status = client.version(5, 0);
        for (int stream = 7; !status.equals("0") && stream < 99; stream += 2) {
            status = client.version(stream, 0);
        }
        assertThat(status).isEqualTo("0");
        assertThat(client.version(101, 1)).isEqualTo("0");
        assertThat(client.pings.poll(10, TimeUnit.SECONDS))
                .as("the new runtime's PING")
                .isEqualTo(PING | 101);
        client.ack(PING | 1); // to the runtime that went away: goes nowhere
        client.ack(PING | 101);
        assertThat(backend.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(PING | 101);
        assertThat(client.version(103, 0)).isEqualTo("0");
        assertThat(backend.acks).as("other acks at the new runtime").isEmpty();
    }

    @Test
    void withNoRuntimeTheProxyAnswersAClientsPing() throws Exception {
        startAll(null, true);
        client.ping(0x2222);
        assertThat(client.acks.poll(10, TimeUnit.SECONDS)).isEqualTo(0x2222);
    }

    /** A client that sends Version calls and PINGs, and keeps the PINGs and acks it gets. */
    private static final class PingClient extends BareClient {
        final BlockingQueue<Long> pings = new LinkedBlockingQueue<>();
        final BlockingQueue<Long> acks = new LinkedBlockingQueue<>();
        final Map<Integer, CompletableFuture<String>> statuses = new ConcurrentHashMap<>();

        PingClient(boolean autoAckPing) {
            super(new Http2Settings().pushEnabled(false), autoAckPing);
        }

        /** A Version call on stream {@code id}; asks the backend to send {@code pings} PINGs. */
        String version(int id, int pings) throws Exception {
            CompletableFuture<String> status = new CompletableFuture<>();
            statuses.put(id, status);
            Http2Headers headers =
                    new DefaultHttp2Headers()
                            .method("POST")
                            .scheme("http")
                            .authority("localhost")
                            .path(VERSION_PATH)
                            .set("content-type", "application/grpc")
                            .set("te", "trailers");
            if (pings > 0) {
                headers.set("x-ping", Integer.toString(pings));
            }
            byte[] m = VersionRequest.newBuilder().setVersion("v1").build().toByteArray();
            ByteBuf body = Unpooled.buffer().writeByte(0).writeInt(m.length).writeBytes(m);
            ctx.executor()
                    .submit(
                            () -> {
                                h.encoder()
                                        .writeHeaders(ctx, id, headers, 0, false, ctx.newPromise());
                                h.encoder().writeData(ctx, id, body, 0, true, ctx.newPromise());
                                h.flush(ctx);
                            })
                    .sync();
            return status.get(10, TimeUnit.SECONDS);
        }

        void ping(long data) throws InterruptedException {
            write(data, false);
        }

        void ack(long data) throws InterruptedException {
            write(data, true);
        }

        private void write(long data, boolean ack) throws InterruptedException {
            ctx.executor()
                    .submit(
                            () -> {
                                h.encoder().writePing(ctx, ack, data, ctx.newPromise());
                                h.flush(ctx);
                            })
                    .sync();
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int padding,
                boolean endOfStream) {
            CharSequence s = headers.get("grpc-status");
            if (endOfStream) {
                statuses.get(streamId).complete(s == null ? "none" : s.toString());
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
        public void onPingRead(ChannelHandlerContext c, long data) {
            pings.add(data);
        }

        @Override
        public void onPingAckRead(ChannelHandlerContext c, long data) {
            acks.add(data);
        }
    }

    /**
     * A gRPC server on the wire: answers Version (other methods: UNIMPLEMENTED), sends as many PINGs
     * with the answer as the request asks for ({@code x-ping}), keeps the PINGs and acks it gets.
     */
    private static final class RawBackend extends Http2FrameAdapter {
        final boolean autoAckPing;
        final BlockingQueue<Long> pings = new LinkedBlockingQueue<>();
        final BlockingQueue<Long> acks = new LinkedBlockingQueue<>();
        private final Map<Integer, Http2Headers> requests = new ConcurrentHashMap<>();
        private final AtomicLong sent = new AtomicLong();
        private final List<Channel> channels = new java.util.concurrent.CopyOnWriteArrayList<>();

        /**
         * The connection each PING came in on: the proxy's relay connection, not the one its
         * v1alpha2 probe opens, whichever of them the backend accepted last.
         */
        private final Map<Long, Channel> pingedOn = new ConcurrentHashMap<>();

        private Channel server;

        /** @param lastPing the payload's low half before this backend's first PING */
        RawBackend(boolean autoAckPing, long lastPing) {
            this.autoAckPing = autoAckPing;
            sent.set(lastPing);
        }

        RawBackend start(EventLoopGroup group, Path socket) throws InterruptedException {
            server =
                    new ServerBootstrap()
                            .group(group)
                            .channel(EpollServerDomainSocketChannel.class)
                            .childHandler(
                                    new ChannelInitializer<Channel>() {
                                        @Override
                                        protected void initChannel(Channel c) {
                                            channels.add(c);
                                            c.pipeline()
                                                    .addLast(
                                                            BareClient.handler(
                                                                    true,
                                                                    RawBackend.this,
                                                                    new Http2Settings(),
                                                                    autoAckPing));
                                        }
                                    })
                            .bind(new DomainSocketAddress(socket.toString()))
                            .sync()
                            .channel();
            return this;
        }

        /** Acks a PING on the newest connection. */
        /** Acks the PING {@code data} on the connection it came in on. */
        void ack(long data) throws InterruptedException {
            Channel c = pingedOn.get(data);
            c.eventLoop()
                    .submit(
                            () -> {
                                Http2ConnectionHandler h =
                                        c.pipeline().get(Http2ConnectionHandler.class);
                                h.encoder()
                                        .writePing(
                                                c.pipeline().context(h),
                                                true,
                                                data,
                                                c.newPromise());
                                c.flush();
                            })
                    .sync();
        }

        void close() throws InterruptedException {
            server.close().sync();
            for (Channel c : channels) {
                c.close().sync();
            }
        }

        private static Http2ConnectionHandler handler(ChannelHandlerContext c) {
            return c.pipeline().get(Http2ConnectionHandler.class);
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int streamDependency,
                short weight,
                boolean exclusive,
                int padding,
                boolean endOfStream) {
            onHeadersRead(c, streamId, headers, padding, endOfStream);
        }

        @Override
        public void onHeadersRead(
                ChannelHandlerContext c,
                int streamId,
                Http2Headers headers,
                int padding,
                boolean endOfStream) {
            requests.put(streamId, headers);
            if (endOfStream) {
                answer(c, streamId);
            }
        }

        @Override
        public int onDataRead(
                ChannelHandlerContext c,
                int streamId,
                ByteBuf data,
                int padding,
                boolean endOfStream) {
            if (endOfStream) {
                answer(c, streamId);
            }
            return data.readableBytes() + padding;
        }

        private void answer(ChannelHandlerContext c, int streamId) {
            Http2Headers request = requests.remove(streamId);
            Http2ConnectionHandler h = handler(c);
            Http2Headers headers =
                    new DefaultHttp2Headers().status("200").set("content-type", "application/grpc");
            if (!VERSION_PATH.contentEquals(request.path())) {
                h.encoder()
                        .writeHeaders(
                                c,
                                streamId,
                                headers.set("grpc-status", "12"),
                                0,
                                true,
                                c.newPromise());
                h.flush(c);
                return;
            }
            CharSequence pings = request.get("x-ping");
            for (int i = pings == null ? 0 : Integer.parseInt(pings.toString()); i > 0; i--) {
                h.encoder().writePing(c, false, PING | sent.incrementAndGet(), c.newPromise());
            }
            byte[] m = VersionResponse.newBuilder().setRuntimeName("raw").build().toByteArray();
            h.encoder().writeHeaders(c, streamId, headers, 0, false, c.newPromise());
            h.encoder()
                    .writeData(
                            c,
                            streamId,
                            Unpooled.buffer().writeByte(0).writeInt(m.length).writeBytes(m),
                            0,
                            false,
                            c.newPromise());
            h.encoder()
                    .writeHeaders(
                            c,
                            streamId,
                            new DefaultHttp2Headers().set("grpc-status", "0"),
                            0,
                            true,
                            c.newPromise());
            h.flush(c);
        }

        @Override
        public void onPingRead(ChannelHandlerContext c, long data) {
            pingedOn.put(data, c.channel());
            pings.add(data);
        }

        @Override
        public void onPingAckRead(ChannelHandlerContext c, long data) {
            acks.add(data);
        }
    }
}
