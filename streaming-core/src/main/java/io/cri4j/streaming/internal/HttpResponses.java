package io.cri4j.streaming.internal;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/** Plain-text HTTP error answers (as Go's http.Error); the connection is closed after them. */
public final class HttpResponses {
    private HttpResponses() {}

    public static void send(
            ChannelHandlerContext ctx,
            HttpResponseStatus status,
            String text,
            Map<String, List<String>> headers) {
        byte[] body = (text.endsWith("\n") ? text : text + "\n").getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r =
                new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8");
        r.headers().set("X-Content-Type-Options", "nosniff");
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, body.length);
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        headers.forEach((k, vs) -> vs.forEach(v -> r.headers().add(k, v)));
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }

    public static void send(ChannelHandlerContext ctx, HttpResponseStatus status, String text) {
        send(ctx, status, text, Map.of());
    }
}
