package io.cri4j.streaming.internal;

import io.cri4j.streaming.StreamingException;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Opens a TCP (or TLS) connection with an HTTP/1.1 codec and sends the upgrade request. */
public final class Upgrader {
    public static final String CODEC = "http-client-codec";
    public static final String AGGREGATOR = "http-client-aggregator";
    public static final String HANDLER = "upgrade-response";

    /**
     * Largest read of a client connection: 128 KiB, where Netty's default stops at 64 KiB. A
     * client's connection mostly receives a container's output in 32 KiB frames; reading up to four
     * of them at once halves the reads and the passes through the pipeline per MiB (the client's
     * event loop took 0.42 instead of 0.49 ms per MiB, {@code StreamingThreadCpu}). The size grows
     * only while reads fill it, so an idle or interactive session reads into small buffers.
     */
    static final int MAX_READ = 128 * 1024;

    /** Reads per wake-up of the event loop, as Netty's epoll and NIO socket channels default. */
    static final int READS_PER_WAKEUP = 16;

    private final EventLoopGroup group;
    private final Class<? extends Channel> channelType;
    private final SslContext ssl;
    private final Duration timeout;

    public Upgrader(
            EventLoopGroup group,
            Class<? extends Channel> channelType,
            SslContext ssl,
            Duration timeout) {
        this.group = group;
        this.channelType = channelType;
        this.ssl = ssl;
        this.timeout = timeout;
    }

    private static RecvByteBufAllocator reads() {
        AdaptiveRecvByteBufAllocator reads = new AdaptiveRecvByteBufAllocator(64, 2048, MAX_READ);
        // set here, as the option replaces the allocator whose count the channel had set
        reads.maxMessagesPerRead(READS_PER_WAKEUP);
        return reads;
    }

    /** A connected channel and its upgrade response (refCount 1; the caller releases it). */
    public record Upgraded(Channel channel, FullHttpResponse response) {}

    public Channel connect(URI url) throws IOException {
        boolean tls =
                "https".equalsIgnoreCase(url.getScheme())
                        || "wss".equalsIgnoreCase(url.getScheme());
        if (tls && ssl == null) {
            throw new IOException(
                    "https URL but no TLS configured: " + url.getScheme() + "://" + url.getHost());
        }
        int port = url.getPort() > 0 ? url.getPort() : tls ? 443 : 80;
        ChannelFuture f =
                new Bootstrap()
                        .group(group)
                        .channel(channelType)
                        .option(ChannelOption.TCP_NODELAY, true)
                        .option(ChannelOption.RECVBUF_ALLOCATOR, reads())
                        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) timeout.toMillis())
                        .option(
                                ChannelOption.WRITE_BUFFER_WATER_MARK,
                                new WriteBufferWaterMark(256 * 1024, 1024 * 1024))
                        .handler(
                                new ChannelInitializer<SocketChannel>() {
                                    @Override
                                    protected void initChannel(SocketChannel ch) {
                                        if (tls) {
                                            ch.pipeline()
                                                    .addLast(
                                                            "ssl",
                                                            ssl.newHandler(
                                                                    ch.alloc(),
                                                                    url.getHost(),
                                                                    port));
                                        }
                                        ch.pipeline().addLast(CODEC, new HttpClientCodec());
                                        ch.pipeline()
                                                .addLast(
                                                        AGGREGATOR,
                                                        new HttpObjectAggregator(1 << 20));
                                    }
                                })
                        .connect(url.getHost(), port);
        if (!f.awaitUninterruptibly(timeout.toMillis() + 1000) || !f.isSuccess()) {
            f.channel().close();
            throw new IOException(
                    "cannot connect to "
                            + url.getHost()
                            + ":"
                            + port
                            + (f.cause() == null ? "" : ": " + f.cause().getMessage()),
                    f.cause());
        }
        return f.channel();
    }

    /** A request for the URL's path and query (the token is in the path: never log it). */
    public static FullHttpRequest request(HttpMethod method, URI url) {
        String target =
                url.getRawPath() + (url.getRawQuery() == null ? "" : "?" + url.getRawQuery());
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, target);
        r.headers()
                .set(
                        HttpHeaderNames.HOST,
                        url.getHost() + (url.getPort() > 0 ? ":" + url.getPort() : ""));
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
        return r;
    }

    /** Sends {@code req} and waits for the (aggregated) response. */
    public Upgraded exchange(Channel ch, FullHttpRequest req) throws IOException {
        return exchange(ch, req, null);
    }

    /**
     * Like {@link #exchange(Channel, FullHttpRequest)}; {@code on101} runs on the event loop in
     * the read that delivers a 101, so it can switch the pipeline before more bytes are decoded.
     */
    public Upgraded exchange(
            Channel ch, FullHttpRequest req, java.util.function.Consumer<FullHttpResponse> on101)
            throws IOException {
        CompletableFuture<FullHttpResponse> resp = new CompletableFuture<>();
        ch.pipeline()
                .addLast(
                        HANDLER,
                        new SimpleChannelInboundHandler<FullHttpResponse>(false) {
                            @Override
                            protected void channelRead0(
                                    ChannelHandlerContext ctx, FullHttpResponse msg) {
                                if (on101 != null && msg.status().code() == 101) {
                                    try {
                                        ctx.pipeline().remove(this);
                                        on101.accept(msg);
                                    } catch (RuntimeException e) {
                                        msg.release();
                                        resp.completeExceptionally(e);
                                        ctx.close();
                                        return;
                                    }
                                }
                                if (!resp.complete(msg)) {
                                    msg.release();
                                }
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                resp.completeExceptionally(
                                        new IOException(
                                                "connection closed before the upgrade response"));
                                ctx.fireChannelInactive();
                            }

                            @Override
                            public void exceptionCaught(
                                    ChannelHandlerContext ctx, Throwable cause) {
                                resp.completeExceptionally(cause);
                                ctx.close();
                            }
                        });
        ch.writeAndFlush(req);
        try {
            return new Upgraded(ch, resp.get(timeout.toMillis(), TimeUnit.MILLISECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ch.close();
            throw new java.io.InterruptedIOException("interrupted while upgrading");
        } catch (ExecutionException e) {
            ch.close();
            throw new StreamingException(
                    "upgrade failed: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            ch.close();
            throw new StreamingException("no upgrade response within " + timeout, e);
        }
    }

    /** Fails with the server's status and message for a non-101 answer. */
    public static StreamingException refused(FullHttpResponse r) {
        String body = r.content().toString(StandardCharsets.UTF_8).trim();
        return new StreamingException(
                "upgrade refused: " + r.status() + (body.isEmpty() ? "" : ": " + body),
                r.status().code());
    }
}
