package io.cri4j.hook.internal;

import io.grpc.Metadata;
import java.util.concurrent.Executor;

/**
 * The spans a module records, with no OpenTelemetry type in sight: {@link #NONE} when no {@code
 * OpenTelemetry} was given (the OpenTelemetry API need not be on the class path then), an
 * OpenTelemetry recorder otherwise. A span is handed around as an opaque context object (the
 * OpenTelemetry {@code Context} holding it). Not API.
 */
public interface Tracing {

    /** Records nothing. */
    Tracing NONE = new Tracing() {};

    /**
     * The W3C trace context ({@code traceparent}, {@code tracestate}) of the span current in
     * {@link #open}, for the gRPC calls a hook makes (a Koordinator hook server's); absent outside
     * a traced hook call.
     */
    io.grpc.Context.Key<Metadata> TRACE_HEADERS = io.grpc.Context.key("cri4j-trace-headers");

    /** Span kinds, as OpenTelemetry's. */
    enum Kind {
        SERVER,
        CLIENT,
        INTERNAL
    }

    /** A scope {@link #open} made current; closing it restores what was current before. */
    interface Scope extends AutoCloseable {
        Scope NOOP = () -> {};

        @Override
        void close();
    }

    /**
     * @param openTelemetry an {@code io.opentelemetry.api.OpenTelemetry}, or null
     * @param scope the instrumentation scope's name ({@code io.cri4j.hook}, ...)
     * @return spans into it; {@link #NONE} for null
     */
    static Tracing of(Object openTelemetry, String scope) {
        return openTelemetry == null ? NONE : OtelTracing.create(openTelemetry, scope);
    }

    /** Whether anything is recorded. */
    default boolean enabled() {
        return false;
    }

    /** The context current on this thread (a parent for {@link #start}); null when disabled. */
    default Object current() {
        return null;
    }

    /**
     * Starts a span.
     *
     * @param parent a context from {@link #current} or {@link #start}; null for the current one
     * @param attributes name, value pairs
     * @return the span's context; null when disabled
     */
    default Object start(Object parent, String name, Kind kind, String... attributes) {
        return null;
    }

    /**
     * Starts a span whose parent is the W3C trace context in {@code headers} (an incoming call's),
     * or the current context when they carry none.
     */
    default Object startFrom(Metadata headers, String name, Kind kind, String... attributes) {
        return null;
    }

    /**
     * Ends {@code span} (nothing for null).
     *
     * @param failure what failed it, or null when it succeeded
     * @param attributes name, value pairs set before it ends
     */
    default void end(Object span, Throwable failure, String... attributes) {}

    /**
     * Makes {@code span} current on this thread, for OpenTelemetry and as {@link #TRACE_HEADERS}
     * in the gRPC context, until the scope is closed.
     */
    default Scope open(Object span) {
        return Scope.NOOP;
    }

    /** {@code executor}, running each task in the context current when it was submitted. */
    default Executor wrap(Executor executor) {
        return executor;
    }

    /** The context of a W3C trace context read from {@code header}; null when it has none. */
    default Object extract(java.util.function.Function<String, String> header) {
        return null;
    }
}
