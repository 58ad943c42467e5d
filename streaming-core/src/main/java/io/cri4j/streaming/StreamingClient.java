package io.cri4j.streaming;

import io.cri4j.cri.internal.NettyTransport;
import io.cri4j.streaming.internal.Protocols;
import io.cri4j.streaming.internal.Upgrader;
import io.cri4j.streaming.internal.portforward.LocalForwarder;
import io.cri4j.streaming.internal.portforward.SpdyPortForwardClient;
import io.cri4j.streaming.internal.remotecommand.SpdyCommandClient;
import io.cri4j.streaming.internal.remotecommand.WsCommandClient;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshakerFactory;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketFrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * A Java client for streaming URLs (ours, kubelet's, containerd's or CRI-O's): exec and attach
 * with exit codes, TTY and resize, and port-forward, over SPDY/3.1 (what every CRI streaming
 * server speaks) or WebSocket.
 *
 * <pre>{@code
 * try (StreamingClient client = StreamingClient.builder().build();
 *      RemoteCommand cmd = client.exec(URI.create(execResponse.getUrl()),
 *          new CommandOptions(false, true, true, false))) {
 *   String out = new String(cmd.stdout().readAllBytes(), UTF_8);
 *   int code = cmd.waitFor();
 * }
 * }</pre>
 */
public final class StreamingClient implements AutoCloseable {
    /** The transport of a session. */
    public enum Transport {
        /** HTTP upgrade to SPDY/3.1 with X-Stream-Protocol-Version negotiation. */
        SPDY,
        /** WebSocket with {@code v5.channel.k8s.io} / {@code v4.channel.k8s.io} (exec and attach). */
        WEBSOCKET
    }

    private final Builder b;
    private final EventLoopGroup group;
    private final Upgrader upgrader;
    private final AtomicBoolean closed = new AtomicBoolean();

    private StreamingClient(Builder b) throws SSLException {
        this.b = b;
        SslContext ssl = null;
        if (b.trustManagerFactory != null) {
            ssl = SslContextBuilder.forClient().trustManager(b.trustManagerFactory).build();
        }
        NettyTransport.Kind transport = NettyTransport.tcp();
        this.group = transport.newGroup(b.ioThreads, "cri4j-streaming-client");
        this.upgrader = new Upgrader(group, transport.channelType(), ssl, b.timeout);
    }

    /** A builder with defaults: SPDY, 30 s timeouts, no TLS trust configured. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts an exec or attach session on a URL from CRI {@code Exec} or {@code Attach}.
     *
     * @throws StreamingException when the server refuses (with its HTTP status)
     */
    public RemoteCommand exec(URI url, CommandOptions options) throws IOException {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(options, "options");
        return b.transport == Transport.WEBSOCKET
                ? execWebSocket(url, options)
                : execSpdy(url, options);
    }

    private RemoteCommand execSpdy(URI url, CommandOptions options) throws IOException {
        SpdySession session = upgradeSpdy(url, b.remoteCommandProtocols);
        String protocol = (String) session.channel().attr(NEGOTIATED).get();
        try {
            return new SpdyCommandClient(session, protocol, options, b.timeout.toMillis());
        } catch (IOException | RuntimeException e) {
            session.close();
            throw e;
        }
    }

    private static final io.netty.util.AttributeKey<Object> NEGOTIATED =
            io.netty.util.AttributeKey.valueOf("cri4j.negotiated");

    private SpdySession upgradeSpdy(URI url, List<String> protocols) throws IOException {
        Channel ch = upgrader.connect(url);
        FullHttpRequest req = Upgrader.request(HttpMethod.POST, url);
        req.headers().set(HttpHeaderNames.CONNECTION, "Upgrade");
        req.headers().set(HttpHeaderNames.UPGRADE, Protocols.SPDY_31);
        for (String p : protocols) {
            req.headers().add(Protocols.HEADER_PROTOCOL_VERSION, p);
        }
        SpdySession session = new SpdySession(false, s -> s.reset());
        Upgrader.Upgraded up =
                upgrader.exchange(
                        ch,
                        req,
                        r -> {
                            ChannelPipeline p = ch.pipeline();
                            p.addAfter(Upgrader.CODEC, "spdy-codec", SpdySession.newCodec());
                            p.addAfter("spdy-codec", "spdy-session", session);
                            p.remove(Upgrader.AGGREGATOR);
                            p.remove(Upgrader.CODEC);
                        });
        FullHttpResponse resp = up.response();
        try {
            if (!HttpResponseStatus.SWITCHING_PROTOCOLS.equals(resp.status())) {
                ch.close();
                throw Upgrader.refused(resp);
            }
            String negotiated = resp.headers().get(Protocols.HEADER_PROTOCOL_VERSION, "");
            if (!negotiated.isEmpty() && !protocols.contains(negotiated)) {
                ch.close();
                throw new StreamingException(
                        "server chose protocol " + negotiated + ", not one of " + protocols, 0);
            }
            ch.attr(NEGOTIATED).set(negotiated.isEmpty() ? Protocols.V1 : negotiated);
            return session;
        } finally {
            resp.release();
        }
    }

    private static final String WS_FRAME_ENCODER = "cri4j-ws-encoder";
    private static final String WS_SPLITTER = "cri4j-ws-channel-splitter";
    private static final int MAX_FRAME_PAYLOAD = 4 << 20;

    /**
     * Our own client frame encoder (masked, RFC 6455), installed when the 101 arrives. Netty's
     * handshaker adds its encoder from a listener on the handshake request's write; when that
     * listener runs after {@code finishHandshake} has taken the HTTP codec out, it finds no codec
     * and adds no encoder, and every frame we write is then dropped at the pipeline's head (seen
     * as a session whose stdin and resize never arrive). Netty's encoder only takes
     * {@code WebSocketFrame}s, so when it is there too, nothing is encoded twice.
     */
    private static io.netty.channel.ChannelHandler maskingFrameEncoder() {
        return new io.netty.handler.codec.http.websocketx.WebSocket13FrameEncoder(true);
    }

    private RemoteCommand execWebSocket(URI url, CommandOptions options) throws IOException {
        return upgradeWebSocket(
                url,
                String.join(",", b.webSocketProtocols),
                true,
                (p, protocol) -> {
                    WsCommandClient client =
                            new WsCommandClient(
                                    p.channel(),
                                    protocol.isEmpty() ? Protocols.V1 : protocol,
                                    options);
                    p.addLast("ws-command", client);
                    return client;
                });
    }

    /**
     * Upgrades a new connection to WebSocket and installs the session handlers. The pipeline is
     * switched inside the read that delivers the 101, so frames arriving in the same read are
     * decoded as WebSocket frames and not lost.
     *
     * @param splitChannels whether stdout and stderr messages bypass Netty's frame decoder (see
     *     {@code WsChannelSplitter}; exec and attach sessions)
     * @param install adds the session's handlers (after the frame encoder and aggregator), given
     *     the pipeline and the negotiated subprotocol, and returns the session
     */
    private <T> T upgradeWebSocket(
            URI url,
            String subprotocols,
            boolean splitChannels,
            java.util.function.BiFunction<ChannelPipeline, String, T> install)
            throws IOException {
        Channel ch = upgrader.connect(url);
        String scheme = "https".equalsIgnoreCase(url.getScheme()) ? "wss" : "ws";
        URI wsUri = URI.create(scheme + url.toString().substring(url.getScheme().length()));
        WebSocketClientHandshaker hs =
                WebSocketClientHandshakerFactory.newHandshaker(
                        wsUri,
                        WebSocketVersion.V13,
                        subprotocols,
                        false,
                        new DefaultHttpHeaders(),
                        MAX_FRAME_PAYLOAD);
        java.util.concurrent.CompletableFuture<T> result =
                new java.util.concurrent.CompletableFuture<>();
        ch.pipeline()
                .addLast(
                        Upgrader.HANDLER,
                        new io.netty.channel.SimpleChannelInboundHandler<FullHttpResponse>() {
                            @Override
                            protected void channelRead0(
                                    io.netty.channel.ChannelHandlerContext ctx,
                                    FullHttpResponse r) {
                                if (!HttpResponseStatus.SWITCHING_PROTOCOLS.equals(r.status())) {
                                    result.completeExceptionally(Upgrader.refused(r));
                                    ctx.close();
                                    return;
                                }
                                try {
                                    ChannelPipeline p = ctx.pipeline();
                                    p.addLast(WS_FRAME_ENCODER, maskingFrameEncoder());
                                    p.addLast(
                                            "ws-aggregator", new WebSocketFrameAggregator(4 << 20));
                                    T session =
                                            install.apply(
                                                    p,
                                                    r.headers().get("Sec-WebSocket-Protocol", ""));
                                    p.remove(this);
                                    hs.finishHandshake(ch, r);
                                    if (splitChannels) {
                                        // before Netty's decoder, which finishHandshake put right
                                        // after the HTTP
                                        // codec: the bytes after the 101 in this read reach the
                                        // splitter first
                                        p.addBefore(
                                                p.context(WebSocketFrameDecoder.class).name(),
                                                WS_SPLITTER,
                                                WsCommandClient.channelSplitter(MAX_FRAME_PAYLOAD));
                                    }
                                    result.complete(session);
                                } catch (RuntimeException e) {
                                    result.completeExceptionally(
                                            new StreamingException(
                                                    "WebSocket handshake failed: " + e.getMessage(),
                                                    e));
                                    ctx.close();
                                }
                            }

                            @Override
                            public void channelInactive(
                                    io.netty.channel.ChannelHandlerContext ctx) {
                                result.completeExceptionally(
                                        new StreamingException(
                                                "connection closed before the upgrade response",
                                                0));
                                ctx.fireChannelInactive();
                            }

                            @Override
                            public void exceptionCaught(
                                    io.netty.channel.ChannelHandlerContext ctx, Throwable cause) {
                                result.completeExceptionally(
                                        new StreamingException(
                                                "upgrade failed: " + cause.getMessage(), cause));
                                ctx.close();
                            }
                        });
        hs.handshake(ch);
        try {
            return result.get(b.timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            ch.close();
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new StreamingException("WebSocket upgrade failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ch.close();
            throw new java.io.InterruptedIOException("interrupted while upgrading");
        } catch (java.util.concurrent.TimeoutException e) {
            ch.close();
            throw new StreamingException("no WebSocket upgrade response within " + b.timeout, e);
        }
    }

    /**
     * Opens a port-forward session on a URL from CRI {@code PortForward}: SPDY, or with the
     * WEBSOCKET transport SPDY tunnelled in WebSocket ({@code SPDY/3.1+portforward.k8s.io}, as
     * kubectl 1.31+ speaks to an API server; CRI runtimes themselves usually offer only SPDY).
     */
    public PortForwardSession portForward(URI url) throws IOException {
        Objects.requireNonNull(url, "url");
        SpdySession session =
                b.transport == Transport.WEBSOCKET
                        ? upgradeTunnel(url)
                        : upgradeSpdy(url, List.of(Protocols.PORT_FORWARD));
        return new SpdyPortForwardClient(session, b.timeout.toMillis());
    }

    private SpdySession upgradeTunnel(URI url) throws IOException {
        SpdySession session = new SpdySession(false, s -> s.reset());
        return upgradeWebSocket(
                url,
                Protocols.SPDY_TUNNEL_PREFIX + Protocols.PORT_FORWARD,
                false,
                (p, protocol) -> {
                    p.addLast(
                            "ws-tunnel",
                            new io.cri4j.streaming.internal.websocket.WsTunnelBridge());
                    p.addLast("spdy-codec", SpdySession.newCodec());
                    p.addLast("spdy-session", session);
                    return session;
                });
    }

    /**
     * Listens on {@code listen} (port 0 picks one) and forwards every accepted connection to
     * {@code remotePort} of the pod sandbox behind {@code url}.
     */
    public LocalPortForward forwardLocal(URI url, int remotePort, InetSocketAddress listen)
            throws IOException {
        PortForwardSession session = portForward(url);
        try {
            return new LocalForwarder(session, remotePort, listen);
        } catch (IOException e) {
            session.close();
            throw e;
        }
    }

    /** Closes the client's event loops (sessions still open are dropped). Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS)
                    .awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    /** Configuration of a {@link StreamingClient}. */
    public static final class Builder {
        private Transport transport = Transport.SPDY;
        private Duration timeout = Duration.ofSeconds(30);
        private TrustManagerFactory trustManagerFactory;
        private int ioThreads = 1;
        private List<String> remoteCommandProtocols =
                List.of(Protocols.V4, Protocols.V3, Protocols.V2, Protocols.V1);
        private List<String> webSocketProtocols = List.of(Protocols.V5);

        private Builder() {}

        /** SPDY (default) or WebSocket (exec/attach channels; port-forward as SPDY in WebSocket). */
        public Builder transport(Transport t) {
            this.transport = Objects.requireNonNull(t, "transport");
            return this;
        }

        /** Connect, upgrade and stream-reply timeout. Default 30 s. */
        public Builder timeout(Duration d) {
            if (d == null || d.isZero() || d.isNegative()) {
                throw new IllegalArgumentException("timeout must be positive: " + d);
            }
            this.timeout = d;
            return this;
        }

        /** Trust for https URLs. */
        public Builder trust(TrustManagerFactory tmf) {
            this.trustManagerFactory = Objects.requireNonNull(tmf, "tmf");
            return this;
        }

        /** Accepts any server certificate (tests only; the streaming URL is still secret). */
        public Builder insecureSkipTlsVerify() {
            this.trustManagerFactory = InsecureTrustManagerFactory.INSTANCE;
            return this;
        }

        /** SPDY remotecommand protocols offered, most preferred first. Default v4, v3, v2, v1. */
        public Builder remoteCommandProtocols(List<String> protocols) {
            if (protocols == null || protocols.isEmpty()) {
                throw new IllegalArgumentException("at least one protocol is needed");
            }
            this.remoteCommandProtocols = List.copyOf(protocols);
            return this;
        }

        /**
         * WebSocket subprotocols offered, most preferred first. Default v5 only, like client-go:
         * {@code v4.channel.k8s.io} cannot tell the server that stdin ended (no CLOSE signal), so
         * a command reading stdin to EOF would never finish; offer v4 only for sessions that do
         * not need stdin EOF.
         */
        public Builder webSocketProtocols(List<String> protocols) {
            if (protocols == null
                    || protocols.isEmpty()
                    || protocols.stream()
                            .anyMatch(p -> p.startsWith("base64") || p.contains(".base64."))) {
                throw new IllegalArgumentException("binary channel protocols only: " + protocols);
            }
            this.webSocketProtocols = List.copyOf(protocols);
            return this;
        }

        /** Event loop threads. Default 1. */
        public Builder ioThreads(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("ioThreads must be at least 1");
            }
            this.ioThreads = n;
            return this;
        }

        public StreamingClient build() {
            try {
                return new StreamingClient(this);
            } catch (SSLException e) {
                throw new IllegalStateException("cannot set up TLS: " + e.getMessage(), e);
            }
        }
    }
}
