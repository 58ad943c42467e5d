package io.cri4j.proxy.internal;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.internal.NettyTransport;
import io.cri4j.cri.internal.UnixSockets;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's sockets: the listening server and the backend channel share one event loop thread
 * when they are of the same kind, so a relayed frame is read and written again on the thread
 * that received it, without a hand-off between threads (on a small node every thread hop shows
 * in the latency of a pass-through call). Owns the event loops.
 */
public final class ProxyTransport implements AutoCloseable {
  private final EventLoopGroup serverLoop;
  private final EventLoopGroup clientLoop;
  private final ManagedChannel backend;
  private final CriEndpoint listen;
  private Server server;
  private CriEndpoint bound;
  private boolean closed;

  public ProxyTransport(CriEndpoint listen, CriEndpoint backendEndpoint, int ioThreads) {
    this.listen = listen;
    NettyTransport.Kind serverKind = NettyTransport.forEndpoint(listen);
    NettyTransport.Kind clientKind = NettyTransport.forEndpoint(backendEndpoint);
    this.serverLoop = serverKind.newGroup(ioThreads, "cri4j-proxy-io");
    this.clientLoop = serverKind.name().equals(clientKind.name()) ? serverLoop
        : clientKind.newGroup(ioThreads, "cri4j-proxy-backend-io");
    this.backend = CriChannels.builder(backendEndpoint)
        .eventLoopGroup(clientLoop)
        .directExecutor()
        .build();
  }

  /** The channel to the backend (reconnects by itself; fails fast while the backend is down). */
  public ManagedChannel backend() {
    return backend;
  }

  /** Binds the listen endpoint (replacing a stale unix socket) and starts serving. */
  public synchronized void start(List<ServerServiceDefinition> services, HandlerRegistry fallback,
      String socketMode) throws IOException {
    NettyTransport.Kind kind = NettyTransport.forEndpoint(listen);
    NettyServerBuilder nb;
    if (listen.isUnix()) {
      UnixSockets.prepareForBind(listen.path());
      nb = NettyServerBuilder.forAddress(new DomainSocketAddress(listen.path().toString()))
          .withChildOption(ChannelOption.SO_KEEPALIVE, null);
    } else {
      nb = NettyServerBuilder.forAddress(new InetSocketAddress(listen.host(), listen.port()));
    }
    nb.channelType(kind.serverChannelType())
        .bossEventLoopGroup(serverLoop)
        .workerEventLoopGroup(serverLoop)
        .maxInboundMessageSize(CriChannels.DEFAULT_MAX_MESSAGE_SIZE)
        .permitKeepAliveTime(5, TimeUnit.MINUTES)
        .fallbackHandlerRegistry(fallback)
        .directExecutor();
    services.forEach(nb::addService);
    Server s = nb.build();
    try {
      s.start();
    } catch (IOException | RuntimeException e) {
      s.shutdownNow();
      throw new IOException("cannot serve on " + listen + ": " + e.getMessage(), e);
    }
    server = s;
    if (listen.isUnix()) {
      Files.setPosixFilePermissions(listen.path(), UnixSockets.parseMode(socketMode));
      bound = listen;
    } else {
      bound = CriEndpoint.tcp(listen.host(),
          ((InetSocketAddress) s.getListenSockets().get(0)).getPort());
    }
  }

  /** The endpoint served (the real port for {@code tcp://host:0}). */
  public synchronized CriEndpoint endpoint() {
    return bound != null ? bound : listen;
  }

  /** Blocks until the server has terminated. */
  public void awaitTermination() throws InterruptedException {
    Server s;
    synchronized (this) {
      s = server;
    }
    if (s != null) {
      s.awaitTermination();
    }
  }

  /** Stops serving, closes the backend channel, releases the threads and the socket; idempotent. */
  @Override
  public void close() {
    Server s;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      s = server;
    }
    if (s != null) {
      s.shutdownNow();
      try {
        s.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    backend.shutdownNow();
    try {
      backend.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    if (clientLoop != serverLoop) {
      clientLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
    if (s != null && listen.isUnix()) {
      UnixSockets.deleteIfSocket(listen.path());
    }
  }
}
