package io.cri4j.hook;

import static io.cri4j.hook.HookChainTest.CTR;
import static io.cri4j.hook.HookChainTest.POD;
import static io.cri4j.hook.HookChainTest.creating;
import static io.cri4j.hook.HookChainTest.creatingAsync;
import static io.cri4j.hook.HookChainTest.failure;
import static io.cri4j.hook.HookChainTest.get;
import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a {@link HookChain} given an OpenTelemetry records: a span per event under the caller's
 * span, a span per hook under it with the hook's outcome (an Ignored timeout marked so), the
 * hook's span current while a blocking hook runs on its worker; nothing, with the OpenTelemetry API
 * absent from the class path, when none is given.
 */
class HookChainTracingTest {
    static final AttributeKey<String> NAME = AttributeKey.stringKey("cri4j.hook.name");
    static final AttributeKey<String> EVENT = AttributeKey.stringKey("cri4j.hook.event");
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("cri4j.hook.outcome");
    static final AttributeKey<String> IGNORED = AttributeKey.stringKey("cri4j.hook.ignored");

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final SdkTracerProvider provider =
            SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
    private final OpenTelemetrySdk otel =
            OpenTelemetrySdk.builder().setTracerProvider(provider).build();
    private final List<HookChain> chains = new ArrayList<>();

    @AfterEach
    void close() {
        chains.forEach(HookChain::close);
        otel.close();
    }

    private HookChain chain(String name, Object... hooks) {
        HookChain c =
                HookChain.builder().name(name).openTelemetry(otel).addAll(List.of(hooks)).build();
        chains.add(c);
        return c;
    }

    @Test
    void anEventIsASpanUnderTheCallersWithASpanPerHook() throws Exception {
        AtomicReference<String> seenOnWorker = new AtomicReference<>();
        HookChain c =
                chain(
                        "traced",
                        creating(
                                "adds-env",
                                HookChainTest.FAIL,
                                x -> {
                                    seenOnWorker.set(Span.current().getSpanContext().getSpanId());
                                    return HookResult.adjust(
                                            Adjustments.create().addEnv("A", "1").build());
                                }),
                        creatingAsync(
                                "looks", HookChainTest.FAIL.withIndex(60), x -> HookResult.none()),
                        creating(
                                "slow",
                                new HookPolicy(70, Duration.ofMillis(100), FailurePolicy.IGNORE),
                                x -> {
                                    try {
                                        Thread.sleep(5_000);
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                    return HookResult.none();
                                }));
        Span call = otel.getTracer("test").spanBuilder("CreateContainer call").startSpan();
        try (Scope s = call.makeCurrent()) {
            get(c.createContainer(POD, CTR));
        } finally {
            call.end();
        }

        Map<String, SpanData> byName = byName(spans.getFinishedSpanItems(), this::label);
        SpanData event = byName.get("hooks CreateContainer");
        assertThat(event).as("the event's span").isNotNull();
        assertThat(event.getParentSpanId()).isEqualTo(call.getSpanContext().getSpanId());
        assertThat(event.getTraceId()).isEqualTo(call.getSpanContext().getTraceId());
        assertThat(event.getAttributes().get(OUTCOME)).isEqualTo("ok");

        SpanData adds = byName.get("hook CreateContainer adds-env");
        SpanData looks = byName.get("hook CreateContainer looks");
        SpanData slow = byName.get("hook CreateContainer slow");
        for (SpanData h : List.of(adds, looks, slow)) {
            assertThat(h.getParentSpanId()).isEqualTo(event.getSpanId());
            assertThat(h.getAttributes().get(EVENT)).isEqualTo("CreateContainer");
        }
        assertThat(adds.getAttributes().get(OUTCOME)).isEqualTo("adjusted");
        assertThat(looks.getAttributes().get(OUTCOME)).isEqualTo("ok");
        assertThat(slow.getAttributes().get(OUTCOME)).isEqualTo("timeout");
        assertThat(slow.getAttributes().get(IGNORED)).isEqualTo("true");
        assertThat(slow.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(adds.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
        assertThat(adds.getStartEpochNanos()).isLessThanOrEqualTo(looks.getStartEpochNanos());
        assertThat(looks.getEndEpochNanos()).isLessThanOrEqualTo(slow.getStartEpochNanos());
        assertThat(seenOnWorker.get())
                .as("the blocking hook ran in its span on the chain's worker")
                .isEqualTo(adds.getSpanId());
    }

    @Test
    void aFailedEventEndsItsSpanInError() throws Exception {
        HookChain c =
                chain(
                        "strict",
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
        assertThat(failure(c.createContainer(POD, CTR))).isInstanceOf(HookConflictException.class);
        SpanData event =
                byName(spans.getFinishedSpanItems(), this::label).get("hooks CreateContainer");
        assertThat(event.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(event.getAttributes().get(OUTCOME)).isEqualTo("conflict");
        assertThat(event.getParentSpanId())
                .as("no caller's span: a root")
                .isEqualTo(io.opentelemetry.api.trace.SpanId.getInvalid());
    }

    @Test
    void withoutOpenTelemetryNothingIsRecordedAndTheApiNeedNotBeThere() throws Exception {
        List<URL> path = new ArrayList<>();
        for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (!p.contains("opentelemetry")) {
                path.add(Path.of(p).toUri().toURL());
            }
        }
        try (URLClassLoader noOtel =
                new URLClassLoader(
                        path.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            Class<?> probe =
                    noOtel.loadClass(HookChainMetricsTest.NoMicrometerProbe.class.getName());
            assertThat(probe.getMethod("run").invoke(null)).isEqualTo("adjusted 1 env");
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () -> noOtel.loadClass("io.opentelemetry.api.OpenTelemetry"))
                    .isInstanceOf(ClassNotFoundException.class);
        }
        assertThat(spans.getFinishedSpanItems()).isEmpty();
    }

    private String label(SpanData s) {
        String hook = s.getAttributes().get(NAME);
        return hook == null ? s.getName() : s.getName() + " " + hook;
    }

    static Map<String, SpanData> byName(List<SpanData> all, Function<SpanData, String> key) {
        return all.stream().collect(Collectors.toMap(key, s -> s, (a, b) -> a));
    }
}
