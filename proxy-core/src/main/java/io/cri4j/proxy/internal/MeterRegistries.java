package io.cri4j.proxy.internal;

import io.cri4j.hook.HookChain;
import io.micrometer.core.instrument.MeterRegistry;

/** Hands a registry kept as {@code Object} to APIs typed with Micrometer's; loaded only with one. Not API. */
public final class MeterRegistries {
    private MeterRegistries() {}

    /** {@code chain.meterRegistry((MeterRegistry) registry)}. */
    public static void bind(HookChain.Builder chain, Object registry) {
        chain.meterRegistry((MeterRegistry) registry);
    }
}
