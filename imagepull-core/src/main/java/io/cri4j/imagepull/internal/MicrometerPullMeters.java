package io.cri4j.imagepull.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/** {@link PullMeters} into a Micrometer registry; loaded only when a registry is given. */
final class MicrometerPullMeters implements PullMeters {
    private final MeterRegistry registry;
    private final String counter;
    private final String timer;
    private final Counter bytes;
    private final Map<String, Counter> pulls = new ConcurrentHashMap<>();
    private final Map<String, Timer> durations = new ConcurrentHashMap<>();

    private MicrometerPullMeters(MeterRegistry registry, boolean own) {
        this.registry = registry;
        this.counter = own ? "cri4j.imagepull.pulls" : "cri4j.imagepull.observed.pulls";
        this.timer =
                own ? "cri4j.imagepull.pull.duration" : "cri4j.imagepull.observed.pull.duration";
        this.bytes =
                Counter.builder(
                                own
                                        ? "cri4j.imagepull.pulled.bytes"
                                        : "cri4j.imagepull.observed.bytes")
                        .baseUnit("bytes")
                        .description("Bytes the pulls that succeeded downloaded")
                        .register(registry);
    }

    static PullMeters create(Object registry, String prefix, IntSupplier active) {
        MeterRegistry r = (MeterRegistry) registry;
        boolean own = prefix.equals("pull");
        Gauge.builder(
                        own
                                ? "cri4j.imagepull.pulls.active"
                                : "cri4j.imagepull.observed.pulls.active",
                        active,
                        IntSupplier::getAsInt)
                .description(
                        own
                                ? "Pulls the image puller is running now"
                                : "Pulls others make that are followed now")
                .strongReference(true) // a lambda: nothing else holds it
                .register(r);
        return new MicrometerPullMeters(r, own);
    }

    @Override
    public void ended(String outcome, long nanos, long downloaded) {
        pulls.computeIfAbsent(
                        outcome,
                        o ->
                                Counter.builder(counter)
                                        .description("Image pulls that ended, by outcome")
                                        .tag("outcome", o)
                                        .register(registry))
                .increment();
        durations
                .computeIfAbsent(
                        outcome,
                        o ->
                                Timer.builder(timer)
                                        .description("How long image pulls took, by outcome")
                                        .tag("outcome", o)
                                        .publishPercentileHistogram()
                                        .minimumExpectedValue(Duration.ofMillis(10))
                                        .maximumExpectedValue(Duration.ofMinutes(30))
                                        .register(registry))
                .record(nanos, TimeUnit.NANOSECONDS);
        if (downloaded > 0 && outcome.equals("succeeded")) {
            bytes.increment((double) downloaded);
        }
    }
}
