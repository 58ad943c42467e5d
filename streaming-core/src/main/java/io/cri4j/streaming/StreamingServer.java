package io.cri4j.streaming;

import io.cri4j.cri.internal.NettyTransport;
import io.cri4j.cri.internal.http.RequestDeadline;
import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.AttachResponse;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecResponse;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.cri.v1.PortForwardResponse;
import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.RequestCache;
import io.cri4j.streaming.internal.ServerContext;
import io.cri4j.streaming.internal.SessionLimiter;
import io.cri4j.streaming.internal.StreamingHttpHandler;
import io.grpc.Status;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;

/**
 * A kubelet-compatible streaming server. A CRI runtime answers {@code Exec}, {@code Attach} and
 * {@code PortForward} with {@link #getExec}, {@link #getAttach} and {@link #getPortForward}: each
 * validates the request like kubelet's streaming server, caches it under a single-use token and
 * returns the URL that kubelet (or any client) then opens with SPDY/3.1 or WebSocket. The sessions
 * run on a {@link StreamingRuntime}.
 *
 * <pre>{@code
 * try (StreamingServer server = StreamingServer.builder(runtime).build().start()) {
 *   ExecResponse r = server.getExec(execRequest);   // r.getUrl(): http://127.0.0.1:PORT/exec/TOKEN
 * }
 * }</pre>
 *
 * <p>Errors of the {@code get*} methods are gRPC {@link io.grpc.StatusRuntimeException}s
 * (INVALID_ARGUMENT, RESOURCE_EXHAUSTED when too many URLs are outstanding), so a CRI service can
 * pass them on unchanged. Closing the server closes every connection and stops the runtime threads.
 */
public final class StreamingServer implements AutoCloseable {
    private final Builder b;
    private final RequestCache cache;
    private final ExecutorService executor;
    private final SessionLimiter sessions;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private volatile URI baseUrl;
    private volatile InetSocketAddress address;
    private final AtomicInteger state = new AtomicInteger(); // 0 new, 1 started, 2 closed

    /** Caches {@code request} for its URL; a full cache is recorded and fails. */
    private String token(Object request) {
        try {
            return cache.insert(request);
        } catch (io.grpc.StatusRuntimeException e) {
            sessions.meters().tokenRejected("cache_full");
            throw e;
        }
    }

