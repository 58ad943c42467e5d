package io.cri4j.cri;

import io.cri4j.cri.internal.NettyTransport;
import io.cri4j.cri.internal.UnixSockets;
import io.grpc.BindableService;
import io.grpc.HandlerRegistry;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerTransportFilter;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A gRPC server on a CRI endpoint, usually a unix socket, with the rules a node agent needs:
 * <ul>
 *   <li>the socket's parent directories are created;</li>
 *   <li>the socket file gets mode {@code rw-rw----} (0660) unless configured otherwise;</li>
 *   <li>a stale socket file (nobody accepts on it) is replaced;</li>
 *   <li>start fails with an {@link IOException} when a live server already answers on the socket,
 *       and when the path exists but is not a socket;</li>
 *   <li>{@link #close()} stops the server, releases its threads and removes the socket file.</li>
 * </ul>
 *
 * <pre>{@code
 * try (CriServer server = CriServer.builder(CriEndpoint.parse("unix:///run/my-agent/cri.sock"))
 *         .addService(myRuntimeService)
 *         .build()
 *         .start()) {
 *     server.awaitTermination();
 * }
 * }</pre>
 */
public final class CriServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CriServer.class);

    /** Default socket mode: owner and group may connect. */
    public static final String DEFAULT_SOCKET_MODE = "rw-rw----";

    private final CriEndpoint requested;
    private final List<ServerServiceDefinition> services;
    private final List<ServerInterceptor> interceptors;
    private final List<ServerTransportFilter> transportFilters;
    private final HandlerRegistry fallback;
    private final Set<PosixFilePermission> socketMode;
    private final int maxInboundMessageSize;
    private final Executor executor;

    private final Object lock = new Object();
    private Server server;
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private CriEndpoint bound;
    private boolean closed;

    /** This server's claim on its unix socket path (the lock, and the socket file it bound). */
    private UnixSockets.Claim claim;

    private CriServer(Builder b) {
        this.requested = b.endpoint;
        this.services = List.copyOf(b.services);
        this.interceptors = List.copyOf(b.interceptors);
        this.transportFilters = List.copyOf(b.transportFilters);
        this.fallback = b.fallback;
        this.socketMode = b.socketMode;
        this.maxInboundMessageSize = b.maxInboundMessageSize;
        this.executor = b.executor;
    }

    /**
     * @param endpoint where to listen: a unix socket path, or a TCP address (port 0 picks a free port)
     * @return a builder
     */
    public static Builder builder(CriEndpoint endpoint) {
        return new Builder(endpoint);
    }

    /**
     * Binds and starts serving.
     *
     * @return this server
     * @throws IOException when the socket is owned by a live server, the path is not a socket, or binding fails
     */
    public CriServer start() throws IOException {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("server for " + requested + " is closed");
            }
            if (server != null) {
                throw new IllegalStateException("server for " + requested + " is already started");
            }
            NettyTransport.Kind kind = NettyTransport.forEndpoint(requested);
            NettyServerBuilder nb;
            if (requested.isUnix()) {
                Path socket = requested.path();
                claim = UnixSockets.claim(socket);
                nb =
                        NettyServerBuilder.forAddress(
                                        new DomainSocketAddress(claim.bindPath().toString()))
                                .withChildOption(ChannelOption.SO_KEEPALIVE, null);
            } else {
                nb =
                        NettyServerBuilder.forAddress(
                                new InetSocketAddress(requested.host(), requested.port()));
            }
            boss = kind.newGroup(1, "cri4j-server-boss");
            workers =
                    kind.newGroup(
                            Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors())),
                            "cri4j-server");
            nb.channelType(kind.serverChannelType())
                    .bossEventLoopGroup(boss)
                    .workerEventLoopGroup(workers)
                    .maxInboundMessageSize(maxInboundMessageSize)
                    .permitKeepAliveTime(5, TimeUnit.MINUTES);
            services.forEach(nb::addService);
            interceptors.forEach(nb::intercept);
            transportFilters.forEach(nb::addTransportFilter);
            if (fallback != null) {
                nb.fallbackHandlerRegistry(fallback);
            }
            if (executor != null) {
                nb.executor(executor);
            }
            Server s = nb.build();
            try {
                s.start();
            } catch (IOException | RuntimeException e) {
                s.shutdownNow();
                shutdownGroups();
                releaseClaim();
                throw new IOException("cannot serve on " + requested + ": " + bindProblem(e), e);
            }
            server = s;
            if (requested.isUnix()) {
                try {
                    claim.publish(socketMode);
                } catch (IOException e) {
                    closeQuietly();
                    throw e;
                }
                bound = requested;
            } else {
                InetSocketAddress addr = (InetSocketAddress) s.getListenSockets().get(0);
                bound = CriEndpoint.tcp(requested.host(), addr.getPort());
            }
            log.info("CRI server listening on {}", bound);
            return this;
        }
    }

    /**
     * @return the endpoint served, with the real port for TCP port 0
     * @throws IllegalStateException before {@link #start()}
     */
    public CriEndpoint endpoint() {
        synchronized (lock) {
            if (bound == null) {
                throw new IllegalStateException("server for " + requested + " is not started");
            }
            return bound;
        }
    }

    /**
     * Blocks until the server terminates (after {@link #close()} from another thread).
     *
     * @throws InterruptedException when interrupted
     */
    public void awaitTermination() throws InterruptedException {
        Server s;
        synchronized (lock) {
            s = server;
        }
        if (s != null) {
            s.awaitTermination();
        }
    }

    /**
     * Stops serving: in-flight calls get up to five seconds, then are cancelled. Releases the
     * event loop threads and removes the socket file. Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            closeQuietly();
        }
    }

    private void closeQuietly() {
        Server s = server;
        server = null;
        if (s != null) {
            s.shutdown();
            try {
                if (!s.awaitTermination(5, TimeUnit.SECONDS)) {
                    s.shutdownNow();
                    s.awaitTermination(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                s.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        shutdownGroups();
        releaseClaim();
    }

    /** Removes the socket file if it is still the one bound here, and releases the path's lock. */
    private void releaseClaim() {
        if (claim != null) {
            claim.close();
            claim = null;
        }
    }

    /** The reason a bind failed: gRPC's "Failed to bind to address" names no reason, its cause does. */
    static String bindProblem(Throwable e) {
        StringBuilder b =
                new StringBuilder(
                        e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            String m = c.getMessage();
            if (m != null && !m.isBlank() && b.indexOf(m) < 0) {
                b.append(": ").append(m);
            }
        }
        return b.toString();
    }

    private void shutdownGroups() {
        for (EventLoopGroup g : new EventLoopGroup[] {boss, workers}) {
            if (g != null) {
                g.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
        boss = null;
        workers = null;
    }

    /** Configures a {@link CriServer}. */
    public static final class Builder {
        private final CriEndpoint endpoint;
        private final List<ServerServiceDefinition> services = new ArrayList<>();
        private final List<ServerInterceptor> interceptors = new ArrayList<>();
        private final List<ServerTransportFilter> transportFilters = new ArrayList<>();
        private HandlerRegistry fallback;
        private Set<PosixFilePermission> socketMode =
                PosixFilePermissions.fromString(DEFAULT_SOCKET_MODE);
        private int maxInboundMessageSize = CriChannels.DEFAULT_MAX_MESSAGE_SIZE;
        private Executor executor;

        private Builder(CriEndpoint endpoint) {
            this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
        }

        /**
         * @param service a service implementation to serve
         * @return this builder
         */
        public Builder addService(BindableService service) {
            services.add(service.bindService());
            return this;
        }

        /**
         * @param service a service definition to serve
         * @return this builder
         */
        public Builder addService(ServerServiceDefinition service) {
            services.add(Objects.requireNonNull(service, "service"));
            return this;
        }

        /**
         * @param interceptor applied to every call on every service (the last added runs first)
         * @return this builder
         */
        public Builder intercept(ServerInterceptor interceptor) {
            interceptors.add(Objects.requireNonNull(interceptor, "interceptor"));
            return this;
        }

        /**
         * @param filter told of every client connection when it is ready and when it ends (to
         *     count or audit connections)
         * @return this builder
         */
        public Builder addTransportFilter(ServerTransportFilter filter) {
            transportFilters.add(Objects.requireNonNull(filter, "filter"));
            return this;
        }

        /**
         * @param registry consulted for methods no added service has (a proxy's raw pass-through)
         * @return this builder
         */
        public Builder fallbackHandlerRegistry(HandlerRegistry registry) {
            this.fallback = registry;
            return this;
        }

        /**
         * @param mode socket file mode, symbolic ({@code rw-rw----}) or octal ({@code 0660}, {@code 660})
         * @return this builder
         * @throws IllegalArgumentException for a malformed mode
         */
        public Builder socketMode(String mode) {
            this.socketMode = UnixSockets.parseMode(mode);
            return this;
        }

        /**
         * @param bytes largest inbound message accepted (default 16 MiB)
         * @return this builder
         */
        public Builder maxInboundMessageSize(int bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException(
                        "maxInboundMessageSize must be positive: " + bytes);
            }
            this.maxInboundMessageSize = bytes;
            return this;
        }

        /**
         * @param executor runs the service handlers (default: gRPC's shared cached pool)
         * @return this builder
         */
        public Builder executor(Executor executor) {
            this.executor = executor;
            return this;
        }

        /** @return the server, not yet started */
        public CriServer build() {
            return new CriServer(this);
        }
    }
}
