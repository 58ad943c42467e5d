package io.cri4j.nri.internal.ttrpc;

import java.util.ArrayList;
import java.util.List;

/** The W3C trace context as ttrpc request metadata, as NRI's Go peers send and read it. */
public final class TraceMetadata {

    private TraceMetadata() {}

    private static final io.grpc.Metadata.Key<String> TRACEPARENT =
            io.grpc.Metadata.Key.of("traceparent", io.grpc.Metadata.ASCII_STRING_MARSHALLER);
    private static final io.grpc.Metadata.Key<String> TRACESTATE =
            io.grpc.Metadata.Key.of("tracestate", io.grpc.Metadata.ASCII_STRING_MARSHALLER);

    /**
     * The W3C trace context of the traced hook call this request is made in ({@code traceparent},
     * {@code tracestate}), as ttrpc metadata; empty outside one.
     */
    public static List<io.cri4j.nri.internal.proto.KeyValue> current() {
        io.grpc.Metadata trace = io.cri4j.hook.internal.Tracing.TRACE_HEADERS.get();
        if (trace == null || trace.get(TRACEPARENT) == null) {
            return List.of();
        }
        List<io.cri4j.nri.internal.proto.KeyValue> out = new ArrayList<>(2);
        out.add(kv("traceparent", trace.get(TRACEPARENT)));
        String state = trace.get(TRACESTATE);
        if (state != null) {
            out.add(kv("tracestate", state));
        }
        return out;
    }

    private static io.cri4j.nri.internal.proto.KeyValue kv(String key, String value) {
        return io.cri4j.nri.internal.proto.KeyValue.newBuilder()
                .setKey(key)
                .setValue(value)
                .build();
    }
}
