package io.cri4j.streaming.internal;

import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.StreamKind;
import io.cri4j.streaming.internal.portforward.SpdyPortForward;
import io.cri4j.streaming.internal.portforward.WsPortForward;
import io.cri4j.streaming.internal.remotecommand.WsRemoteCommand;
import io.cri4j.streaming.internal.spdy.SpdySession;
import io.cri4j.streaming.internal.websocket.WsTunnelBridge;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshakerFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * WebSocket upgrades: subprotocol negotiation in the client's order (403 when nothing matches, as
 * Go's websocket server), then the remotecommand channels, the port-forward channels, or the
 * SPDY-in-WebSocket port-forward tunnel.
 */
final class WebSocketUpgrade {
    /** Largest aggregated WebSocket message we accept. */
    static final int MAX_MESSAGE = 4 << 20;

    private enum Mode {
        BINARY,
        BASE64,
        TUNNEL
    }

    private record Choice(Mode mode, int version) {}

    private WebSocketUpgrade() {}

    static void handle(
            ChannelHandlerContext c,
            ServerContext ctx,
            FullHttpRequest req,
            StreamKind kind,
            Object cached,
            QueryStringDecoder q) {
        Map<String, Choice> allowed = new LinkedHashMap<>();
        if (kind == StreamKind.PORT_FORWARD) {
            allowed.put("", new Choice(Mode.BINARY, 4));
            allowed.put(Protocols.V4, new Choice(Mode.BINARY, 4));
            allowed.put(Protocols.BASE64_V4, new Choice(Mode.BASE64, 4));
            for (String p : ctx.portForwardProtocols()) {
                allowed.put(Protocols.SPDY_TUNNEL_PREFIX + p, new Choice(Mode.TUNNEL, 0));
            }
        } else {
            allowed.put("", new Choice(Mode.BINARY, 1));
            allowed.put(Protocols.V1, new Choice(Mode.BINARY, 1));
            allowed.put(Protocols.BASE64_V1, new Choice(Mode.BASE64, 1));
            allowed.put(Protocols.V4, new Choice(Mode.BINARY, 4));
            allowed.put(Protocols.BASE64_V4, new Choice(Mode.BASE64, 4));
            if (ctx.remoteCommandProtocols().contains(Protocols.V5)) {
                allowed.put(Protocols.V5, new Choice(Mode.BINARY, 5));
            }
        }
        List<String> requested =
                StreamingHttpHandler.commaValues(req.headers(), "Sec-WebSocket-Protocol");
        String selected = null;
        if (requested.isEmpty()) {
            selected = "";
        } else {
            for (String r : requested) {
                if (!r.isEmpty() && allowed.containsKey(r)) {
                    selected = r;
                    break;
                }
            }
        }
        if (selected == null) {
            List<String> supports = new ArrayList<>(allowed.keySet());
            supports.remove("");
            HttpResponses.send(
                    c,
                    HttpResponseStatus.FORBIDDEN,
                    "requested protocol(s) are not supported: "
                            + requested
                            + "; supports "
                            + supports);
            return;
        }
        Choice choice = allowed.get(selected);
        List<Integer> ports = List.of();
        if (kind == StreamKind.PORT_FORWARD && choice.mode() != Mode.TUNNEL) {
            ports = new ArrayList<>();
            for (int p : ((PortForwardRequest) cached).getPortList()) {
                ports.add(p);
            }
            if (ports.isEmpty()) {
                List<String> qs = q.parameters().get("port");
                if (qs == null || qs.isEmpty()) {
                    HttpResponses.send(
                            c,
                            HttpResponseStatus.BAD_REQUEST,
                            "query parameter \"port\" is required");
                    return;
                }
                for (String s : qs) {
                    if (s.isEmpty()) {
                        HttpResponses.send(
                                c,
                                HttpResponseStatus.BAD_REQUEST,
                                "query parameter \"port\" cannot be empty");
                        return;
                    }
                    for (String p : s.split(",")) {
                        int port;
                        try {
                            port = Integer.parseInt(p);
                        } catch (NumberFormatException e) {
                            port = -1;
                        }
                        if (port < 1 || port > 65535) {
                            HttpResponses.send(
                                    c,
                                    HttpResponseStatus.BAD_REQUEST,
                                    "unable to parse \"" + s + "\" as a port");
                            return;
                        }
                        ports.add(port);
                    }
                }
            }
        }
        if (!ctx.sessions().tryAcquire(kind, "websocket", selected)) {
            HttpResponses.send(
                    c,
                    HttpResponseStatus.TOO_MANY_REQUESTS,
                    "maximum number of concurrent streaming sessions exceeded",
                    Map.of("Retry-After", List.of(Long.toString(ctx.cache().ttlSeconds()))));
            return;
        }
        Runnable release = StreamingHttpHandler.once(ctx.sessions()::release);
        StreamingHttpHandler.countBytes(
                c.pipeline(), ctx.sessions().meters().bytes(kind, "websocket"));
        String scheme = c.pipeline().get("ssl") != null ? "wss" : "ws";
        String host = req.headers().get("Host", "localhost");
        WebSocketServerHandshakerFactory f =
                new WebSocketServerHandshakerFactory(
                        scheme + "://" + host + q.path(),
                        selected.isEmpty() ? null : selected,
                        false,
                        MAX_MESSAGE);
        WebSocketServerHandshaker hs = f.newHandshaker(req);
        if (hs == null) {
            release.run();
            WebSocketServerHandshakerFactory.sendUnsupportedVersionResponse(c.channel());
            c.close();
            return;
        }
        ChannelFuture done = hs.handshake(c.channel(), req);
        ChannelPipeline p = c.pipeline();
        StreamingHttpHandler.removeHttpIdle(p);
        p.addLast("ws-aggregator", new WebSocketFrameAggregator(MAX_MESSAGE));
        p.addLast("idle", StreamingHttpHandler.idleHandler(ctx));
        final List<Integer> fports = ports;
        ChannelHandler h;
        if (choice.mode() == Mode.TUNNEL) {
            SpdyPortForward pf =
                    new SpdyPortForward(
                            ctx, ((PortForwardRequest) cached).getPodSandboxId(), release);
            SpdySession session = new SpdySession(true, pf);
            p.addLast("ws-tunnel", new WsTunnelBridge());
            p.addLast("spdy-codec", SpdySession.newCodec());
            p.addLast("spdy-session", session);
            p.remove(StreamingHttpHandler.NAME);
            pf.attach(session);
            return;
        } else if (kind == StreamKind.PORT_FORWARD) {
            h =
                    new WsPortForward(
                            ctx,
                            ((PortForwardRequest) cached).getPodSandboxId(),
                            fports,
                            choice.mode() == Mode.BASE64,
                            release);
        } else {
            h =
                    new WsRemoteCommand(
                            ctx,
                            StreamingHttpHandler.commandRequest(kind, cached),
                            choice.mode() == Mode.BASE64,
                            choice.version(),
                            release);
        }
        p.remove(StreamingHttpHandler.NAME);
        // Install the session now, in this event-loop task: the handshaker already decodes
        // WebSocket frames, and a client may send its first frames (stdin, resize) the moment it
        // sees the 101. Adding the session only once the 101's write future completed lost those
        // frames whenever that completion came in a later event-loop task. What the session
        // writes still follows the 101, which is already queued on the channel.
        p.addLast("ws-session", h);
        done.addListener(
                fut -> {
                    if (!fut.isSuccess()) {
                        release.run();
                        c.channel().close();
                    }
                });
    }
}
