package io.cri4j.streaming.internal;

import io.cri4j.cri.internal.http.RequestDeadline;
import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.StreamAuthorizer;
import io.cri4j.streaming.StreamKind;
import io.cri4j.streaming.internal.remotecommand.CommandRequest;
import io.cri4j.streaming.internal.remotecommand.SpdyRemoteCommand;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.timeout.IdleStateHandler;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes {@code <prefix>exec|attach|portforward/<token>} (GET or POST, as kubelet), spends the
 * token, authorizes, negotiates the protocol and upgrades the connection to SPDY/3.1 or WebSocket.
 * Never logs the request URI (it carries the token).
 */
public final class StreamingHttpHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(StreamingHttpHandler.class);
    public static final String CODEC = "http-codec";
    public static final String AGGREGATOR = "http-aggregator";
    public static final String NAME = "streaming-http";
    public static final String HTTP_IDLE = "http-idle";

    private final ServerContext ctx;

    public StreamingHttpHandler(ServerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext c, FullHttpRequest req) {
        RequestDeadline.requestRead(c.pipeline());
        if (!req.decoderResult().isSuccess()) {
            HttpResponses.send(c, HttpResponseStatus.BAD_REQUEST, "bad request");
            return;
        }
        QueryStringDecoder q = new QueryStringDecoder(req.uri());
        String path = q.path();
        String prefix = ctx.pathPrefix();
        if (!path.startsWith(prefix)) {
            HttpResponses.send(c, HttpResponseStatus.NOT_FOUND, "404 page not found");
            return;
        }
        String[] parts = path.substring(prefix.length()).split("/", -1);
        StreamKind kind = null;
        if (parts.length == 2 && !parts[1].isEmpty()) {
            for (StreamKind k : StreamKind.values()) {
                if (k.pathSegment().equals(parts[0])) {
                    kind = k;
                }
            }
        }
        if (kind == null) {
            HttpResponses.send(c, HttpResponseStatus.NOT_FOUND, "404 page not found");
            return;
        }
        if (!HttpMethod.GET.equals(req.method()) && !HttpMethod.POST.equals(req.method())) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.METHOD_NOT_ALLOWED,
                    "405: Method Not Allowed",
                    Map.of("Allow", List.of("GET, POST")));
            return;
        }
        Object cached = ctx.cache().consume(parts[1]);
        String target;
        if (kind == StreamKind.EXEC && cached instanceof ExecRequest e) {
            target = e.getContainerId();
        } else if (kind == StreamKind.ATTACH && cached instanceof AttachRequest a) {
            target = a.getContainerId();
        } else if (kind == StreamKind.PORT_FORWARD && cached instanceof PortForwardRequest p) {
            target = p.getPodSandboxId();
        } else {
            ctx.sessions().meters().tokenRejected("unknown");
            HttpResponses.send(c, HttpResponseStatus.NOT_FOUND, "404 page not found");
            return;
        }
        StreamAuthorizer auth = ctx.authorizer();
        if (auth != null) {
            boolean allowed;
            try {
                allowed =
                        auth.authorize(
                                new StreamAuthorizer.Request(
                                        kind,
                                        target,
                                        c.channel().remoteAddress(),
                                        headerMap(req.headers())));
            } catch (RuntimeException ex) {
                LOG.warn("stream authorizer failed: {}", ex.toString());
                allowed = false;
            }
            if (!allowed) {
                HttpResponses.send(
                        c,
                        HttpResponseStatus.FORBIDDEN,
                        "forbidden: " + kind.pathSegment() + " request was not authorized");
                return;
            }
        }
        if (isWebSocket(req.headers())) {
            WebSocketUpgrade.handle(c, ctx, req, kind, cached, q);
            return;
        }
        upgradeSpdy(c, req, kind, cached);
    }

    static boolean isWebSocket(HttpHeaders h) {
        String up = h.get(HttpHeaderNames.UPGRADE);
        String conn = h.get(HttpHeaderNames.CONNECTION);
        return up != null
                && up.equalsIgnoreCase("websocket")
                && conn != null
                && conn.toLowerCase(Locale.ROOT).matches("(^|.*,\\s*)upgrade($|\\s*,.*)");
    }

    static Map<String, List<String>> headerMap(HttpHeaders h) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : h) {
            m.computeIfAbsent(e.getKey().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
                    .add(e.getValue());
        }
        return m;
    }

    /** Comma-separated values of all header lines, trimmed, empty ones dropped (upstream). */
    static List<String> commaValues(HttpHeaders h, String name) {
        List<String> out = new ArrayList<>();
        for (String v : h.getAll(name)) {
            for (String p : v.split(",")) {
                String t = p.trim();
                if (!t.isEmpty()) {
                    out.add(t);
                }
            }
        }
        return out;
    }

    private void upgradeSpdy(
            ChannelHandlerContext c, FullHttpRequest req, StreamKind kind, Object cached) {
        List<String> server =
                kind == StreamKind.PORT_FORWARD
                        ? ctx.portForwardProtocols()
                        : ctx.remoteCommandProtocols();
        List<String> client = commaValues(req.headers(), Protocols.HEADER_PROTOCOL_VERSION);
        if (client.isEmpty()) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.BAD_REQUEST,
                    "unable to upgrade: " + Protocols.HEADER_PROTOCOL_VERSION + " is required");
            return;
        }
        String negotiated = null;
        for (String cp : client) {
            if (server.contains(cp)) {
                negotiated = cp;
                break;
            }
        }
        if (negotiated == null) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.FORBIDDEN,
                    "unable to upgrade: unable to negotiate protocol: client supports "
                            + client
                            + ", server accepts "
                            + server,
                    Map.of(Protocols.HEADER_ACCEPTED_VERSIONS, server));
            return;
        }
        String conn = req.headers().get(HttpHeaderNames.CONNECTION, "").toLowerCase(Locale.ROOT);
        String up = req.headers().get(HttpHeaderNames.UPGRADE, "").toLowerCase(Locale.ROOT);
        if (!conn.contains("upgrade") || !up.contains("spdy/3.1")) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.BAD_REQUEST,
                    "unable to upgrade: missing upgrade headers in request");
            return;
        }
        if (!ctx.sessions().tryAcquire(kind, "spdy", negotiated)) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.TOO_MANY_REQUESTS,
                    "maximum number of concurrent streaming sessions exceeded",
                    Map.of("Retry-After", List.of(Long.toString(ctx.cache().ttlSeconds()))));
            return;
        }
        Runnable release = once(ctx.sessions()::release);
        countBytes(c.pipeline(), ctx.sessions().meters().bytes(kind, "spdy"));
        SpdySession session;
        SpdyRemoteCommand rc = null;
        io.cri4j.streaming.internal.portforward.SpdyPortForward pf = null;
        if (kind == StreamKind.PORT_FORWARD) {
            pf =
                    new io.cri4j.streaming.internal.portforward.SpdyPortForward(
                            ctx, ((PortForwardRequest) cached).getPodSandboxId(), release);
            session = new SpdySession(true, pf);
        } else {
            rc = new SpdyRemoteCommand(ctx, commandRequest(kind, cached), negotiated, release);
            session = new SpdySession(true, rc);
        }

        FullHttpResponse resp =
                new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1, HttpResponseStatus.SWITCHING_PROTOCOLS);
        resp.headers().set(HttpHeaderNames.CONNECTION, "Upgrade");
        resp.headers().set(HttpHeaderNames.UPGRADE, Protocols.SPDY_31);
        resp.headers().set(Protocols.HEADER_PROTOCOL_VERSION, negotiated);
        c.writeAndFlush(resp);

        ChannelPipeline p = c.pipeline();
        removeHttpIdle(p);
        p.addAfter(CODEC, "spdy-codec", SpdySession.newCodec());
        p.addAfter("spdy-codec", "idle", idleHandler(ctx));
        p.addAfter("idle", "spdy-session", session);
        p.remove(this);
        if (p.get(AGGREGATOR) != null) {
            p.remove(AGGREGATOR);
        }
        p.remove(CODEC);
        if (rc != null) {
            rc.attach(session);
        } else {
            pf.attach(session);
        }
    }

    static IdleStateHandler idleHandler(ServerContext ctx) {
        return new IdleStateHandler(0, 0, ctx.idleTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    static CommandRequest commandRequest(StreamKind kind, Object cached) {
        if (kind == StreamKind.EXEC) {
            ExecRequest e = (ExecRequest) cached;
            return new CommandRequest(
                    true,
                    e.getContainerId(),
                    List.copyOf(e.getCmdList()),
                    e.getStdin(),
                    e.getStdout(),
                    e.getStderr(),
                    e.getTty());
        }
        AttachRequest a = (AttachRequest) cached;
        return new CommandRequest(
                false,
                a.getContainerId(),
                List.of(),
                a.getStdin(),
                a.getStdout(),
                a.getStderr(),
                a.getTty());
    }

    static Runnable once(Runnable r) {
        java.util.concurrent.atomic.AtomicBoolean done =
                new java.util.concurrent.atomic.AtomicBoolean();
        return () -> {
            if (done.compareAndSet(false, true)) {
                r.run();
            }
        };
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext c, Object evt) {
        if (evt instanceof io.netty.handler.timeout.IdleStateEvent) {
            c.close(); // no complete request in time
            return;
        }
        c.fireUserEventTriggered(evt);
    }

    /** Drops the pre-upgrade read timeout (the upgraded protocol brings its own idle handling). */
    static void removeHttpIdle(ChannelPipeline p) {
        if (p.get(HTTP_IDLE) != null) {
            p.remove(HTTP_IDLE);
        }
        RequestDeadline.remove(p);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        LOG.debug("HTTP connection {} failed: {}", c.channel().remoteAddress(), cause.toString());
        c.close();
    }

    /** Puts a session's byte counter at the front of its pipeline (after TLS), when there is one. */
    static void countBytes(ChannelPipeline p, io.netty.channel.ChannelHandler counter) {
        if (counter == null) {
            return;
        }
        if (p.get("ssl") != null) {
            p.addAfter("ssl", "bytes", counter);
        } else {
            p.addFirst("bytes", counter);
        }
    }
}
