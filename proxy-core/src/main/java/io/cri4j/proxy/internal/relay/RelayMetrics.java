package io.cri4j.proxy.internal.relay;

import io.grpc.MethodDescriptor;

/**
 * What the relay records of each call, with no Micrometer type in sight: {@link #NONE} without a
 * registry (Micrometer need not be on the class path then), a Micrometer recorder otherwise. A call
 * is identified by a handle per method ({@link #forPath}, {@link #forMethod}), found once per method
 * and connection, so that recording a call allocates nothing. Not API.
 */
public abstract class RelayMetrics {

    /** Records nothing. */
    public static final RelayMetrics NONE =
            new RelayMetrics() {
                @Override
                boolean enabled() {
                    return false;
                }

                @Override
                Object forPath(CharSequence path) {
                    return null;
                }

                @Override
                Object forMethod(MethodDescriptor<?, ?> method) {
                    return null;
                }

                @Override
                void started() {}

                @Override
                void ended(Object method, boolean intercepted, int code, long nanos) {}
            };

    /** A call that ended without a gRPC status (reset, or its connection went). */
    static final int NO_STATUS = -1;

    /**
     * @param registry a {@code io.micrometer.core.instrument.MeterRegistry}, or null
     * @return a recorder into it; {@link #NONE} for null
     */
    public static RelayMetrics of(Object registry) {
        return registry == null ? NONE : MicrometerRelayMetrics.create(registry);
    }

    abstract boolean enabled();

    /** The handle of a request path ({@code /runtime.v1.RuntimeService/Version}). */
    abstract Object forPath(CharSequence path);

    /** The handle of an intercepted method. */
    abstract Object forMethod(MethodDescriptor<?, ?> method);

    /** A call began. */
    abstract void started();

    /**
     * A call ended.
     *
     * @param method its handle
     * @param intercepted whether interceptors or hooks answered it (else relayed)
     * @param code its gRPC status code, or {@link #NO_STATUS}
     */
    abstract void ended(Object method, boolean intercepted, int code, long nanos);

    /** A relay connection to the runtime was made (its HTTP/2 preface sent). */
    void backendConnected() {}

    /** A relay connection to the runtime could not be made. */
    void backendConnectFailed() {}

    /**
     * A relay connection to the runtime that was made is closed.
     *
     * @param lost whether the runtime ended it (went away, or sent GOAWAY), else the proxy closed it
     *     (its client left)
     */
    void backendClosed(boolean lost) {}
}
