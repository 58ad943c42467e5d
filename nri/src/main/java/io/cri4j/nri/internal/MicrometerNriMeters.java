package io.cri4j.nri.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/** {@link NriMeters} into a Micrometer registry; loaded only when a registry is given. */
final class MicrometerNriMeters implements NriMeters {
    private final Counter registrations;
    private final Counter disconnections;
    private final Counter rejections;
    private final AtomicInteger registered;

    private MicrometerNriMeters(
            Counter registrations,
            Counter disconnections,
            Counter rejections,
            AtomicInteger registered) {
        this.registrations = registrations;
        this.disconnections = disconnections;
        this.rejections = rejections;
        this.registered = registered;
    }

    static NriMeters plugin(Object registry, String plugin) {
        MeterRegistry r = (MeterRegistry) registry;
        Tags tags = Tags.of("plugin", plugin);
        AtomicInteger up = new AtomicInteger();
        Gauge.builder("cri4j.nri.plugin.registered", up, AtomicInteger::get)
                .description("1 while the NRI plugin is registered with its runtime, else 0")
                .tags(tags)
                .strongReference(true) // a lambda: nothing else holds it
                .register(r);
        return new MicrometerNriMeters(
                Counter.builder("cri4j.nri.plugin.registrations")
                        .description(
                                "Times the NRI plugin registered with its runtime (the first, then each reconnection)")
                        .tags(tags)
                        .register(r),
                Counter.builder("cri4j.nri.plugin.disconnections")
                        .description("Times the NRI plugin lost its runtime after registering")
                        .tags(tags)
                        .register(r),
                null,
                up);
    }

    static NriMeters host(Object registry, String socket, IntSupplier plugins) {
        MeterRegistry r = (MeterRegistry) registry;
        Tags tags = Tags.of("socket", socket);
        Gauge.builder("cri4j.nri.host.plugins", plugins, p -> p.getAsInt())
                .description("NRI plugins registered with the host now")
                .tags(tags)
                .strongReference(true) // a lambda: nothing else holds it
                .register(r);
        return new MicrometerNriMeters(
                Counter.builder("cri4j.nri.host.registrations")
                        .description("NRI plugins that registered with the host")
                        .tags(tags)
                        .register(r),
                Counter.builder("cri4j.nri.host.disconnections")
                        .description("Registered NRI plugins whose connection ended")
                        .tags(tags)
                        .register(r),
                Counter.builder("cri4j.nri.host.rejections")
                        .description("NRI connections refused or dropped before they registered")
                        .tags(tags)
                        .register(r),
                null);
    }

    @Override
    public void registered() {
        registrations.increment();
        if (registered != null) {
            registered.set(1);
        }
    }

    @Override
    public void disconnected() {
        disconnections.increment();
        if (registered != null) {
            registered.set(0);
        }
    }

    @Override
    public void rejected() {
        if (rejections != null) {
            rejections.increment();
        }
    }
}
