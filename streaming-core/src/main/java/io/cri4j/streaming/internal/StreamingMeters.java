package io.cri4j.streaming.internal;

import io.cri4j.streaming.StreamKind;
import java.util.function.IntSupplier;

/**
 * What a {@link io.cri4j.streaming.StreamingServer} records, with no Micrometer type in sight:
 * {@link #NONE} without a registry (Micrometer need not be on the class path then), a Micrometer
 * recorder otherwise. Not API.
 */
public interface StreamingMeters {

    /** Records nothing. */
    StreamingMeters NONE =
            new StreamingMeters() {
                @Override
                public void started(StreamKind kind, String transport, String protocol) {}

                @Override
                public void rejected(StreamKind kind, String transport) {}
            };

    /**
     * {@code cri4j_streaming_sessions_total{kind,transport,protocol}}, {@code
     * cri4j_streaming_sessions_active}, {@code cri4j_streaming_sessions_rejected_total{kind,transport}}
     * (429: too many sessions) and {@code cri4j_streaming_tokens} (requests waiting for their
     * client).
     *
     * @param registry a {@code MeterRegistry}, or null
     */
    static StreamingMeters of(Object registry, IntSupplier active, IntSupplier tokens) {
        return registry == null ? NONE : MicrometerStreamingMeters.create(registry, active, tokens);
    }

    /** A session was upgraded ({@code transport}: {@code spdy} or {@code websocket}). */
    void started(StreamKind kind, String transport, String protocol);

    /**
     * A streaming URL was refused: {@code cache_full} when a {@code get*} call found too many URLs
     * outstanding (RESOURCE_EXHAUSTED), {@code unknown} when a request came with a token that is
     * not (or no longer) in the cache (404).
     */
    default void tokenRejected(String reason) {}

    /** A session was refused: too many at once (429). */
    void rejected(StreamKind kind, String transport);

    /**
     * A handler that counts the bytes of an upgraded session's connection ({@code
     * cri4j_streaming_bytes_total{kind,transport,direction}}: {@code received} from the client,
     * {@code sent} to it, as on the wire after TLS), or null when nothing is recorded.
     */
    default io.netty.channel.ChannelHandler bytes(StreamKind kind, String transport) {
        return null;
    }
}
