package io.cri4j.hook.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * {@link HookMetrics} into a Micrometer registry: {@code cri4j.hook.duration} (per chain, hook,
 * event and outcome) and {@code cri4j.hook.chain.duration} (per chain, event and outcome), timers
 * with histograms from 100 µs to 30 s, and the counter {@code cri4j.hook.ignored}. Loaded only when a registry is given.
 */
final class MicrometerHookMetrics implements HookMetrics {
    static final String HOOK = "cri4j.hook.duration";
    static final String CHAIN = "cri4j.hook.chain.duration";
    static final String IGNORED = "cri4j.hook.ignored";

    private final MeterRegistry registry;

    /** Meters by chain, then hook or event, ...: a record looks its meter up without a key object. */
    private final Map<String, Map<String, Map<String, Map<String, Timer>>>> hookTimers =
            new ConcurrentHashMap<>();

    private final Map<String, Map<String, Map<String, Timer>>> chainTimers =
            new ConcurrentHashMap<>();
    private final Map<String, Map<String, Map<String, Map<String, Counter>>>> ignoredCounters =
            new ConcurrentHashMap<>();

    private MicrometerHookMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    static HookMetrics create(Object registry) {
        return new MicrometerHookMetrics((MeterRegistry) registry);
    }

    /** The map under {@code key}, made on first use. */
    private static <V> Map<String, V> level(Map<String, Map<String, V>> m, String key) {
        Map<String, V> v = m.get(key);
        return v != null ? v : m.computeIfAbsent(key, k -> new ConcurrentHashMap<>());
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public void hook(String chain, String hook, String event, long nanos, String outcome) {
        Map<String, Timer> byOutcome = level(level(level(hookTimers, chain), hook), event);
        Timer t = byOutcome.get(outcome);
        if (t == null) {
            t =
                    byOutcome.computeIfAbsent(
                            outcome,
                            o ->
                                    timer(HOOK, "Latency of one hook's answer to one event")
                                            .tag("chain", chain)
                                            .tag("hook", hook)
                                            .tag("event", event)
                                            .tag("outcome", o)
                                            .register(registry));
        }
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void chain(String chain, String event, long nanos, String outcome) {
        Map<String, Timer> byOutcome = level(level(chainTimers, chain), event);
        Timer t = byOutcome.get(outcome);
        if (t == null) {
            t =
                    byOutcome.computeIfAbsent(
                            outcome,
                            o ->
                                    timer(
                                                    CHAIN,
                                                    "Latency of one event through every hook of a chain")
                                            .tag("chain", chain)
                                            .tag("event", event)
                                            .tag("outcome", o)
                                            .register(registry));
        }
        t.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void ignored(String chain, String hook, String event, String outcome) {
        Map<String, Counter> byOutcome = level(level(level(ignoredCounters, chain), hook), event);
        Counter c = byOutcome.get(outcome);
        if (c == null) {
            c =
                    byOutcome.computeIfAbsent(
                            outcome,
                            o ->
                                    Counter.builder(IGNORED)
                                            .description(
                                                    "Hook failures the hook's Ignore policy let the event go on without")
                                            .tag("chain", chain)
                                            .tag("hook", hook)
                                            .tag("event", event)
                                            .tag("outcome", o)
                                            .register(registry));
        }
        c.increment();
    }

    static Timer.Builder timer(String name, String description) {
        return Timer.builder(name)
                .description(description)
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofNanos(100_000))
                .maximumExpectedValue(Duration.ofSeconds(30));
    }
}
