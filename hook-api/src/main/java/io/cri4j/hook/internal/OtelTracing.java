package io.cri4j.hook.internal;

import io.grpc.Metadata;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.Function;

/**
 * {@link Tracing} into an OpenTelemetry tracer. Trace context crosses processes as W3C trace
 * context ({@code traceparent}, {@code tracestate}) whatever propagators the OpenTelemetry
 * instance has, since that is what the peers (Koordinator's hook servers, kubelet's tracing) read.
 * Loaded only when an OpenTelemetry instance is given.
 */
final class OtelTracing implements Tracing {
    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final Metadata.Key<String> TRACEPARENT =
            Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> TRACESTATE =
            Metadata.Key.of("tracestate", Metadata.ASCII_STRING_MARSHALLER);

    private static final TextMapGetter<Function<String, String>> GETTER =
            new TextMapGetter<>() {
                @Override
                @SuppressWarnings("deprecation") // TextMapGetter still requires it
                public Iterable<String> keys(Function<String, String> carrier) {
                    return List.of("traceparent", "tracestate");
                }

                @Override
                public String get(Function<String, String> carrier, String key) {
                    return carrier == null ? null : carrier.apply(key);
                }
            };

    private final Tracer tracer;

    private OtelTracing(Tracer tracer) {
        this.tracer = tracer;
    }

    static Tracing create(Object openTelemetry, String scope) {
        return new OtelTracing(((OpenTelemetry) openTelemetry).getTracer(scope));
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public Object current() {
        return Context.current();
    }

    @Override
    public Object start(Object parent, String name, Kind kind, String... attributes) {
        Context p = parent == null ? Context.current() : (Context) parent;
        return begin(p, name, kind, attributes);
    }

    @Override
    public Object startFrom(Metadata headers, String name, Kind kind, String... attributes) {
        Context p = Context.current();
        if (headers != null && headers.containsKey(TRACEPARENT)) {
            p =
                    W3C.extract(
                            p,
                            (Function<String, String>)
                                    k ->
                                            headers.get(
                                                    k.equals("traceparent")
                                                            ? TRACEPARENT
                                                            : TRACESTATE),
                            GETTER);
        }
        return begin(p, name, kind, attributes);
    }

    private Context begin(Context parent, String name, Kind kind, String... attributes) {
        SpanBuilder b =
                tracer.spanBuilder(name)
                        .setParent(parent)
                        .setSpanKind(
                                switch (kind) {
                                    case SERVER -> SpanKind.SERVER;
                                    case CLIENT -> SpanKind.CLIENT;
                                    case INTERNAL -> SpanKind.INTERNAL;
                                });
        for (int i = 0; i + 1 < attributes.length; i += 2) {
            b.setAttribute(attributes[i], attributes[i + 1]);
        }
        return parent.with(b.startSpan());
    }

    @Override
    public void end(Object span, Throwable failure, String... attributes) {
        if (span == null) {
            return;
        }
        Span s = Span.fromContext((Context) span);
        if (attributes.length > 0) {
            AttributesBuilder a = io.opentelemetry.api.common.Attributes.builder();
            for (int i = 0; i + 1 < attributes.length; i += 2) {
                a.put(attributes[i], attributes[i + 1]);
            }
            s.setAllAttributes(a.build());
        }
        if (failure != null) {
            String m = failure.getMessage();
            s.setStatus(StatusCode.ERROR, m == null ? failure.getClass().getSimpleName() : m);
        }
        s.end();
    }

    @Override
    @SuppressWarnings("MustBeClosedChecker") // the returned Scope closes the OpenTelemetry scope
    public Scope open(Object span) {
        if (span == null) {
            return Scope.NOOP;
        }
        Context c = (Context) span;
        io.opentelemetry.context.Scope otel = c.makeCurrent();
        Metadata headers = new Metadata();
        W3C.inject(
                c,
                headers,
                (md, k, v) -> md.put(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER), v));
        io.grpc.Context grpc = io.grpc.Context.current().withValue(TRACE_HEADERS, headers);
        io.grpc.Context previous = grpc.attach();
        return () -> {
            grpc.detach(previous);
            otel.close();
        };
    }

    @Override
    public Executor wrap(Executor executor) {
        return Context.taskWrapping(executor);
    }

    @Override
    public Object extract(Function<String, String> header) {
        if (header.apply("traceparent") == null) {
            return null;
        }
        return W3C.extract(Context.root(), header, GETTER);
    }
}
