package io.cri4j.streaming.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.internal.NettyTransport;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MaxMessagesRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class UpgraderTest {
    @Test
    void clientConnectionsReadUpTo128KiBSixteenTimesAWakeUp() throws Exception {
        NettyTransport.Kind transport = NettyTransport.tcp();
        EventLoopGroup group = transport.newGroup(1, "upgrader-test");
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Upgrader upgrader =
                    new Upgrader(group, transport.channelType(), null, Duration.ofSeconds(10));
            Channel ch =
                    upgrader.connect(
                            URI.create("http://127.0.0.1:" + server.getLocalPort() + "/exec"));
            try (Socket accepted = server.accept()) {
                RecvByteBufAllocator reads = ch.config().getRecvByteBufAllocator();
                // the option replaces the allocator the channel made; a count of 1 (the
                // allocator's own default) made a copy through the client 0.6x as fast
                assertThat(((MaxMessagesRecvByteBufAllocator) reads).maxMessagesPerRead())
                        .isEqualTo(Upgrader.READS_PER_WAKEUP)
                        .isEqualTo(16);
                // reads that fill their buffer grow the next one up to the largest read
                RecvByteBufAllocator.Handle handle = reads.newHandle();
                int largest = 0;
                for (int i = 0; i < 20; i++) {
                    handle.reset(ch.config());
                    ByteBuf b = handle.allocate(ch.alloc());
                    try {
                        largest = Math.max(largest, b.writableBytes());
                        handle.lastBytesRead(b.writableBytes());
                        handle.incMessagesRead(1);
                    } finally {
                        b.release();
                    }
                    handle.readComplete();
                }
                assertThat(largest).isEqualTo(Upgrader.MAX_READ).isEqualTo(128 * 1024);
            } finally {
                ch.close().sync();
            }
        } finally {
            group.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS).sync();
        }
    }
}
