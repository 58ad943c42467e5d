package io.cri4j.testing.real.internal;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The harness's own gRPC channel to containerd's socket (for readiness, pre-pulls and cleanup),
 * with its own one-thread event loop so closing it releases everything.
 */
public final class UnixChannels implements AutoCloseable {

  private final EventLoopGroup group;
  private final ManagedChannel channel;

  /** Opens a channel to the unix socket at {@code socket}. */
  public UnixChannels(Path socket) {
    this.group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(group)
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        .usePlaintext()
        .maxInboundMessageSize(16 * 1024 * 1024)
        .build();
  }

  /** The channel. */
  public ManagedChannel channel() {
    return channel;
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }
}
