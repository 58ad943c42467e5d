package io.cri4j.proxy.internal.relay;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.internal.NettyTransport;
import io.cri4j.cri.internal.UnixSockets;
import io.cri4j.proxy.internal.interception.InterceptedService;
import io.grpc.ManagedChannel;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's sockets. The listening socket accepts kubelet's connections; each one is paired
 * with its own connection to the backend on the same event loop thread ({@link RelayConnection}),
 * so a relayed frame is read and written again on the thread that received it. A gRPC channel to
 * the backend (same event loops) serves the calls the interceptors make and the proxy's own
 * probes. Owns the event loops, and the listen socket path (its lock file, as
 * {@link io.cri4j.cri.CriServer}).
 */
public final class ProxyTransport implements AutoCloseable {
    static final int CONNECT_TIMEOUT_MILLIS = (int) CriChannels.DEFAULT_CONNECT_TIMEOUT.toMillis();

    private final EventLoopGroup serverLoop;

    /** The gRPC channel to the backend, made on first use (under this object's lock). */
    private volatile ManagedChannel backend;

    /** {@link #backend()} as a channel, the channel made at its first call. */
    private final io.grpc.Channel lazyBackend =
            new io.grpc.Channel() {
                @Override
                public <Q, R> io.grpc.ClientCall<Q, R> newCall(
                        io.grpc.MethodDescriptor<Q, R> method, io.grpc.CallOptions options) {
                    return backend().newCall(method, options);
                }

                @Override
                public String authority() {
                    return backend().authority();
                }
            };

    private final CriEndpoint listen;
    private final CriEndpoint backendEndpoint;
    private final NettyTransport.Kind listenKind;
    private final NettyTransport.Kind backendKind;
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final CountDownLatch terminated = new CountDownLatch(1);
    private Channel serverChannel;

    /** The claim on the listen socket path (its lock, and the socket file bound). */
    private UnixSockets.Claim claim;

    private CriEndpoint bound;
    private boolean closed;

    public ProxyTransport(CriEndpoint listen, CriEndpoint backendEndpoint, int ioThreads) {
        this.listen = listen;
        this.backendEndpoint = backendEndpoint;
        this.listenKind = NettyTransport.forEndpoint(listen);
        this.backendKind = NettyTransport.forEndpoint(backendEndpoint);
        if (!listenKind.name().equals(backendKind.name())) {
            // a client connection and its backend leg share an event loop: one kind of loop for
            // both
            throw new IllegalArgumentException(
                    "the proxy relays between sockets of one kind; "
                            + listen
                            + " and "
                            + backendEndpoint
                            + " need "
                            + listenKind.name()
                            + " and "
                            + backendKind.name()
                            + " event loops");
        }
        this.serverLoop = listenKind.newGroup(ioThreads, "cri4j-proxy-io");
    }

    private RelayMetrics metrics = RelayMetrics.NONE;

    /** What the relays record of each call (before {@link #start}). */
    public synchronized void metrics(RelayMetrics metrics) {
        this.metrics = metrics;
    }

    /**
     * The gRPC channel to the backend (reconnects by itself; fails fast while the backend is down),
     * for the calls the proxy decodes or makes itself: made at the first call of this method, so
     * that a proxy that relays every call as frames starts without gRPC's client. After {@link
     * #close} it is shut down.
     */
    public ManagedChannel backend() {
        ManagedChannel b = backend;
        if (b != null) {
            return b; // every decoded call comes here: no lock once it is made
        }
        synchronized (this) {
            if (backend == null) {
                b =
                        CriChannels.builder(backendEndpoint)
                                .eventLoopGroup(serverLoop)
                                .directExecutor()
                                .build();
                if (closed) {
                    b.shutdownNow();
                }
                backend = b;
            }
            return backend;
        }
    }

    /** {@link #backend()} as a {@link io.grpc.Channel} that makes it at its first call. */
    public io.grpc.Channel lazyBackend() {
        return lazyBackend;
    }

    /**
     * Claims the listen socket path (its lock; a stale socket file is removed), so that a path
     * that cannot be used is reported before the proxy does anything else; {@link #start} claims
     * it if this was not called.
     */
    public synchronized void claim() throws IOException {
        if (claim == null && listen.isUnix()) {
            claim = UnixSockets.claim(listen.path());
        }
    }

    /** Binds the listen endpoint (replacing a stale unix socket) and starts serving. */
    public synchronized void start(InterceptedService service, String socketMode)
            throws IOException {
        RelayConnection.Setup relays =
                new RelayConnection.Setup(
                        service,
                        CriChannels.DEFAULT_MAX_MESSAGE_SIZE,
                        backendEndpoint.toString(),
                        this::connectBackend,
                        metrics);
        SocketAddress address;
        if (listen.isUnix()) {
            claim();
            address = new DomainSocketAddress(claim.bindPath().toString());
        } else {
            address = new InetSocketAddress(listen.host(), listen.port());
        }
        ServerBootstrap b =
                new ServerBootstrap()
                        .group(serverLoop)
                        .channel(listenKind.serverChannelType())
                        .childHandler(
                                new ChannelInitializer<Channel>() {
                                    @Override
                                    protected void initChannel(Channel ch) {
                                        connections.add(ch);
                                        new RelayConnection(relays, ch).install();
                                    }
                                });
        try {
            serverChannel = b.bind(address).sync().channel();
        } catch (Exception e) {
            if (claim != null) {
                claim.close();
                claim = null;
            }
            throw new IOException("cannot serve on " + listen + ": " + e.getMessage(), e);
        }
        if (listen.isUnix()) {
            claim.publish(UnixSockets.parseMode(socketMode));
            bound = listen;
        } else {
            bound =
                    CriEndpoint.tcp(
                            listen.host(),
                            ((InetSocketAddress) serverChannel.localAddress()).getPort());
        }
    }

    /** Connects a relay's backend leg, on the event loop of its client connection. */
    private ChannelFuture connectBackend(EventLoop loop, ChannelHandler handler) {
        SocketAddress address =
                backendEndpoint.isUnix()
                        ? new DomainSocketAddress(backendEndpoint.path().toString())
                        : new InetSocketAddress(backendEndpoint.host(), backendEndpoint.port());
        return new Bootstrap()
                .group(loop)
                .channel(backendKind.channelType())
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, CONNECT_TIMEOUT_MILLIS)
                .handler(handler)
                .connect(address);
    }

    /** The endpoint served (the real port for {@code tcp://host:0}). */
    public synchronized CriEndpoint endpoint() {
        return bound != null ? bound : listen;
    }

    /**
     * Runs {@code task} on one of the transport's event loops after {@code delayMillis}, unless the
     * transport closes first. The task must not block.
     */
    public void schedule(Runnable task, long delayMillis) {
        try {
            serverLoop.schedule(task, delayMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            // the loops are shutting down: nothing runs any more
        }
    }

    /** Blocks until the transport is closed. */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    /**
     * Stops serving, closes every client connection and its backend leg, the backend channel,
     * releases the threads and the socket; idempotent.
     */
    @Override
    public void close() {
        Channel s;
        UnixSockets.Claim c;
        ManagedChannel b;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            s = serverChannel;
            c = claim;
            b = backend;
        }
        try {
            if (s != null) {
                s.close().syncUninterruptibly();
            }
            connections.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
            if (b != null) {
                b.shutdownNow();
                try {
                    b.awaitTermination(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            if (c != null) {
                c.close(); // removes the socket only if it is still the one bound here
            }
        } finally {
            terminated.countDown();
        }
    }
}
