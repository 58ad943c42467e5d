package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An NRI request followed across the ttrpc socket: a host's hook chain calling an {@link NriHost}'s
 * plugin sends the hook's span as {@code traceparent} in the request's ttrpc metadata; the {@link
 * NriPlugin} given an OpenTelemetry records its request as a {@code SERVER} span under it, its hook
 * running in that span, and given a registry, each request's time and outcome by method and the size
 * of each {@code Synchronize}.
 */
class NriTracingIT {
    @TempDir Path dir;

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk otel =
            OpenTelemetrySdk.builder()
                    .setTracerProvider(
                            SdkTracerProvider.builder()
                                    .addSpanProcessor(SimpleSpanProcessor.create(spans))
                                    .build())
                    .build();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @AfterEach
    void close() {
        otel.close();
    }

    @Test
    void aRequestIsASpanUnderTheHostsHookSpanAndIsTimedByMethodAndOutcome() throws Exception {
        RecordingHost host = new RecordingHost();
        host.snapshot =
                new RuntimeSnapshot(
                        List.of(
                                PodSandbox.newBuilder().setId("pod-0").setName("p0").build(),
                                PodSandbox.newBuilder().setId("pod-1").setName("p1").build()),
                        List.of(
                                Container.newBuilder()
                                        .setId("ctr-0")
                                        .setPodSandboxId("pod-0")
                                        .build()));
        String[] seenInHook = new String[1];
        try (NriHost nri = NriHost.builder(dir.resolve("nri.sock")).build()) {
            nri.start(host);
            try (HookChain chain =
                            HookChain.builder()
                                    .name("host")
                                    .openTelemetry(otel)
                                    .provided(nri::hooks)
                                    .build();
                    NriPlugin plugin =
                            NriPlugin.builder(
                                            new Hook() {
                                                @Override
                                                public String name() {
                                                    return "traced";
                                                }

                                                @Override
                                                public io.cri4j.hook.HookPolicy policy() {
                                                    return io.cri4j.hook.HookPolicy.DEFAULT
                                                            .withFailurePolicy(
                                                                    io.cri4j.hook.FailurePolicy
                                                                            .FAIL);
                                                }

                                                @Override
                                                public HookResult createContainer(
                                                        PodSandbox pod, Container c) {
                                                    seenInHook[0] =
                                                            Span.current()
                                                                    .getSpanContext()
                                                                    .getSpanId();
                                                    if (c.getName().equals("bad")) {
                                                        throw new IllegalStateException("no");
                                                    }
                                                    return HookResult.none();
                                                }
                                            })
                                    .socket(nri.socket())
                                    .index(10)
                                    .noReconnect()
                                    .openTelemetry(otel)
                                    .meterRegistry(meters)
                                    .build()
                                    .start()) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (nri.hooks().isEmpty()) {
                    assertThat(System.nanoTime()).as("registered").isLessThan(deadline);
                    Thread.onSpinWait();
                }
                spans.reset();
                Span call = otel.getTracer("test").spanBuilder("CRI call").startSpan();
                try (Scope s = call.makeCurrent()) {
                    chain.createContainer(
                                    PodSandbox.newBuilder().setId("pod-0").build(),
                                    Container.newBuilder().setId("c1").setName("ok").build())
                            .toCompletableFuture()
                            .get(10, TimeUnit.SECONDS);
                } finally {
                    call.end();
                }
                List<SpanData> all = spans.getFinishedSpanItems();
                SpanData hook =
                        all.stream()
                                .filter(x -> x.getName().equals("hook CreateContainer"))
                                .findFirst()
                                .orElseThrow();
                SpanData request =
                        all.stream()
                                .filter(x -> x.getKind() == SpanKind.SERVER)
                                .findFirst()
                                .orElseThrow(() -> new AssertionError("no SERVER span in " + all));
                assertThat(request.getName())
                        .isEqualTo("nri.pkg.api.v1alpha1.Plugin/CreateContainer");
                assertThat(request.getTraceId()).isEqualTo(call.getSpanContext().getTraceId());
                assertThat(request.getParentSpanId())
                        .as("across the socket, under the host's span of the hook")
                        .isEqualTo(hook.getSpanId());
                assertThat(request.getParentSpanContext().isRemote()).isTrue();
                assertThat(request.getAttributes().get(AttributeKey.stringKey("cri4j.nri.outcome")))
                        .isEqualTo("ok");
                assertThat(seenInHook[0]).isEqualTo(request.getSpanId());

                // a failing hook: the request's outcome is the status the runtime got
                chain.createContainer(
                                PodSandbox.newBuilder().setId("pod-0").build(),
                                Container.newBuilder().setId("c2").setName("bad").build())
                        .toCompletableFuture()
                        .handle((v, t) -> t)
                        .get(10, TimeUnit.SECONDS);
            }
        }
        Timer ok =
                meters.find("cri4j.nri.plugin.request.duration")
                        .tags("plugin", "10-traced", "method", "CreateContainer", "outcome", "ok")
                        .timer();
        assertThat(ok.count()).isEqualTo(1);
        Timer failed =
                meters.find("cri4j.nri.plugin.request.duration")
                        .tags("method", "CreateContainer", "outcome", "unknown")
                        .timer();
        assertThat(failed.count()).isEqualTo(1);
        assertThat(
                        meters.find("cri4j.nri.plugin.request.duration")
                                .tags("method", "Synchronize", "outcome", "ok")
                                .timer()
                                .count())
                .isEqualTo(1);
        DistributionSummary pods =
                meters.find("cri4j.nri.plugin.synchronize.size").tags("kind", "pod").summary();
        DistributionSummary containers =
                meters.find("cri4j.nri.plugin.synchronize.size")
                        .tags("kind", "container")
                        .summary();
        assertThat(pods.totalAmount()).isEqualTo(2);
        assertThat(containers.totalAmount()).isEqualTo(1);
    }
}
