package io.cri4j.cri.internal.http;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
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
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The one HTTP/1.1 server of cri4j's small HTTP endpoints (image pull progress, metrics, health),
 * with the same rules for all of them:
 *
 * <ul>
 *   <li>loopback addresses only, unless remote access is allowed;
 *   <li>a request must be complete within the request timeout from when the connection opened (or
 *       its previous response ended), however slowly its bytes arrive;
 *   <li>at most {@code maxConnections} connections at once; one more is answered 503 and closed;
 *   <li>a {@code Host} header must name a loopback name or address, the bound address, or a host the
 *       operator allowed (against DNS rebinding); otherwise 403 with the reason;
 *   <li>a request whose path or query cannot be decoded is answered 400 with the reason;
 *   <li>a connection whose peer takes none of the bytes waiting to be written for the stall timeout
 *       is closed (a client that never reads a stream cannot hold it).
 * </ul>
 *
 * The application's handler (one per connection, from the supplier) gets {@code FullHttpRequest}s
 * that passed these checks. Not API.
 */
public final class HttpSurface implements AutoCloseable {

    private final Builder b;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger state = new AtomicInteger(); // 0 new, 1 started, 2 closed
    private EventLoopGroup group;
    private volatile InetSocketAddress address;

    private HttpSurface(Builder b) {
        this.b = b;
    }

    /**
     * @param name what it serves, for thread names and messages ("image pull progress", "metrics")
     * @param handler a new application handler per connection
     * @return a builder
     */
    public static Builder builder(String name, Supplier<? extends ChannelHandler> handler) {
        return new Builder(Objects.requireNonNull(name, "name"), Objects.requireNonNull(handler));
    }

    /**
     * Binds and starts serving.
     *
     * @return this server
     * @throws IOException naming the address when it cannot be bound
     */
    public HttpSurface start() throws IOException {
        if (!state.compareAndSet(0, 1)) {
            throw new IllegalStateException(b.name + " server already started or closed");
        }
        group =
                new MultiThreadIoEventLoopGroup(
                        1, new DefaultThreadFactory(b.threadName, true), NioIoHandler.newFactory());
        try {
            Channel server =
                    new ServerBootstrap()
                            .group(group)
                            .channel(NioServerSocketChannel.class)
                            .childOption(ChannelOption.TCP_NODELAY, true)
                            // a small send buffer: a peer that stops reading makes the connection
                            // unwritable soon, and the stall timeout starts
                            .childOption(ChannelOption.SO_SNDBUF, 8 * 1024)
                            .childOption(
                                    ChannelOption.WRITE_BUFFER_WATER_MARK,
                                    new WriteBufferWaterMark(8 * 1024, 16 * 1024))
                            .childHandler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel ch) {
                                            initConnection(ch);
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
                    "cannot serve "
                            + b.name
                            + " on "
                            + b.bindAddress.getHostString()
                            + ":"
                            + b.bindAddress.getPort()
                            + ": "
                            + e.getMessage(),
                    e);
        }
        return this;
    }

    private void initConnection(SocketChannel ch) {
        if (connections.incrementAndGet() > b.maxConnections) {
            connections.decrementAndGet();
            HttpGuard.refuseConnection(ch, b.name, b.maxConnections);
            return;
        }
        ch.closeFuture().addListener(f -> connections.decrementAndGet());
        channels.add(ch);
        ch.pipeline()
                .addLast(new StallGuard(b.stallTimeout.toNanos()))
                .addLast(new HttpServerCodec(4096, 8192, 8192))
                .addLast(new HttpObjectAggregator(b.maxRequestBody))
                .addLast(RequestDeadline.NAME, new RequestDeadline(b.requestTimeout.toNanos()))
                .addLast(new HttpGuard(b.allowedHosts, b.anyHost))
                .addLast(b.handler.get());
    }

    /** The bound address (the real port when port 0 was asked for). */
    public InetSocketAddress address() {
        InetSocketAddress a = address;
        if (a == null) {
            throw new IllegalStateException(b.name + " server not started");
        }
        return a;
    }

    /** {@code http://HOST:PORT/}. */
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

    /** Connections open now. */
    public int connections() {
        return connections.get();
    }

    /** Closes every connection and releases the thread; idempotent. */
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

    /** Configures an {@link HttpSurface}. */
    public static final class Builder {
        private final String name;
        private final Supplier<? extends ChannelHandler> handler;
        private String threadName = "cri4j-http";

        // an IP literal: nothing is looked up, so there is no choice among a name's addresses to
        // make
        @SuppressWarnings("AddressSelection")
        private InetSocketAddress bindAddress = new InetSocketAddress("127.0.0.1", 0);

        private boolean allowRemote;
        private final Set<String> allowedHosts = new LinkedHashSet<>();
        private boolean anyHost;
        private Duration requestTimeout = Duration.ofSeconds(30);
        private Duration stallTimeout = Duration.ofSeconds(30);
        private int maxConnections = 128;
        private int maxRequestBody = 8 * 1024;

        private Builder(String name, Supplier<? extends ChannelHandler> handler) {
            this.name = name;
            this.handler = handler;
        }

        /** @param name the event loop thread's name prefix */
        public Builder threadName(String name) {
            this.threadName = Objects.requireNonNull(name);
            return this;
        }

        /** @param address where to listen (default 127.0.0.1, a free port) */
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
         * @param hosts host names (or addresses) a request's {@code Host} header may name besides
         *     loopback names and addresses and the bound address; {@code *} allows any
         */
        public Builder allowHosts(Iterable<String> hosts) {
            for (String h : hosts) {
                String n = HttpGuard.normalizeHost(h);
                if (n.isEmpty()) {
                    throw new IllegalArgumentException("empty allowed host");
                }
                if (n.equals("*")) {
                    anyHost = true;
                } else {
                    allowedHosts.add(n.toLowerCase(Locale.ROOT));
                }
            }
            return this;
        }

        /** @param timeout the time a request may take from when it may start (default 30 s) */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "request timeout");
            return this;
        }

        /**
         * @param timeout how long a connection may stay unwritable (its peer reading nothing) before
         *     it is closed (default 30 s)
         */
        public Builder stallTimeout(Duration timeout) {
            this.stallTimeout = positive(timeout, "stall timeout");
            return this;
        }

        /** @param max connections open at once (default 128) */
        public Builder maxConnections(int max) {
            if (max < 1) {
                throw new IllegalArgumentException(
                        "max connections must be at least 1, was " + max);
            }
            this.maxConnections = max;
            return this;
        }

        private static Duration positive(Duration d, String what) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, was " + d);
            }
            return d;
        }

        /**
         * @return the server, not started
         * @throws IllegalArgumentException when the address is not loopback and remote access was
         *     not allowed
         */
        public HttpSurface build() {
            if (!allowRemote
                    && (bindAddress.isUnresolved()
                            || !bindAddress.getAddress().isLoopbackAddress())) {
                throw new IllegalArgumentException(
                        name
                                + " address "
                                + bindAddress.getHostString()
                                + ":"
                                + bindAddress.getPort()
                                + " is not a loopback address; allow remote access explicitly to serve it");
            }
            return new HttpSurface(this);
        }
    }
}
