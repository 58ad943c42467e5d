package io.cri4j.streaming.internal;

import io.cri4j.streaming.StreamKind;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import java.util.function.IntSupplier;

/** {@link StreamingMeters} into a Micrometer registry; loaded only when a registry is given. */
final class MicrometerStreamingMeters implements StreamingMeters {
    private final MeterRegistry registry;

    private MicrometerStreamingMeters(MeterRegistry registry) {
        this.registry = registry;
    }

    static StreamingMeters create(Object registry, IntSupplier active, IntSupplier tokens) {
        MeterRegistry r = (MeterRegistry) registry;
        Gauge.builder("cri4j.streaming.sessions.active", active, IntSupplier::getAsInt)
                .description("Streaming sessions (exec, attach, port-forward) open now")
                .strongReference(true)
                .register(r);
        Gauge.builder("cri4j.streaming.tokens", tokens, IntSupplier::getAsInt)
                .description(
                        "Streaming requests whose URL was handed out and not yet used or expired")
                .strongReference(true)
                .register(r);
        return new MicrometerStreamingMeters(r);
    }

    private static String kind(StreamKind k) {
        return k.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void started(StreamKind kind, String transport, String protocol) {
        Counter.builder("cri4j.streaming.sessions")
                .description("Streaming sessions upgraded, by kind, transport and protocol")
                .tag("kind", kind(kind))
                .tag("transport", transport)
                .tag("protocol", protocol == null || protocol.isEmpty() ? "none" : protocol)
                .register(registry)
                .increment();
    }

    @Override
    public void tokenRejected(String reason) {
        Counter.builder("cri4j.streaming.token.rejections")
                .description(
                        "Streaming URLs refused: cache_full (too many outstanding), unknown (a used, expired or made-up token, 404)")
                .tag("reason", reason)
                .register(registry)
                .increment();
    }

    @Override
    public void rejected(StreamKind kind, String transport) {
        Counter.builder("cri4j.streaming.sessions.rejected")
                .description("Streaming sessions refused with 429: too many at once")
                .tag("kind", kind(kind))
                .tag("transport", transport)
                .register(registry)
                .increment();
    }

    @Override
    public io.netty.channel.ChannelHandler bytes(StreamKind kind, String transport) {
        return new ByteCounter(
                bytesCounter(kind, transport, "received"), bytesCounter(kind, transport, "sent"));
    }

    private Counter bytesCounter(StreamKind kind, String transport, String direction) {
        return Counter.builder("cri4j.streaming.bytes")
                .description(
                        "Bytes of upgraded streaming sessions on the wire, received from and sent to clients")
                .baseUnit("bytes")
                .tag("kind", kind(kind))
                .tag("transport", transport)
                .tag("direction", direction)
                .register(registry);
    }

    /** Counts what one session's connection reads and writes; nothing allocated per buffer. */
    private static final class ByteCounter extends io.netty.channel.ChannelDuplexHandler {
        private final Counter received;
        private final Counter sent;

        ByteCounter(Counter received, Counter sent) {
            this.received = received;
            this.sent = sent;
        }

        @Override
        public void channelRead(io.netty.channel.ChannelHandlerContext c, Object msg) {
            if (msg instanceof io.netty.buffer.ByteBuf b) {
                received.increment(b.readableBytes());
            }
            c.fireChannelRead(msg);
        }

        @Override
        public void write(
                io.netty.channel.ChannelHandlerContext c,
                Object msg,
                io.netty.channel.ChannelPromise promise) {
            if (msg instanceof io.netty.buffer.ByteBuf b) {
                sent.increment(b.readableBytes());
            }
            c.write(msg, promise);
        }
    }
}
