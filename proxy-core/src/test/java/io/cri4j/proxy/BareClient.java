package io.cri4j.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.http2.AbstractHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2ConnectionDecoder;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.nio.file.Path;

/** A bare HTTP/2 client (Netty's connection handler) on a unix socket, for wire-level tests. */
abstract class BareClient extends Http2FrameAdapter {
    final Http2ConnectionHandler h;
    ChannelHandlerContext ctx;

    BareClient(Http2Settings settings) {
        this(settings, true);
    }

    /** @param autoAckPing whether Netty answers the PINGs this client gets (else the test does) */
    BareClient(Http2Settings settings, boolean autoAckPing) {
        h = handler(false, this, settings, autoAckPing);
    }

    /** Netty's HTTP/2 connection handler, with the PING option its public builder lacks. */
    static Http2ConnectionHandler handler(
            boolean server,
            Http2FrameListener listener,
            Http2Settings settings,
            boolean autoAckPing) {
        return new Builder().handler(server, listener, settings, autoAckPing);
    }

    private static final class Builder
            extends AbstractHttp2ConnectionHandlerBuilder<Http2ConnectionHandler, Builder> {
        Http2ConnectionHandler handler(
                boolean server, Http2FrameListener l, Http2Settings s, boolean autoAckPing) {
            return server(server)
                    .frameListener(l)
                    .initialSettings(s)
                    .autoAckPingFrame(autoAckPing)
                    .build();
        }

        @Override
        protected Http2ConnectionHandler build(
                Http2ConnectionDecoder decoder,
                Http2ConnectionEncoder encoder,
                Http2Settings initialSettings) {
            return new Http2ConnectionHandler(decoder, encoder, initialSettings) {};
        }
    }

    Channel connect(EventLoopGroup group, Path socket) throws InterruptedException {
        Channel ch =
                new Bootstrap()
                        .group(group)
                        .channel(EpollDomainSocketChannel.class)
                        .handler(
                                new ChannelInitializer<Channel>() {
                                    @Override
                                    protected void initChannel(Channel c) {
                                        c.pipeline().addLast(h);
                                    }
                                })
                        .connect(new DomainSocketAddress(socket.toString()))
                        .sync()
                        .channel();
        ctx = ch.pipeline().context(h);
        return ch;
    }

    @Override
    public void onHeadersRead(
            ChannelHandlerContext c,
            int streamId,
            Http2Headers headers,
            int streamDependency,
            short weight,
            boolean exclusive,
            int padding,
            boolean endOfStream) {
        onHeadersRead(c, streamId, headers, padding, endOfStream);
    }

    @Override
    public abstract void onHeadersRead(
            ChannelHandlerContext c,
            int streamId,
            Http2Headers headers,
            int padding,
            boolean endOfStream);
}
