package io.cri4j.proxy.internal.hooks;

import io.cri4j.hook.HookChain;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Hands a registry (or an OpenTelemetry) kept as {@code Object} to APIs typed with Micrometer's
 * (OpenTelemetry's); loaded only with one. Not API.
 */
public final class MeterRegistries {
    private MeterRegistries() {}

    /** {@code chain.meterRegistry((MeterRegistry) registry)}. */
    public static void bind(HookChain.Builder chain, Object registry) {
        chain.meterRegistry((MeterRegistry) registry);
    }

    /** {@code chain.openTelemetry((OpenTelemetry) openTelemetry)}. */
    public static void bindTracing(HookChain.Builder chain, Object openTelemetry) {
        Tracers.bind(chain, openTelemetry);
    }

    /** Loaded only when there is an OpenTelemetry to hand over. */
    private static final class Tracers {
        static void bind(HookChain.Builder chain, Object openTelemetry) {
            chain.openTelemetry((io.opentelemetry.api.OpenTelemetry) openTelemetry);
        }
    }
}