    private StreamingServer(Builder b) {
        this.b = b;
        this.cache = new RequestCache(b.tokenTtl, b.maxInFlight);
        this.sessions = new SessionLimiter(b.maxConcurrentSessions);
        this.sessions.meters(
                io.cri4j.streaming.internal.StreamingMeters.of(
                        b.meterRegistry, sessions::active, cache::size));
        AtomicInteger n = new AtomicInteger();
        this.executor =
                new ThreadPoolExecutor(
                        0,
                        b.maxConcurrentSessions,
                        30,
                        TimeUnit.SECONDS,
                        new SynchronousQueue<>(),
                        r -> {
                            Thread t = new Thread(r, "cri4j-streaming-" + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
    }

    /** A builder for a server that serves sessions on {@code runtime}. */
    public static Builder builder(StreamingRuntime runtime) {
        return new Builder(runtime);
    }

    /**
     * Binds and starts serving.
     *
     * @return this server
     * @throws IOException when the address cannot be bound
     */
    public StreamingServer start() throws IOException {
        if (!state.compareAndSet(0, 1)) {
            throw new IllegalStateException("server already started or closed");
        }
        SslContext ssl =
                b.sslContext == null
                        ? null
                        : new JdkSslContext(
                                b.sslContext,
                                false,
                                null,
                                io.netty.handler.ssl.IdentityCipherSuiteFilter.INSTANCE,
                                null,
                                b.requireClientCertificate ? ClientAuth.REQUIRE : ClientAuth.NONE,
                                null,
                                false);
        NettyTransport.Kind transport = NettyTransport.tcp();
        boss = transport.newGroup(1, "cri4j-streaming-accept");
        workers = transport.newGroup(b.ioThreads, "cri4j-streaming-io");
        ServerContext ctx =
                new ServerContext(
                        b.runtime,
                        executor,
                        cache,
                        pathPrefix(),
                        b.streamCreationTimeout,
                        b.idleTimeout,
                        b.remoteCommandProtocols,
                        b.portForwardProtocols,
                        b.authorizer,
                        sessions);
        try {
            Channel server =
                    new ServerBootstrap()
                            .group(boss, workers)
                            .channel(transport.serverChannelType())
                            .childOption(ChannelOption.TCP_NODELAY, true)
                            .childOption(
                                    ChannelOption.WRITE_BUFFER_WATER_MARK,
                                    new WriteBufferWaterMark(256 * 1024, 1024 * 1024))
                            .childHandler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel ch) {
                                            channels.add(ch);
                                            if (ssl != null) {
                                                ch.pipeline()
                                                        .addLast("ssl", ssl.newHandler(ch.alloc()));
                                            }
                                            // A silent connection is closed after the stream
                                            // creation timeout,
                                            ch.pipeline()
                                                    .addLast(
                                                            StreamingHttpHandler.HTTP_IDLE,
                                                            new io.netty.handler.timeout
                                                                    .IdleStateHandler(
                                                                    b.streamCreationTimeout
                                                                            .toMillis(),
                                                                    0,
                                                                    0,
                                                                    TimeUnit.MILLISECONDS));
                                            ch.pipeline()
                                                    .addLast(
                                                            StreamingHttpHandler.CODEC,
                                                            new HttpServerCodec());
                                            // and a request must be complete within the request
                                            // timeout, however it trickles in.
                                            ch.pipeline()
                                                    .addLast(
                                                            RequestDeadline.NAME,
                                                            new RequestDeadline(
                                                                    b.requestTimeout.toNanos()));
                                            ch.pipeline()
                                                    .addLast(
                                                            StreamingHttpHandler.AGGREGATOR,
                                                            new HttpObjectAggregator(64 * 1024));
                                            ch.pipeline()
                                                    .addLast(
                                                            StreamingHttpHandler.NAME,
                                                            new StreamingHttpHandler(ctx));
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
                    "cannot bind streaming server to "
                            + b.bindAddress
                            + ": "
                            + io.cri4j.cri.internal.IoErrors.reason(e),
                    e);
        }
        baseUrl = resolveBaseUrl();
        return this;
    }

    private String pathPrefix() {
        if (b.pathPrefix != null) {
            return b.pathPrefix;
        }
        if (b.baseUrl != null) {
            return directoryOf(b.baseUrl.getPath());
        }
        return "/";
    }

    private URI resolveBaseUrl() {
        if (b.baseUrl != null) {
            URI u = b.baseUrl;
            String path = u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath();
            int port = u.getPort() == 0 ? address.getPort() : u.getPort();
            String host =
                    u.getHost().contains(":") && !u.getHost().startsWith("[")
                            ? "[" + u.getHost() + "]"
                            : u.getHost();
            return URI.create(u.getScheme() + "://" + host + (port > 0 ? ":" + port : "") + path);
        }
        String scheme = b.sslContext != null ? "https" : "http";
        InetAddress a = address.getAddress();
        String host =
                a.isAnyLocalAddress()
                        ? InetAddress.getLoopbackAddress().getHostAddress()
                        : a.getHostAddress();
        if (host.contains(":")) {
            host = "[" + host + "]";
        }
        return URI.create(scheme + "://" + host + ":" + address.getPort() + pathPrefix());
    }

    static String directoryOf(String path) {
        if (path == null || path.isEmpty()) {
            return "/";
        }
        int i = path.lastIndexOf('/');
        return i < 0 ? "/" : path.substring(0, i + 1);
    }

    /** The bound address (the real port when bound to port 0). */
    public InetSocketAddress address() {
        requireStarted();
        return address;
    }

    /** The base of the URLs handed out, e.g. {@code http://127.0.0.1:41234/}. */
    public URI baseUrl() {
        requireStarted();
        return baseUrl;
    }

    /** Number of unconsumed tokens. */
    public int pendingRequests() {
        return cache.size();
    }

    /** Number of connections currently serving a session. */
    public int activeSessions() {
        return sessions.active();
    }

    /**
     * Validates an exec request like kubelet and returns the URL that serves it.
     *
     * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT for a bad request, RESOURCE_EXHAUSTED
     *     when too many URLs are outstanding, FAILED_PRECONDITION before start or after close
     */
    public ExecResponse getExec(ExecRequest req) {
        Objects.requireNonNull(req, "req");
        if (req.getContainerId().isEmpty()) {
            throw invalid("missing required container_id");
        }
        if (req.getTty() && req.getStderr()) {
            throw invalid("tty and stderr cannot both be true");
        }
        if (!req.getStdin() && !req.getStdout() && !req.getStderr()) {
            throw invalid("one of stdin, stdout, or stderr must be set");
        }
        return ExecResponse.newBuilder()
                .setUrl(url(StreamKind.EXEC, token(requireRunning(req))))
                .build();
    }

    /** Validates an attach request like kubelet and returns the URL that serves it (see getExec). */
    public AttachResponse getAttach(AttachRequest req) {
        Objects.requireNonNull(req, "req");
        if (req.getContainerId().isEmpty()) {
            throw invalid("missing required container_id");
        }
        if (req.getTty() && req.getStderr()) {
            throw invalid("tty and stderr cannot both be true");
        }
        if (!req.getStdin() && !req.getStdout() && !req.getStderr()) {
            throw invalid("one of stdin, stdout, and stderr must be set");
        }
        return AttachResponse.newBuilder()
                .setUrl(url(StreamKind.ATTACH, token(requireRunning(req))))
                .build();
    }

    /** Validates a port-forward request like kubelet and returns the URL that serves it. */
    public PortForwardResponse getPortForward(PortForwardRequest req) {
        Objects.requireNonNull(req, "req");
        if (req.getPodSandboxId().isEmpty()) {
            throw invalid("missing required pod_sandbox_id");
        }
        for (int p : req.getPortList()) {
            if (p < 1 || p > 65535) {
                throw invalid("invalid port " + p + ": must be in 1..65535");
            }
        }
        return PortForwardResponse.newBuilder()
                .setUrl(url(StreamKind.PORT_FORWARD, token(requireRunning(req))))
                .build();
    }

    private <T> T requireRunning(T req) {
        if (state.get() != 1) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "streaming server is " + (state.get() == 0 ? "not started" : "closed"))
                    .asRuntimeException();
        }
        return req;
    }

