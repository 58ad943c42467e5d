package io.cri4j.imagepull;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * A real HTTP/1.1 server on a unix socket speaking the Docker Engine API's wire format for
 * {@code POST /images/create} (a chunked stream of JSON progress messages) and
 * {@code GET /images/{name}/json}. No dockerd can run on the build machines; this is the peer.
 */
final class FakeDockerd implements AutoCloseable {

    /** What the last requests looked like. */
    record Seen(String method, String uri, String registryAuth) {}

    final List<Seen> requests = new CopyOnWriteArrayList<>();
    final CountDownLatch pullConnectionClosed = new CountDownLatch(1);
    volatile String stream = "";
    volatile boolean hold;
    volatile boolean present;
    volatile int createStatus = 200;
    volatile String createBody = "";
    private final EventLoopGroup group =
            new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    private final Channel server;

    FakeDockerd(Path socket) throws InterruptedException {
        server =
                new ServerBootstrap()
                        .group(group)
                        .channel(EpollServerDomainSocketChannel.class)
                        .childHandler(
                                new ChannelInitializer<Channel>() {
                                    @Override
                                    protected void initChannel(Channel ch) {
                                        ch.pipeline()
                                                .addLast(
                                                        new HttpServerCodec(),
                                                        new HttpObjectAggregator(1 << 20),
                                                        new SimpleChannelInboundHandler<
                                                                FullHttpRequest>() {
                                                            @Override
                                                            protected void channelRead0(
                                                                    ChannelHandlerContext ctx,
                                                                    FullHttpRequest req) {
                                                                handle(ctx, req);
                                                            }
                                                        });
                                    }
                                })
                        .bind(new DomainSocketAddress(socket.toString()))
                        .sync()
                        .channel();
    }

    private void handle(ChannelHandlerContext ctx, FullHttpRequest req) {
        requests.add(
                new Seen(req.method().name(), req.uri(), req.headers().get("X-Registry-Auth")));
        if (req.uri().startsWith("/images/create")) {
            ctx.channel().closeFuture().addListener(f -> pullConnectionClosed.countDown());
            if (createStatus != 200) {
                json(ctx, HttpResponseStatus.valueOf(createStatus), createBody);
                return;
            }
            DefaultHttpResponse head =
                    new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            ctx.writeAndFlush(head);
            byte[] body = stream.getBytes(StandardCharsets.UTF_8);
            // uneven chunks, so messages straddle chunk boundaries as they do on a real socket
            int pos = 0;
            int size = 37;
            while (pos < body.length) {
                int n = Math.min(size, body.length - pos);
                ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(body, pos, n)));
                pos += n;
                size = size * 3 % 257 + 11;
            }
            if (hold) {
                return; // the pull "runs" until the client goes away
            }
            present = true;
            ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        } else if (req.uri().startsWith("/images/") && req.uri().endsWith("/json")) {
            String name =
                    req.uri().substring("/images/".length(), req.uri().length() - "/json".length());
            if (present) {
                json(
                        ctx,
                        HttpResponseStatus.OK,
                        "{\"Id\":\"sha256:"
                                + "7".repeat(64)
                                + "\",\"RepoTags\":[\""
                                + name
                                + "\"],\"RepoDigests\":[\"registry.test:5000/team/app@sha256:"
                                + "9".repeat(64)
                                + "\"],\"Size\":3538478}");
            } else {
                json(
                        ctx,
                        HttpResponseStatus.NOT_FOUND,
                        "{\"message\":\"No such image: " + name + "\"}");
            }
        } else {
            json(ctx, HttpResponseStatus.NOT_FOUND, "{\"message\":\"page not found\"}");
        }
    }

    private static void json(ChannelHandlerContext ctx, HttpResponseStatus status, String body) {
        DefaultFullHttpResponse r =
                new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1,
                        status,
                        Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
        ctx.writeAndFlush(r);
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }
}
