package io.cri4j.cri.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class NettyTransportTest {

    @Test
    void tcpIsEpollOnLinuxAndItsGroupOpensItsChannels() throws Exception {
        NettyTransport.Kind tcp = NettyTransport.tcp();
        assertThat(tcp.name()).isEqualTo("epoll");
        assertThat(tcp.channelType()).isEqualTo(EpollSocketChannel.class);
        assertThat(tcp.serverChannelType()).isEqualTo(EpollServerSocketChannel.class);
        assertThat(SocketChannel.class).isAssignableFrom(tcp.channelType());
        assertThat(ServerSocketChannel.class).isAssignableFrom(tcp.serverChannelType());
        EventLoopGroup group = tcp.newGroup(1, "transport-test");
        try {
            Channel server =
                    new io.netty.bootstrap.ServerBootstrap()
                            .group(group)
                            .channel(tcp.serverChannelType())
                            .childHandler(new io.netty.channel.ChannelInboundHandlerAdapter())
                            .bind("127.0.0.1", 0)
                            .sync()
                            .channel();
            Channel client =
                    new io.netty.bootstrap.Bootstrap()
                            .group(group)
                            .channel(tcp.channelType())
                            .handler(new io.netty.channel.ChannelInboundHandlerAdapter())
                            .connect(server.localAddress())
                            .sync()
                            .channel();
            assertThat(client.isActive()).isTrue();
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
