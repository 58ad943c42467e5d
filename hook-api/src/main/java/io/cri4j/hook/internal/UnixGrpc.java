package io.cri4j.hook.internal;

import io.grpc.BindableService;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * gRPC over unix domain sockets (Netty epoll), shared by the hook transports and the proxy.
 * Stands in for cri-api's CriChannels/CriServer until they are available to this module.
 */
public final class UnixGrpc {
  /** Largest gRPC message accepted, as for CRI (16 MiB). */
  public static final int MAX_MESSAGE = 16 * 1024 * 1024;

  private static final EventLoopGroup CLIENT_GROUP =
      new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("cri4j-uds-client", true),
          EpollIoHandler.newFactory());

  /** Pass as the executor to run server callbacks on the transport threads. */
  public static final Executor DIRECT = Runnable::run;

  private UnixGrpc() {}

  /** A channel to a unix socket; it (re)connects lazily, so a missing peer fails calls, not this. */
  public static ManagedChannel channel(Path socket) {
    return channelBuilder(socket).build();
  }

  /** The configured builder behind {@link #channel(Path)}, for tuning. */
  public static NettyChannelBuilder channelBuilder(Path socket) {
    return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(CLIENT_GROUP)
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        .maxInboundMessageSize(MAX_MESSAGE)
        .usePlaintext();
  }

  /**
   * Starts a server on a unix socket. A stale socket file is replaced; a socket a live server
   * answers on is refused.
   */
  public static Server startServer(Path socket, List<ServerServiceDefinition> services,
      HandlerRegistry fallback, Executor executor) throws IOException {
    prepareSocketPath(socket);
    EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("cri4j-uds-boss", true), EpollIoHandler.newFactory());
    EventLoopGroup workers = new MultiThreadIoEventLoopGroup(0,
        new DefaultThreadFactory("cri4j-uds-worker", true), EpollIoHandler.newFactory());
    NettyServerBuilder b = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollServerDomainSocketChannel.class)
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .withChildOption(ChannelOption.SO_KEEPALIVE, null)
        .maxInboundMessageSize(MAX_MESSAGE);
    if (executor == DIRECT) {
      b.directExecutor();
    } else if (executor != null) {
      b.executor(executor);
    }
    for (ServerServiceDefinition s : services) {
      b.addService(s);
    }
    if (fallback != null) {
      b.fallbackHandlerRegistry(fallback);
    }
    Server server = b.build();
    try {
      server.start();
    } catch (IOException | RuntimeException e) {
      boss.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      workers.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
    return new ShutdownAware(server, () -> {
      boss.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      workers.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      try {
        Files.deleteIfExists(socket);
      } catch (IOException ignored) {
        // best effort
      }
    });
  }

  /** Convenience overload for plain services. */
  public static Server startServer(Path socket, BindableService... services) throws IOException {
    return startServer(socket,
        java.util.Arrays.stream(services).map(BindableService::bindService).toList(), null, null);
  }

  private static void prepareSocketPath(Path socket) throws IOException {
    Path parent = socket.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    if (Files.exists(socket)) {
      try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
        ch.connect(UnixDomainSocketAddress.of(socket));
        throw new IOException("socket " + socket + " is in use by a live server");
      } catch (IOException e) {
        if (e.getMessage() != null && e.getMessage().contains("in use by a live server")) {
          throw e;
        }
        Files.delete(socket);
      }
    }
  }

  /** Shuts the server down and then releases event loops and the socket file. */
  private static final class ShutdownAware extends Server {
    private final Server delegate;
    private final Runnable afterTermination;
    private boolean released;

    ShutdownAware(Server delegate, Runnable afterTermination) {
      this.delegate = delegate;
      this.afterTermination = afterTermination;
    }

    @Override public Server start() throws IOException { return delegate.start(); }

    @Override public Server shutdown() { delegate.shutdown(); return this; }

    @Override public Server shutdownNow() { delegate.shutdownNow(); return this; }

    @Override public boolean isShutdown() { return delegate.isShutdown(); }

    @Override public boolean isTerminated() { return delegate.isTerminated(); }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      boolean done = delegate.awaitTermination(timeout, unit);
      release();
      return done;
    }

    @Override
    public void awaitTermination() throws InterruptedException {
      delegate.awaitTermination();
      release();
    }

    private synchronized void release() {
      if (!released) {
        released = true;
        afterTermination.run();
      }
    }
  }
}
