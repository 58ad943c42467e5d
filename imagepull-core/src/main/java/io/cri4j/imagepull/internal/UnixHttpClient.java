package io.cri4j.imagepull.internal;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A minimal HTTP/1.1 client over a unix socket (Netty epoll), for the Docker Engine API: one
 * connection per request, the body delivered line by line as it streams. {@code java.net.http}
 * cannot speak over unix sockets, hence this.
 */
public final class UnixHttpClient implements AutoCloseable {

    /** An answer: status, reason and (for non-streamed requests) the body. */
    public record Response(int status, String reason, String body) {}

    private final Path socket;
    private final EventLoopGroup group =
            new MultiThreadIoEventLoopGroup(
                    1,
                    new io.netty.util.concurrent.DefaultThreadFactory(
                            "cri4j-imagepull-docker-io", true),
                    EpollIoHandler.newFactory());

    /** Completions leave the event loop: callers' callbacks may take locks or wait. */
    private final java.util.concurrent.ExecutorService callbacks =
            java.util.concurrent.Executors.newCachedThreadPool(
                    new io.netty.util.concurrent.DefaultThreadFactory(
                            "cri4j-imagepull-docker-cb", true));

    /** @param socket the unix socket path */
    public UnixHttpClient(Path socket) {
        this.socket = socket;
    }

    /**
     * Sends a request; body lines go to {@code onLine} as they arrive (for 2xx answers), and the
     * future completes when the response ends. Cancelling the future closes the connection.
     *
     * @param method method
     * @param pathAndQuery request target
     * @param headers extra headers
     * @param onLine receives each line of a 2xx body, or null to collect the body into the response
     * @return the response (body empty when streamed)
     */
    public CompletableFuture<Response> send(
            HttpMethod method,
            String pathAndQuery,
            Map<String, String> headers,
            Consumer<String> onLine) {
        CompletableFuture<Response> result = new CompletableFuture<>();
        Bootstrap b =
                new Bootstrap()
                        .group(group)
                        .channel(EpollDomainSocketChannel.class)
                        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                        .handler(
                                new ChannelInitializer<Channel>() {
                                    @Override
                                    protected void initChannel(Channel ch) {
                                        ch.pipeline()
                                                .addLast(
                                                        new HttpClientCodec(),
                                                        new Handler(result, onLine));
                                    }
                                });
        ChannelFuture connect = b.connect(new DomainSocketAddress(socket.toString()));
        result.whenComplete((r, e) -> connect.channel().close());
        CompletableFuture<Response> out = new CompletableFuture<>();
        result.whenCompleteAsync(
                (r, e) -> {
                    if (e != null) {
                        out.completeExceptionally(e);
                    } else {
                        out.complete(r);
                    }
                },
                callbacks);
        out.whenComplete(
                (r, e) -> {
                    if (out.isCancelled()) {
                        result.cancel(true);
                    }
                });
        connect.addListener(
                f -> {
                    if (!f.isSuccess()) {
                        result.completeExceptionally(
                                new java.io.IOException(
                                        "cannot connect to "
                                                + socket
                                                + ": "
                                                + io.cri4j.cri.internal.IoErrors.reason(f.cause()),
                                        f.cause()));
                        return;
                    }
                    DefaultFullHttpRequest req =
                            new DefaultFullHttpRequest(
                                    HttpVersion.HTTP_1_1,
                                    method,
                                    pathAndQuery,
                                    Unpooled.EMPTY_BUFFER);
                    req.headers().set(HttpHeaderNames.HOST, "docker");
                    req.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                    req.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
                    headers.forEach(req.headers()::set);
                    connect.channel()
                            .writeAndFlush(req)
                            .addListener(
                                    w -> {
                                        if (!w.isSuccess()) {
                                            result.completeExceptionally(w.cause());
                                        }
                                    });
                });
        return out;
    }

    private static final class Handler extends SimpleChannelInboundHandler<HttpObject> {
        private final CompletableFuture<Response> result;
        private final Consumer<String> onLine;
        private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
        private int status;
        private String reason = "";
        private boolean streaming;

        Handler(CompletableFuture<Response> result, Consumer<String> onLine) {
            this.result = result;
            this.onLine = onLine;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (msg instanceof HttpResponse r) {
                status = r.status().code();
                reason = r.status().reasonPhrase();
                streaming = onLine != null && status / 100 == 2;
            }
            if (msg instanceof HttpContent c) {
                ByteBuf buf = c.content();
                if (pending.size() + buf.readableBytes() > 16 * 1024 * 1024) {
                    result.completeExceptionally(
                            new java.io.IOException("response line longer than 16 MiB"));
                    ctx.close();
                    return;
                }
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                pending.writeBytes(bytes);
                if (streaming) {
                    drainLines(false);
                }
                if (msg instanceof LastHttpContent) {
                    if (streaming) {
                        drainLines(true);
                    }
                    result.complete(
                            new Response(
                                    status,
                                    reason,
                                    streaming ? "" : pending.toString(StandardCharsets.UTF_8)));
                    ctx.close();
                }
            }
        }

        private void drainLines(boolean end) {
            byte[] all = pending.toByteArray();
            int start = 0;
            for (int i = 0; i < all.length; i++) {
                if (all[i] == '\n') {
                    deliver(new String(all, start, i - start, StandardCharsets.UTF_8));
                    start = i + 1;
                }
            }
            pending.reset();
            if (end) {
                deliver(new String(all, start, all.length - start, StandardCharsets.UTF_8));
            } else {
                pending.write(all, start, all.length - start);
            }
        }

        private void deliver(String line) {
            String l = line.strip();
            if (!l.isEmpty() && !result.isDone()) {
                try {
                    onLine.accept(l);
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                }
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (!result.isDone()) {
                result.completeExceptionally(
                        new java.io.IOException("connection closed before the response ended"));
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            result.completeExceptionally(cause);
            ctx.close();
        }
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        callbacks.shutdown();
        try {
            if (!callbacks.awaitTermination(5, TimeUnit.SECONDS)) {
                callbacks.shutdownNow();
            }
        } catch (InterruptedException e) {
            callbacks.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
