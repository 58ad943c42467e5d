package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.grpc.ManagedChannel;

/**
 * The proxy benchmarks' clients, framing a unary request as kubelet's grpc-go client does: the
 * request message's DATA frame carries END_STREAM. grpc-java's channel with its default retry
 * support flushes the message before the half-close, so in most calls (about 60 % here) the
 * END_STREAM comes in an empty DATA frame of its own, a second write; a proxy that must have the
 * whole request before its hooks run then waits for that write, which kubelet never makes. With
 * {@code -DgrpcJavaRetry=true} the clients are grpc-java's default ones instead.
 */
final class KubeletLikeChannels {
    private KubeletLikeChannels() {}

    static ManagedChannel newChannel(CriEndpoint endpoint) {
        return Boolean.getBoolean("grpcJavaRetry")
                ? CriChannels.newChannel(endpoint)
                : CriChannels.builder(endpoint).disableRetry().build();
    }
}
