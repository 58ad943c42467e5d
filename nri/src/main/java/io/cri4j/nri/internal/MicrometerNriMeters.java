package io.cri4j.nri.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/** {@link NriMeters} into a Micrometer registry; loaded only when a registry is given. */
final class MicrometerNriMeters implements NriMeters {
    private final Counter registrations;
    private final Counter disconnections;
    private final Counter rejections;
    private final AtomicInteger registered;
    private final MeterRegistry registry;
    private final Tags tags;
    private final Map<String, Timer> requests = new ConcurrentHashMap<>();
    private final DistributionSummary syncPods;
    private final DistributionSummary syncContainers;

    private MicrometerNriMeters(
            MeterRegistry registry,
            Tags tags,
            Counter registrations,
            Counter disconnections,
            Counter rejections,
            AtomicInteger registered) {
        this.registry = registry;
        this.tags = tags;
        this.syncPods = registered == null ? null : syncSize(registry, tags, "pod");
        this.syncContainers = registered == null ? null : syncSize(registry, tags, "container");
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
                r,
                tags,
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
                r,
                tags,
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

    private static DistributionSummary syncSize(MeterRegistry r, Tags tags, String kind) {
        return DistributionSummary.builder("cri4j.nri.plugin.synchronize.size")
                .description("Pods or containers in one Synchronize request of the runtime")
                .baseUnit("objects")
                .tags(tags)
                .tag("kind", kind)
                .register(r);
    }

    @Override
    public void request(String method, long nanos, String outcome) {
        requests.computeIfAbsent(
                        method + '\0' + outcome,
                        k ->
                                Timer.builder("cri4j.nri.plugin.request.duration")
                                        .description(
                                                "Time the NRI plugin took to answer one request of the runtime")
                                        .tags(tags)
                                        .tag("method", method)
                                        .tag("outcome", outcome)
                                        .publishPercentileHistogram()
                                        .minimumExpectedValue(Duration.ofNanos(100_000))
                                        .maximumExpectedValue(Duration.ofSeconds(30))
                                        .register(registry))
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void synchronize(int pods, int containers) {
        if (syncPods != null) {
            syncPods.record(pods);
            syncContainers.record(containers);
        }
    }

    @Override
    public void rejected() {
        if (rejections != null) {
            rejections.increment();
        }
    }
}
