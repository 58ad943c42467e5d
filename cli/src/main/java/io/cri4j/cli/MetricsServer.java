package io.cri4j.cli;

import io.cri4j.cri.internal.http.HttpGuard;
import io.cri4j.cri.internal.http.HttpSurface;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;

/**
 * {@code /metrics}, {@code /healthz} and {@code /readyz} of a command, on the same hardened HTTP
 * surface as the pull progress server (request deadline, connection cap, {@code Host} allow-list,
 * 400s with a reason).
 *
 * <ul>
 *   <li>{@code /metrics}: the registry in Prometheus' text format 0.0.4, or OpenMetrics 1.0 when the
 *       {@code Accept} header asks for {@code application/openmetrics-text};
 *   <li>{@code /healthz}: 200 while the process serves HTTP at all;
 *   <li>{@code /readyz}: 200 when the command is ready (the proxy serves and its backend answers; the
 *       NRI plugin is registered), else 503 with the reason.
 * </ul>
 */
final class MetricsServer implements AutoCloseable {
    static final String OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpSurface surface;

    private MetricsServer(HttpSurface surface) {
        this.surface = surface;
    }

    static MetricsServer start(
            InetSocketAddress address,
            boolean allowRemote,
            List<String> allowHosts,
            PrometheusMeterRegistry registry,
            Supplier<String> readiness)
            throws IOException {
        HttpSurface s =
                HttpSurface.builder("metrics", () -> new Handler(registry, readiness))
                        .threadName("cri4j-metrics-http")
                        .bindAddress(address)
                        .allowRemote(allowRemote)
                        .allowHosts(allowHosts)
                        .build()
                        .start();
        return new MetricsServer(s);
    }

    InetSocketAddress address() {
        return surface.address();
    }

    URI baseUrl() {
        return surface.baseUrl();
    }

    @Override
    public void close() {
        surface.close();
    }

    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final PrometheusMeterRegistry registry;
        private final Supplier<String> readiness;

        Handler(PrometheusMeterRegistry registry, Supplier<String> readiness) {
            this.registry = registry;
            this.readiness = readiness;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            String path = new QueryStringDecoder(req.uri()).path();
            if (!path.equals("/metrics") && !path.equals("/healthz") && !path.equals("/readyz")) {
                HttpGuard.error(
                        ctx,
                        HttpResponseStatus.NOT_FOUND,
                        "404 page not found (/metrics, /healthz, /readyz)");
                return;
            }
            boolean head = HttpMethod.HEAD.equals(req.method());
            if (!HttpMethod.GET.equals(req.method()) && !head) {
                FullHttpResponse r =
                        HttpGuard.text(
                                HttpResponseStatus.METHOD_NOT_ALLOWED, "405 method not allowed");
                r.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            FullHttpResponse r;
            switch (path) {
                case "/healthz" -> r = HttpGuard.text(HttpResponseStatus.OK, "ok");
                case "/readyz" -> {
                    String why;
                    try {
                        why = readiness.get();
                    } catch (RuntimeException e) {
                        why = "readiness check failed: " + e.getMessage();
                    }
                    r =
                            why == null
                                    ? HttpGuard.text(HttpResponseStatus.OK, "ok")
                                    : HttpGuard.text(
                                            HttpResponseStatus.SERVICE_UNAVAILABLE,
                                            "not ready: " + why);
                }
                default -> {
                    String accept = req.headers().get(HttpHeaderNames.ACCEPT, "");
                    boolean om = accept.contains("application/openmetrics-text");
                    byte[] body =
                            registry.scrape(om ? "application/openmetrics-text" : "text/plain")
                                    .getBytes(StandardCharsets.UTF_8);
                    r =
                            new DefaultFullHttpResponse(
                                    HttpVersion.HTTP_1_1,
                                    HttpResponseStatus.OK,
                                    Unpooled.wrappedBuffer(body));
                    r.headers()
                            .set(HttpHeaderNames.CONTENT_TYPE, om ? OPENMETRICS : PROMETHEUS_TEXT);
                    r.headers().set(HttpHeaderNames.CONTENT_LENGTH, body.length);
                }
            }
            r.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
            if (head) {
                int length = r.content().readableBytes();
                FullHttpResponse full = r;
                r =
                        new DefaultFullHttpResponse(
                                HttpVersion.HTTP_1_1,
                                r.status(),
                                Unpooled.EMPTY_BUFFER,
                                r.headers(),
                                r.trailingHeaders());
                r.headers().set(HttpHeaderNames.CONTENT_LENGTH, length);
                full.release();
            }
            if (HttpUtil.isKeepAlive(req)) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                ctx.writeAndFlush(r);
            } else {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
