package io.cri4j.proxy.internal.relay;

import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link RelayMetrics} into a Micrometer registry: {@code cri4j.proxy.calls} (a counter per service,
 * method, gRPC code and kind), {@code cri4j.proxy.call.duration} (a timer per service, method and
 * kind, histogram from 100 µs to 30 s) and {@code cri4j.proxy.calls.inflight}. At most 256 request
 * paths are told apart; more are recorded as method {@code other}. Loaded only when a registry is
 * given.
 */
final class MicrometerRelayMetrics extends RelayMetrics {
    private static final int MAX_PATHS = 256;
    private static final String[] CODES = new String[Status.Code.values().length + 1];

    static {
        for (Status.Code c : Status.Code.values()) {
            CODES[c.value()] = c.name();
        }
        CODES[CODES.length - 1] = "NONE"; // no status: reset, or the connection went
    }

    private final MeterRegistry registry;
    private final Map<String, Method> byPath = new ConcurrentHashMap<>();
    private final Map<MethodDescriptor<?, ?>, Method> byMethod = new ConcurrentHashMap<>();
    private final AtomicInteger inflight = new AtomicInteger();
    private final Method other;
    private final AtomicInteger backendConnections = new AtomicInteger();
    private final Counter backendConnectFailures;
    private final Counter backendLost;

    private MicrometerRelayMetrics(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder("cri4j.proxy.calls.inflight", inflight, AtomicInteger::get)
                .description("CRI calls the proxy is serving now")
                .register(registry);
        Gauge.builder("cri4j.proxy.backend.connections", backendConnections, AtomicInteger::get)
                .description(
                        "Relay connections to the runtime open now (one per client connection that made a call)")
                .register(registry);
        this.backendConnectFailures =
                Counter.builder("cri4j.proxy.backend.connect.failures")
                        .description("Relay connections to the runtime that could not be made")
                        .register(registry);
        this.backendLost =
                Counter.builder("cri4j.proxy.backend.connections.lost")
                        .description(
                                "Relay connections to the runtime that the runtime ended (went away, or sent GOAWAY)")
                        .register(registry);
        this.other = new Method("unknown", "other");
    }

    static RelayMetrics create(Object registry) {
        return new MicrometerRelayMetrics((MeterRegistry) registry);
    }

    /** The meters of one method, made on first use per kind and code. */
    private final class Method {
        final String service;
        final String method;
        final Timer[] timers = new Timer[2];
        final Counter[][] calls = new Counter[2][CODES.length];

        Method(String service, String method) {
            this.service = service;
            this.method = method;
        }

        void record(boolean intercepted, int code, long nanos) {
            int k = intercepted ? 1 : 0;
            int c = code >= 0 && code < CODES.length - 1 ? code : CODES.length - 1;
            Timer t = timers[k];
            if (t == null) {
                t =
                        Timer.builder("cri4j.proxy.call.duration")
                                .description(
                                        "Latency of CRI calls through the proxy, from the request's headers to the end of the answer")
                                .tag("service", service)
                                .tag("method", method)
                                .tag("kind", kind(k))
                                .publishPercentileHistogram()
                                .minimumExpectedValue(Duration.ofNanos(100_000))
                                .maximumExpectedValue(Duration.ofSeconds(30))
                                .register(registry);
                timers[k] = t;
            }
            t.record(nanos, TimeUnit.NANOSECONDS);
            Counter n = calls[k][c];
            if (n == null) {
                n =
                        Counter.builder("cri4j.proxy.calls")
                                .description(
                                        "CRI calls through the proxy, by the gRPC status they ended with")
                                .tag("service", service)
                                .tag("method", method)
                                .tag("code", CODES[c])
                                .tag("kind", kind(k))
                                .register(registry);
                calls[k][c] = n;
            }
            n.increment();
        }
    }

    @Override
    void backendConnected() {
        backendConnections.incrementAndGet();
    }

    @Override
    void backendConnectFailed() {
        backendConnectFailures.increment();
    }

    @Override
    void backendClosed(boolean lost) {
        backendConnections.decrementAndGet();
        if (lost) {
            backendLost.increment();
        }
    }

    private static String kind(int k) {
        return k == 1 ? "intercepted" : "relayed";
    }

    @Override
    boolean enabled() {
        return true;
    }

    @Override
    Object forPath(CharSequence path) {
        if (path == null) {
            return other;
        }
        String p = path.toString();
        Method m = byPath.get(p);
        if (m != null) {
            return m;
        }
        if (byPath.size() >= MAX_PATHS) {
            return other;
        }
        return byPath.computeIfAbsent(p, MicrometerRelayMetrics.this::method);
    }

    private Method method(String path) {
        String s = path.startsWith("/") ? path.substring(1) : path;
        int slash = s.lastIndexOf('/');
        return slash <= 0
                ? new Method("unknown", s)
                : new Method(s.substring(0, slash), s.substring(slash + 1));
    }

    @Override
    Object forMethod(MethodDescriptor<?, ?> md) {
        Method m = byMethod.get(md);
        return m != null ? m : byMethod.computeIfAbsent(md, d -> method(d.getFullMethodName()));
    }

    @Override
    void started() {
        inflight.incrementAndGet();
    }

    @Override
    void ended(Object method, boolean intercepted, int code, long nanos) {
        inflight.decrementAndGet();
        ((Method) method).record(intercepted, code, nanos);
    }
}
