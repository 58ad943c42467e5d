package io.cri4j.cri.internal;

import io.cri4j.cri.CriEndpoint;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.kqueue.KQueue;
import io.netty.channel.kqueue.KQueueDomainSocketChannel;
import io.netty.channel.kqueue.KQueueIoHandler;
import io.netty.channel.kqueue.KQueueServerDomainSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * Picks the Netty transport for an endpoint: epoll domain sockets on Linux, kqueue on macOS, NIO
 * for gRPC over TCP; for streaming's TCP connections epoll where it loads. Not API.
 */
public final class NettyTransport {

    /** What Netty needs to open channels of one kind. */
    public record Kind(
            String name,
            IoHandlerFactory ioHandlerFactory,
            Class<? extends Channel> channelType,
            Class<? extends ServerChannel> serverChannelType) {

        /**
         * @param threads number of event loop threads
         * @param threadPrefix thread name prefix
         * @return a new event loop group with daemon threads; the caller shuts it down
         */
        public EventLoopGroup newGroup(int threads, String threadPrefix) {
            return new MultiThreadIoEventLoopGroup(
                    threads, new DefaultThreadFactory(threadPrefix, true), ioHandlerFactory);
        }
    }

    private static volatile EventLoopGroup sharedUnixClientGroup;
    private static volatile EventLoopGroup sharedTcpClientGroup;

    private NettyTransport() {}

    /**
     * @param endpoint the endpoint to connect to or serve on
     * @return the transport for it
     * @throws UnsupportedOperationException for a unix endpoint on a platform without epoll or kqueue
     */
    public static Kind forEndpoint(CriEndpoint endpoint) {
        if (!endpoint.isUnix()) {
            return nioTcp();
        }
        if (Epoll.isAvailable()) {
            return new Kind(
                    "epoll",
                    EpollIoHandler.newFactory(),
                    EpollDomainSocketChannel.class,
                    EpollServerDomainSocketChannel.class);
        }
        if (KQueue.isAvailable()) {
            return new Kind(
                    "kqueue",
                    KQueueIoHandler.newFactory(),
                    KQueueDomainSocketChannel.class,
                    KQueueServerDomainSocketChannel.class);
        }
        throw new UnsupportedOperationException(
                "unix domain sockets need Netty epoll (Linux) or kqueue (macOS); "
                        + "neither is available here: "
                        + Epoll.unavailabilityCause());
    }

    /**
     * The transport for TCP connections that carry bulk bytes (streaming): epoll where Netty's
     * native library loads (Linux), NIO elsewhere.
     *
     * @return epoll's TCP channels, or NIO's
     */
    public static Kind tcp() {
        if (Epoll.isAvailable()) {
            return new Kind(
                    "epoll",
                    EpollIoHandler.newFactory(),
                    EpollSocketChannel.class,
                    EpollServerSocketChannel.class);
        }
        return nioTcp();
    }

    private static Kind nioTcp() {
        return new Kind(
                "nio",
                NioIoHandler.newFactory(),
                NioSocketChannel.class,
                NioServerSocketChannel.class);
    }

    /**
     * A process-wide event loop group for client channels, created on first use, with daemon threads.
     * Channels share it the way grpc-java shares its default event loops, so closing a channel
     * never leaves a group behind.
     *
     * @param endpoint the endpoint a channel will connect to
     * @return the shared group for that endpoint's transport
     */
    public static EventLoopGroup sharedClientGroup(CriEndpoint endpoint) {
        if (endpoint.isUnix()) {
            EventLoopGroup g = sharedUnixClientGroup;
            if (g == null) {
                synchronized (NettyTransport.class) {
                    g = sharedUnixClientGroup;
                    if (g == null) {
                        g = forEndpoint(endpoint).newGroup(clientThreads(), "cri4j-client-unix");
                        sharedUnixClientGroup = g;
                    }
                }
            }
            return g;
        }
        EventLoopGroup g = sharedTcpClientGroup;
        if (g == null) {
            synchronized (NettyTransport.class) {
                g = sharedTcpClientGroup;
                if (g == null) {
                    g = forEndpoint(endpoint).newGroup(clientThreads(), "cri4j-client-tcp");
                    sharedTcpClientGroup = g;
                }
            }
        }
        return g;
    }

    private static int clientThreads() {
        return Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
    }
}
