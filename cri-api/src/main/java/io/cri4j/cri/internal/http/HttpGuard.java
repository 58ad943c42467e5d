package io.cri4j.cri.internal.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets through only requests that decoded, name an allowed {@code Host} and have a decodable path
 * and query; answers the others with the status and the reason, and closes. Public for its
 * response helpers, which the application handlers share.
 */
public final class HttpGuard extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(HttpGuard.class);

    private final Set<String> allowedHosts;
    private final boolean anyHost;

    HttpGuard(Set<String> allowedHosts, boolean anyHost) {
        this.allowedHosts = Set.copyOf(allowedHosts);
        this.anyHost = anyHost;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ctx.fireChannelRead(msg);
            return;
        }
        RequestDeadline.requestRead(ctx.pipeline());
        String refusal = refusal(ctx, req);
        if (refusal != null) {
            ReferenceCountUtil.release(req);
            HttpResponseStatus status =
                    refusal.startsWith("403")
                            ? HttpResponseStatus.FORBIDDEN
                            : HttpResponseStatus.BAD_REQUEST;
            error(ctx, status, refusal);
            return;
        }
        ctx.fireChannelRead(req);
    }

    private String refusal(ChannelHandlerContext ctx, FullHttpRequest req) {
        if (!req.decoderResult().isSuccess()) {
            Throwable c = req.decoderResult().cause();
            return "400 bad request: " + (c == null ? "malformed request" : c.getMessage());
        }
        String host = req.headers().get(HttpHeaderNames.HOST);
        if (host == null) {
            if (req.protocolVersion().equals(HttpVersion.HTTP_1_1)) {
                return "400 bad request: an HTTP/1.1 request must have a Host header";
            }
        } else if (!hostAllowed(normalizeHost(host), ctx.channel().localAddress())) {
            return "403 forbidden: host \""
                    + printable(host)
                    + "\" is not allowed here (loopback names and addresses only, unless the"
                    + " operator allows others)";
        }
        try {
            QueryStringDecoder q = new QueryStringDecoder(req.uri());
            q.path();
            q.parameters();
        } catch (IllegalArgumentException e) {
            return "400 bad request: cannot decode the path or query of \""
                    + printable(req.uri())
                    + "\": "
                    + e.getMessage();
        }
        return null;
    }

    private boolean hostAllowed(String host, SocketAddress local) {
        if (anyHost || host.equals("localhost") || host.endsWith(".localhost")) {
            return true;
        }
        if (allowedHosts.contains(host)) {
            return true;
        }
        InetAddress literal = literal(host);
        if (literal == null) {
            return false;
        }
        return literal.isLoopbackAddress()
                || (local instanceof InetSocketAddress l && literal.equals(l.getAddress()));
    }

    /** An IP address literal as an address (no name lookup), else null. */
    private static InetAddress literal(String host) {
        boolean v4 = host.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
        boolean v6 = host.indexOf(':') >= 0 && host.matches("[0-9a-f:.%a-z]+");
        if (!v4 && !v6) {
            return null;
        }
        try {
            return InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /**
     * @param host a {@code Host} header value or a host name
     * @return the host without port and brackets, lower case, without a trailing dot
     */
    static String normalizeHost(String host) {
        String h = host.strip().toLowerCase(Locale.ROOT);
        if (h.startsWith("[")) {
            int end = h.indexOf(']');
            h = end < 0 ? h.substring(1) : h.substring(1, end);
        } else if (h.indexOf(':') == h.lastIndexOf(':') && h.indexOf(':') >= 0) {
            h = h.substring(0, h.indexOf(':'));
        }
        if (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1);
        }
        return h;
    }

    private static String printable(String s) {
        String t = s.length() > 200 ? s.substring(0, 200) + "..." : s;
        return t.replaceAll("[^\\x20-\\x7e]", "?");
    }

    /** A plain-text response with the reason as its body. */
    public static FullHttpResponse text(HttpResponseStatus status, String text) {
        byte[] body = (text + "\n").getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r =
                new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8");
        r.headers().set("X-Content-Type-Options", "nosniff");
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, body.length);
        return r;
    }

    /** Answers with the status and reason, then closes the connection. */
    public static void error(ChannelHandlerContext ctx, HttpResponseStatus status, String text) {
        FullHttpResponse r = text(status, text);
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }

    /** Answers a connection over the cap with 503 before reading anything, and closes it. */
    static void refuseConnection(SocketChannel ch, String name, int max) {
        LOG.debug("{}: refusing connection {}: {} open already", name, ch.remoteAddress(), max);
        byte[] body =
                ("503 service unavailable: too many connections (at most " + max + ")\n")
                        .getBytes(StandardCharsets.US_ASCII);
        String head =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        + "Content-Length: "
                        + body.length
                        + "\r\nConnection: close\r\n\r\n";
        ch.pipeline()
                .addLast(
                        new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelActive(ChannelHandlerContext c) {
                                c.writeAndFlush(
                                                Unpooled.wrappedBuffer(
                                                        head.getBytes(StandardCharsets.US_ASCII),
                                                        body))
                                        .addListener(ChannelFutureListener.CLOSE);
                            }
                        });
    }
}