    private String url(StreamKind kind, String token) {
        return baseUrl.resolve(kind.pathSegment() + "/" + token).toString();
    }

    private static io.grpc.StatusRuntimeException invalid(String msg) {
        return Status.INVALID_ARGUMENT.withDescription(msg).asRuntimeException();
    }

    private void requireStarted() {
        if (address == null) {
            throw new IllegalStateException("server not started");
        }
    }

    /** Closes the listener and all connections, and interrupts running sessions. Idempotent. */
    @Override
    public void close() {
        if (state.getAndSet(2) == 2) {
            return;
        }
        channels.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        executor.shutdownNow();
        if (boss != null) {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        }
        if (workers != null) {
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS)
                    .awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        if (boss != null) {
            boss.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Configuration of a {@link StreamingServer}; defaults follow kubelet's DefaultConfig. */
    public static final class Builder {
        private final StreamingRuntime runtime;
        private InetSocketAddress bindAddress =
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        private URI baseUrl;
        private String pathPrefix;
        private SSLContext sslContext;
        private boolean requireClientCertificate;
        private Duration streamCreationTimeout = Duration.ofSeconds(30);
        private Duration requestTimeout = Duration.ofSeconds(30);
        private Duration idleTimeout = Duration.ofHours(4);
        private Duration tokenTtl = Duration.ofMinutes(1);
        private int maxInFlight = 1000;
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional
        private int maxConcurrentSessions = 1000;
        private int ioThreads =
                Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
        private List<String> remoteCommandProtocols = Protocols.DEFAULT_REMOTE_COMMAND;
        private List<String> portForwardProtocols = Protocols.DEFAULT_PORT_FORWARD;
        private StreamAuthorizer authorizer;

        private Builder(StreamingRuntime runtime) {
            this.runtime = Objects.requireNonNull(runtime, "runtime");
        }

        /** Address to listen on; port 0 picks a free port. Default 127.0.0.1:0. */
        public Builder bindAddress(InetSocketAddress address) {
            this.bindAddress = Objects.requireNonNull(address, "address");
            return this;
        }

        /**
         * Base of the URLs handed out (scheme, host, port, optional path ending in '/'); default is
         * derived from the bound address. A port of 0 is replaced by the bound port.
         */
        public Builder baseUrl(URI baseUrl) {
            Objects.requireNonNull(baseUrl, "baseUrl");
            if (baseUrl.getScheme() == null || baseUrl.getHost() == null) {
                throw new IllegalArgumentException("baseUrl needs a scheme and a host: " + baseUrl);
            }
            this.baseUrl = baseUrl;
            return this;
        }

        /**
         * Path under which the server serves {@code exec/}, {@code attach/} and {@code portforward/}
         * (must start and end with '/'); default: the directory of the base URL's path, or "/".
         */
        public Builder pathPrefix(String prefix) {
            if (prefix == null || !prefix.startsWith("/") || !prefix.endsWith("/")) {
                throw new IllegalArgumentException(
                        "path prefix must start and end with '/': " + prefix);
            }
            this.pathPrefix = prefix;
            return this;
        }

        /** Serves HTTPS with this context. */
        public Builder tls(SSLContext context, boolean requireClientCertificate) {
            this.sslContext = Objects.requireNonNull(context, "context");
            this.requireClientCertificate = requireClientCertificate;
            return this;
        }

        /** How long a client may take to create its SPDY streams. Default 30 s. */
        public Builder streamCreationTimeout(Duration d) {
            this.streamCreationTimeout = positive(d, "streamCreationTimeout");
            return this;
        }

        /**
         * How long a connection may take to send a complete request head, from when it opens (or
         * its last request was read): the clock does not start again with each byte, so a client
         * that drips its request in is cut off, as with Go's {@code http.Server.ReadHeaderTimeout}.
         * Default 30 s.
         */
        public Builder requestTimeout(Duration d) {
            this.requestTimeout = positive(d, "requestTimeout");
            return this;
        }

        /** Idle time after which a streaming connection is closed. Default 4 h. */
        public Builder idleTimeout(Duration d) {
            this.idleTimeout = positive(d, "idleTimeout");
            return this;
        }

        /** Lifetime of an unused URL. Default 1 min. */
        public Builder tokenTtl(Duration d) {
            this.tokenTtl = positive(d, "tokenTtl");
            return this;
        }

        /** Most URLs outstanding at once; beyond it get* fail with RESOURCE_EXHAUSTED. Default 1000. */
        public Builder maxInFlight(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxInFlight must be at least 1: " + n);
            }
            this.maxInFlight = n;
            return this;
        }

        /**
         * Records {@code cri4j_streaming_sessions_total{kind,transport,protocol}}, {@code
         * cri4j_streaming_sessions_active}, {@code cri4j_streaming_sessions_rejected_total} (429),
         * {@code cri4j_streaming_tokens} and {@code cri4j_streaming_token_rejections_total{reason}}
         * ({@code cache_full}: a {@code get*} refused; {@code unknown}: a request with a token not
         * in the cache, 404) and {@code cri4j_streaming_bytes_total{kind,transport,direction}}
         * (each session's bytes on the wire) into {@code registry}; without one nothing is recorded
         * and Micrometer need not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = java.util.Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Most sessions served at once (also the bound of the runtime thread pool); beyond it
         * connections get HTTP 429. Default 1000.
         */
        public Builder maxConcurrentSessions(int n) {
            if (n < 1) {
                throw new IllegalArgumentException(
                        "maxConcurrentSessions must be at least 1: " + n);
            }
            this.maxConcurrentSessions = n;
            return this;
        }

        /** Network event loop threads. Default min(4, cores). */
        public Builder ioThreads(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("ioThreads must be at least 1: " + n);
            }
            this.ioThreads = n;
            return this;
        }

        /**
         * remotecommand protocols accepted over SPDY, e.g. {@code v4.channel.k8s.io}; default v5..v1.
         * WebSocket {@code v5.channel.k8s.io} is offered only when v5 is in this list.
         */
        public Builder remoteCommandProtocols(List<String> protocols) {
            this.remoteCommandProtocols = nonEmpty(protocols, "remoteCommandProtocols");
            return this;
        }

        /** Port-forward protocols; default {@code portforward.k8s.io}. */
        public Builder portForwardProtocols(List<String> protocols) {
            this.portForwardProtocols = nonEmpty(protocols, "portForwardProtocols");
            return this;
        }

        /** Authorizes each streaming request after its token was found (403 when refused). */
        public Builder authorizer(StreamAuthorizer authorizer) {
            this.authorizer = authorizer;
            return this;
        }

        /** Builds an unstarted server. */
        public StreamingServer build() {
            return new StreamingServer(this);
        }

        private static Duration positive(Duration d, String what) {
            if (d == null || d.isZero() || d.isNegative()) {
                throw new IllegalArgumentException(what + " must be positive: " + d);
            }
            return d;
        }

        private static List<String> nonEmpty(List<String> l, String what) {
            if (l == null || l.isEmpty() || l.stream().anyMatch(s -> s == null || s.isBlank())) {
                throw new IllegalArgumentException(
                        what + " must be a non-empty list of names: " + l);
            }
            return List.copyOf(l);
        }
    }
}
