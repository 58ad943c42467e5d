package io.cri4j.imagepull;

import io.cri4j.imagepull.internal.ProgressHttpHandler;
import io.cri4j.streaming.StreamAuthorizer;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Serves a {@link PullObserver}'s pulls over HTTP, in KEP-5334's shape:
 * <ul>
 *   <li>{@code GET /imagePullProgress}: {@code {"pulls":[...]}}, the pulls in progress and those that ended
 *   within the retention, each with its layers;</li>
 *   <li>{@code GET /imagePullProgress?image=REF}: newline-delimited JSON objects
 *   {@code {name, image, layer, progress, total, error, ...}} as the pull of {@code REF} goes (a line per
 *   layer that changed, then the image's line), until it ends (the last line is the image's, with
 *   {@code error} when it failed); it waits for a pull of {@code REF} to start, and answers at once for one
 *   that ended within the retention;</li>
 *   <li>{@code GET /imagePullProgress?follow=true}: the same lines for every pull, until the client goes;</li>
 *   <li>{@code GET /}: a page with live bars (plain HTML and JavaScript from this jar).</li>
 * </ul>
 * The object fields are described in {@code cri4j.imagepull.v1.ImagePullProgress}; {@code total} is -1
 * while the runtime's progress cannot be observed.
 *
 * <p>Loopback only unless {@link Builder#allowRemote(boolean)}; every request first passes the same
 * {@link StreamAuthorizer} hook as the streaming server's ({@link io.cri4j.streaming.StreamKind#IMAGE_PULL_PROGRESS},
 * target: the image, empty for the list and the page; refused: 403). Too many open streams answer 503. A
 * slow reader gets the latest figures rather than every change (lines are coalesced while its connection
 * is not writable).
 */
public final class PullProgressServer implements AutoCloseable {

    private final Builder b;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final AtomicInteger state = new AtomicInteger(); // 0 new, 1 started, 2 closed
    private EventLoopGroup group;
    private volatile InetSocketAddress address;

    private PullProgressServer(Builder b) {
        this.b = b;
    }

    /**
     * @param observer the pulls to serve
     * @return a builder
     */
    public static Builder builder(PullObserver observer) {
        return new Builder(Objects.requireNonNull(observer, "observer"));
    }

    /**
     * Binds and starts serving.
     *
     * @return this server
     * @throws IOException when the address cannot be bound
     */
    public PullProgressServer start() throws IOException {
        if (!state.compareAndSet(0, 1)) {
            throw new IllegalStateException("server already started or closed");
        }
        group =
                new MultiThreadIoEventLoopGroup(
                        1,
                        new DefaultThreadFactory("cri4j-pull-progress-http", true),
                        NioIoHandler.newFactory());
        try {
            Channel server =
                    new ServerBootstrap()
                            .group(group)
                            .channel(NioServerSocketChannel.class)
                            .childOption(ChannelOption.TCP_NODELAY, true)
                            .childOption(
                                    ChannelOption.WRITE_BUFFER_WATER_MARK,
                                    new WriteBufferWaterMark(32 * 1024, 64 * 1024))
                            .childHandler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel ch) {
                                            channels.add(ch);
                                            // a connection must send its request within the idle
                                            // time
                                            ch.pipeline()
                                                    .addLast(
                                                            ProgressHttpHandler.IDLE,
                                                            new IdleStateHandler(
                                                                    b.requestTimeout.toMillis(),
                                                                    0,
                                                                    0,
                                                                    TimeUnit.MILLISECONDS));
                                            ch.pipeline()
                                                    .addLast(new HttpServerCodec(4096, 8192, 8192));
                                            ch.pipeline()
                                                    .addLast(new HttpObjectAggregator(8 * 1024));
                                            ch.pipeline()
                                                    .addLast(
                                                            new ProgressHttpHandler(
                                                                    b.observer, b.authorizer));
                                        }
                                    })
                            .bind(b.bindAddress)
                            .syncUninterruptibly()
                            .channel();
            channels.add(server);
            address = (InetSocketAddress) server.localAddress();
        } catch (RuntimeException e) {
            close();
            throw new IOException(
                    "cannot serve image pull progress on " + b.bindAddress + ": " + e.getMessage(),
                    e);
        }
        return this;
    }

    /** The bound address (the real port when port 0 was asked for). */
    public InetSocketAddress address() {
        InetSocketAddress a = address;
        if (a == null) {
            throw new IllegalStateException("server not started");
        }
        return a;
    }

    /** {@code http://HOST:PORT/}: the page; {@code imagePullProgress} below it is the API. */
    public URI baseUrl() {
        InetSocketAddress a = address();
        String host = a.getAddress().getHostAddress();
        return URI.create(
                "http://"
                        + (host.contains(":") ? "[" + host + "]" : host)
                        + ":"
                        + a.getPort()
                        + "/");
    }

    /** Closes every connection (open streams end) and releases the thread; idempotent. */
    @Override
    public void close() {
        if (state.getAndSet(2) == 2) {
            return;
        }
        channels.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Configures a {@link PullProgressServer}. */
    public static final class Builder {
        private final PullObserver observer;
        private InetSocketAddress bindAddress = new InetSocketAddress("127.0.0.1", 0);
        private boolean allowRemote;
        private StreamAuthorizer authorizer;
        private Duration requestTimeout = Duration.ofSeconds(30);

        private Builder(PullObserver observer) {
            this.observer = observer;
        }

        /** @param address where to listen (default 127.0.0.1 on a free port); loopback unless {@link #allowRemote} */
        public Builder bindAddress(InetSocketAddress address) {
            this.bindAddress = Objects.requireNonNull(address, "address");
            return this;
        }

        /** @param allow whether a non-loopback address may be bound (default false) */
        public Builder allowRemote(boolean allow) {
            this.allowRemote = allow;
            return this;
        }

        /**
         * @param authorizer asked before each request is served, on the event loop (must not block);
         *                   {@code false} or an exception answers 403
         */
        public Builder authorizer(StreamAuthorizer authorizer) {
            this.authorizer = authorizer;
            return this;
        }

        /** @param timeout how long a connection may stay without sending a request (default 30 s) */
        public Builder requestTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException(
                        "request timeout must be positive, was " + timeout);
            }
            this.requestTimeout = timeout;
            return this;
        }

        /**
         * @return the server, not started
         * @throws IllegalArgumentException when the address is not loopback and remote access was not allowed
         */
        public PullProgressServer build() {
            if (!allowRemote
                    && (bindAddress.isUnresolved()
                            || !bindAddress.getAddress().isLoopbackAddress())) {
                throw new IllegalArgumentException(
                        "image pull progress address "
                                + bindAddress.getHostString()
                                + ":"
                                + bindAddress.getPort()
                                + " is not a loopback address; allow remote access explicitly to serve it");
            }
            return new PullProgressServer(this);
        }
    }
}
