package io.cri4j.hook;

import static io.cri4j.hook.HookChainTest.CTR;
import static io.cri4j.hook.HookChainTest.POD;
import static io.cri4j.hook.HookChainTest.creating;
import static io.cri4j.hook.HookChainTest.failure;
import static io.cri4j.hook.HookChainTest.get;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a {@link HookChain} given a registry records: each hook's latency per event with its outcome
 * (adjusted, ok, timeout, failed; a failure under Ignore counted as ignored too), the chain's total per event (ok, conflict), and nothing
 * at all, with Micrometer absent from the class path, when no registry is given.
 */
class HookChainMetricsTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final List<HookChain> chains = new ArrayList<>();

    @AfterEach
    void close() {
        chains.forEach(HookChain::close);
    }

    private HookChain chain(String name, Object... hooks) {
        HookChain c =
                HookChain.builder()
                        .name(name)
                        .meterRegistry(registry)
                        .addAll(List.of(hooks))
                        .build();
        chains.add(c);
        return c;
    }

    private Timer hookTimer(String chain, String hook, String outcome) {
        return registry.find("cri4j.hook.duration")
                .tags("chain", chain, "hook", hook, "event", "CreateContainer", "outcome", outcome)
                .timer();
    }

    @Test
    void recordsEachHooksLatencyAndOutcomeAndTheChainsTotal() throws Exception {
        HookPolicy ignoreFast = new HookPolicy(30, Duration.ofMillis(100), FailurePolicy.IGNORE);
        HookChain c =
                chain(
                        "metrics",
                        creating(
                                "adds-env",
                                HookChainTest.FAIL,
                                x ->
                                        HookResult.adjust(
                                                Adjustments.create().addEnv("A", "1").build())),
                        creating("looks", HookChainTest.FAIL.withIndex(60), x -> HookResult.none()),
                        creating(
                                "slow",
                                ignoreFast,
                                x -> {
                                    try {
                                        Thread.sleep(5_000);
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                    return HookResult.none();
                                }));
        for (int i = 0; i < 3; i++) {
            get(c.createContainer(POD, CTR));
        }
        assertThat(hookTimer("metrics", "adds-env", "adjusted").count()).isEqualTo(3);
        assertThat(hookTimer("metrics", "looks", "ok").count()).isEqualTo(3);
        Timer slow = hookTimer("metrics", "slow", "timeout");
        assertThat(slow.count()).as("timed out under Ignore").isEqualTo(3);
        assertThat(
                        registry.find("cri4j.hook.ignored")
                                .tags("hook", "slow", "outcome", "timeout")
                                .counter()
                                .count())
                .isEqualTo(3);
        assertThat(slow.totalTime(TimeUnit.MILLISECONDS)).isGreaterThanOrEqualTo(3 * 100.0);
        Timer total =
                registry.find("cri4j.hook.chain.duration")
                        .tags("chain", "metrics", "event", "CreateContainer", "outcome", "ok")
                        .timer();
        assertThat(total.count()).isEqualTo(3);
        assertThat(total.totalTime(TimeUnit.NANOSECONDS))
                .isGreaterThanOrEqualTo(slow.totalTime(TimeUnit.NANOSECONDS));
    }

    @Test
    void aTimeoutUnderFailAndAConflictAreCountedAsSuch() throws Exception {
        HookChain timesOut =
                chain(
                        "strict",
                        creating(
                                "late",
                                new HookPolicy(10, Duration.ofMillis(50), FailurePolicy.FAIL),
                                x -> {
                                    try {
                                        Thread.sleep(5_000);
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                    return HookResult.none();
                                }));
        assertThat(failure(timesOut.createContainer(POD, CTR)))
                .isInstanceOf(HookTimeoutException.class);
        assertThat(hookTimer("strict", "late", "timeout").count()).isEqualTo(1);
        assertThat(
                        registry.find("cri4j.hook.chain.duration")
                                .tags("chain", "strict", "outcome", "timeout")
                                .timer()
                                .count())
                .isEqualTo(1);

        HookChain conflicting =
                chain(
                        "conflicting",
                        creating(
                                "one",
                                HookChainTest.FAIL,
                                x ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .setLinuxCpuSetCpus("0")
                                                        .build())),
                        creating(
                                "two",
                                HookChainTest.FAIL.withIndex(70),
                                x ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .setLinuxCpuSetCpus("1")
                                                        .build())));
        assertThat(failure(conflicting.createContainer(POD, CTR)))
                .isInstanceOf(HookConflictException.class);
        assertThat(
                        registry.find("cri4j.hook.chain.duration")
                                .tags("chain", "conflicting", "outcome", "conflict")
                                .timer()
                                .count())
                .isEqualTo(1);
    }

    @Test
    void withoutARegistryNothingIsRecordedAndMicrometerNeedNotBeThere() throws Exception {
        List<URL> path = new ArrayList<>();
        for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (!p.contains("micrometer")) {
                path.add(Path.of(p).toUri().toURL());
            }
        }
        try (URLClassLoader noMicrometer =
                new URLClassLoader(
                        path.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            Class<?> probe = noMicrometer.loadClass(NoMicrometerProbe.class.getName());
            Object result = probe.getMethod("run").invoke(null);
            assertThat(result).isEqualTo("adjusted 1 env");
            assertThat(
                            Class.forName(
                                    "io.micrometer.core.instrument.MeterRegistry",
                                    false,
                                    HookChainMetricsTest.class.getClassLoader()))
                    .as("present here, absent there")
                    .isNotNull();
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () ->
                                    noMicrometer.loadClass(
                                            "io.micrometer.core.instrument.MeterRegistry"))
                    .isInstanceOf(ClassNotFoundException.class);
        }
    }

    /** Runs a chain without a registry; loaded by a class loader that has no Micrometer. */
    public static final class NoMicrometerProbe {
        private NoMicrometerProbe() {}

        public static String run() throws Exception {
            AtomicInteger calls = new AtomicInteger();
            try (HookChain c =
                    HookChain.builder()
                            .add(
                                    creating(
                                            "env",
                                            HookChainTest.FAIL,
                                            x -> {
                                                calls.incrementAndGet();
                                                return HookResult.adjust(
                                                        Adjustments.create()
                                                                .addEnv("B", "2")
                                                                .build());
                                            }))
                            .build()) {
                HookResult r = get(c.createContainer(POD, CTR));
                return r.adjustment().getEnvCount() == 1
                        ? "adjusted " + calls.get() + " env"
                        : "wrong: " + r;
            }
        }
    }
}
