package io.cri4j.cri;

import io.cri4j.cri.internal.NettyTransport;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.unix.DomainSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Client channels to a CRI endpoint with kubelet's defaults.
 *
 * <p>Unix sockets go through Netty epoll (Linux) or kqueue (macOS); TCP through NIO. Defaults:
 * {@value #DEFAULT_MAX_MESSAGE_SIZE} bytes maximum inbound message size (kubelet's 16 MiB), a
 * {@link #DEFAULT_CONNECT_TIMEOUT} connect timeout, and HTTP/2 keep-alive pings every
 * {@link #DEFAULT_KEEP_ALIVE_TIME} while calls are active (above grpc-go's five-minute
 * enforcement minimum, so containerd never answers {@code too_many_pings}).
 *
 * <pre>{@code
 * ManagedChannel channel = CriChannels.newChannel(CriEndpoint.parse("unix:///run/containerd/containerd.sock"));
 * try {
 *     VersionResponse v = RuntimeServiceGrpc.newBlockingStub(channel)
 *             .version(VersionRequest.getDefaultInstance());
 * } finally {
 *     channel.shutdownNow();
 * }
 * }</pre>
 */
public final class CriChannels {

    /** kubelet's maximum gRPC message size: 16 MiB. */
    public static final int DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024;

    /** Time allowed to establish the connection. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);

    /** Interval of keep-alive pings while calls are active. */
    public static final Duration DEFAULT_KEEP_ALIVE_TIME = Duration.ofMinutes(10);

    /** Time to wait for a keep-alive ping's answer before the connection is considered dead. */
    public static final Duration DEFAULT_KEEP_ALIVE_TIMEOUT = Duration.ofSeconds(20);

    private CriChannels() {}

    /**
     * Opens a channel with the defaults. The caller owns it and shuts it down.
     *
     * @param endpoint where the CRI service listens
     * @return a new channel (connects lazily, on the first call)
     */
    public static ManagedChannel newChannel(CriEndpoint endpoint) {
        return builder(endpoint).build();
    }

    /**
     * Opens a channel with the defaults.
     *
     * @param endpoint endpoint string as accepted by {@link CriEndpoint#parse(String)}
     * @return a new channel
     */
    public static ManagedChannel newChannel(String endpoint) {
        return newChannel(CriEndpoint.parse(endpoint));
    }

    /**
     * A channel builder preconfigured with the transport and the defaults, for callers that tune
     * more (interceptors, executors, other limits).
     *
     * @param endpoint where the CRI service listens
     * @return the builder
     */
    public static NettyChannelBuilder builder(CriEndpoint endpoint) {
        NettyTransport.Kind kind = NettyTransport.forEndpoint(endpoint);
        NettyChannelBuilder builder;
        if (endpoint.isUnix()) {
            builder =
                    NettyChannelBuilder.forAddress(
                                    new DomainSocketAddress(endpoint.path().toString()))
                            .overrideAuthority("localhost")
                            // a unix socket has no SO_KEEPALIVE; grpc would warn on every
                            // connection
                            .withOption(ChannelOption.SO_KEEPALIVE, null);
        } else {
            builder = NettyChannelBuilder.forAddress(endpoint.host(), endpoint.port());
        }
        return builder.channelType(kind.channelType())
                .eventLoopGroup(NettyTransport.sharedClientGroup(endpoint))
                .usePlaintext()
                .maxInboundMessageSize(DEFAULT_MAX_MESSAGE_SIZE)
                .withOption(
                        ChannelOption.CONNECT_TIMEOUT_MILLIS,
                        (int) DEFAULT_CONNECT_TIMEOUT.toMillis())
                .keepAliveTime(DEFAULT_KEEP_ALIVE_TIME.toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveTimeout(DEFAULT_KEEP_ALIVE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveWithoutCalls(false);
    }
}
