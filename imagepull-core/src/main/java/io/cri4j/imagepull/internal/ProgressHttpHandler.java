package io.cri4j.imagepull.internal;

import io.cri4j.cri.internal.http.HttpGuard;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.imagepull.PullProgressJson;
import io.cri4j.streaming.StreamAuthorizer;
import io.cri4j.streaming.StreamKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP connection of {@link io.cri4j.imagepull.PullProgressServer}: the page, the list, and the
 * streams of progress lines. A stream's snapshots come from the observer's thread and are written on the
 * connection's event loop; while the connection is not writable only the latest snapshot of each pull
 * is kept, and written when it is again.
 */
public final class ProgressHttpHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    /** The API path, as KEP-5334 names kubelet's route. */
    public static final String PATH = "/imagePullProgress";

    private static final Logger LOG = LoggerFactory.getLogger(ProgressHttpHandler.class);
    private static final String PAGE = "/io/cri4j/imagepull/progress/index.html";
    private static volatile byte[] page;

    private final PullObserver observer;
    private final StreamAuthorizer authorizer;
    // the stream, on the event loop
    private PullObserver.Watch watch;
    private PullProgressJson.Lines lines;
    private final Map<String, PullProgress> pending = new LinkedHashMap<>();
    private boolean ending;

    public ProgressHttpHandler(PullObserver observer, StreamAuthorizer authorizer) {
        this.observer = observer;
        this.authorizer = authorizer;
    }

    private static byte[] page() {
        byte[] p = page;
        if (p == null) {
            try (InputStream in = ProgressHttpHandler.class.getResourceAsStream(PAGE)) {
                if (in == null) {
                    throw new IllegalStateException(
                            "resource " + PAGE + " is missing from imagepull-core");
                }
                p = in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            page = p;
        }
        return p;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        if (watch != null || lines != null) {
            return; // a stream is running on this connection; nothing more is read from it
        }
        // HttpSurface's guard already answered requests that did not decode or name a foreign host
        QueryStringDecoder q = new QueryStringDecoder(req.uri());
        String path = q.path();
        if (!path.equals("/") && !path.equals("/index.html") && !path.equals(PATH)) {
            error(ctx, HttpResponseStatus.NOT_FOUND, "404 page not found");
            return;
        }
        if (!HttpMethod.GET.equals(req.method())) {
            FullHttpResponse r =
                    text(HttpResponseStatus.METHOD_NOT_ALLOWED, "405 method not allowed");
            r.headers().set(HttpHeaderNames.ALLOW, "GET");
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        String image = first(q, "image");
        if (!authorized(ctx, req, image)) {
            error(
                    ctx,
                    HttpResponseStatus.FORBIDDEN,
                    "403 forbidden: image pull progress request was not authorized");
            return;
        }
        if (!path.equals(PATH)) {
            FullHttpResponse r =
                    new DefaultFullHttpResponse(
                            HttpVersion.HTTP_1_1,
                            HttpResponseStatus.OK,
                            Unpooled.wrappedBuffer(page()));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/html; charset=utf-8");
            respond(ctx, req, r);
            return;
        }
        boolean follow =
                "true".equalsIgnoreCase(first(q, "follow")) || "1".equals(first(q, "follow"));
        if (image.isEmpty() && !follow) {
            byte[] body =
                    (PullProgressJson.list(observer.pulls()) + "\n")
                            .getBytes(StandardCharsets.UTF_8);
            FullHttpResponse r =
                    new DefaultFullHttpResponse(
                            HttpVersion.HTTP_1_1,
                            HttpResponseStatus.OK,
                            Unpooled.wrappedBuffer(body));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            respond(ctx, req, r);
            return;
        }
        stream(ctx, image);
    }

    private boolean authorized(ChannelHandlerContext ctx, FullHttpRequest req, String image) {
        if (authorizer == null) {
            return true;
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        req.headers()
                .forEach(
                        h ->
                                headers.computeIfAbsent(
                                                h.getKey().toLowerCase(Locale.ROOT),
                                                k -> new ArrayList<>())
                                        .add(h.getValue()));
        try {
            return authorizer.authorize(
                    new StreamAuthorizer.Request(
                            StreamKind.IMAGE_PULL_PROGRESS,
                            image,
                            ctx.channel().remoteAddress(),
                            headers));
        } catch (RuntimeException e) {
            LOG.warn("image pull progress authorizer failed: {}", e.toString());
            return false;
        }
    }

    private void stream(ChannelHandlerContext ctx, String image) {
        lines = new PullProgressJson.Lines();
        PullObserver.Watch w;
        try {
            w =
                    observer.watch(
                            image.isEmpty() ? null : image,
                            new PullObserver.Listener() {
                                @Override
                                public void onProgress(PullProgress progress) {
                                    ctx.executor().execute(() -> offer(ctx, progress));
                                }

                                @Override
                                public void onEnd() {
                                    ctx.executor().execute(() -> end(ctx));
                                }
                            });
        } catch (PullObserver.TooManyWatchersException e) {
            lines = null;
            error(
                    ctx,
                    HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "503 service unavailable: " + e.getMessage());
            return;
        } catch (IllegalStateException e) {
            lines = null;
            error(
                    ctx,
                    HttpResponseStatus.SERVICE_UNAVAILABLE,
                    "503 service unavailable: " + e.getMessage());
            return;
        }
        watch = w;
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/x-ndjson");
        r.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
        r.headers().set("X-Content-Type-Options", "nosniff");
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        HttpUtil.setTransferEncodingChunked(r, true);
        ctx.writeAndFlush(r);
        if (!ctx.channel().isActive()) {
            w.close();
        }
    }

    /** A snapshot for the stream (event loop): written now, or kept as the latest while not writable. */
    private void offer(ChannelHandlerContext ctx, PullProgress p) {
        if (ending || !ctx.channel().isActive()) {
            return;
        }
        pending.remove(p.image());
        pending.put(p.image(), p);
        drain(ctx);
    }

    private void drain(ChannelHandlerContext ctx) {
        if (pending.isEmpty() || !ctx.channel().isWritable()) {
            return;
        }
        StringBuilder sb = new StringBuilder();
        for (PullProgress p : pending.values()) {
            sb.append(lines.lines(p));
        }
        pending.clear();
        if (sb.length() > 0) {
            ByteBuf buf = Unpooled.copiedBuffer(sb, StandardCharsets.UTF_8);
            ctx.writeAndFlush(new DefaultHttpContent(buf));
        }
    }

    /** The watch ended: what is left goes out, then the end of the body. */
    private void end(ChannelHandlerContext ctx) {
        if (ending) {
            return;
        }
        ending = true;
        if (!ctx.channel().isActive()) {
            return;
        }
        StringBuilder sb = new StringBuilder();
        pending.values().forEach(p -> sb.append(lines.lines(p)));
        pending.clear();
        if (sb.length() > 0) {
            ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer(sb, StandardCharsets.UTF_8)));
        }
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT)
                .addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        if (!ending && lines != null) {
            drain(ctx);
        }
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (watch != null) {
            watch.close();
        }
        pending.clear();
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug(
                "image pull progress connection {} failed: {}",
                ctx.channel().remoteAddress(),
                cause.toString());
        ctx.close();
    }

    private static String first(QueryStringDecoder q, String name) {
        List<String> v = q.parameters().get(name);
        return v == null || v.isEmpty() ? "" : v.get(0).strip();
    }

    private static FullHttpResponse text(HttpResponseStatus status, String text) {
        return HttpGuard.text(status, text);
    }

    private static void error(ChannelHandlerContext ctx, HttpResponseStatus status, String text) {
        HttpGuard.error(ctx, status, text);
    }

    private static void respond(
            ChannelHandlerContext ctx, FullHttpRequest req, FullHttpResponse r) {
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
        r.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
        r.headers().set("X-Content-Type-Options", "nosniff");
        if (HttpUtil.isKeepAlive(req)) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            ctx.writeAndFlush(r);
        } else {
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
