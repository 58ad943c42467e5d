package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.koordinator.HookConfigDirectory;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A hooked call through a proxy given an OpenTelemetry: the call's span continues the trace of the
 * client's {@code traceparent}; under it the hooks' event span with a span per hook (an in-process
 * one and a Koordinator hook server in grpc-js, which receives its hook's span as {@code
 * traceparent} in the gRPC metadata) and the call to the runtime; a call no one intercepts gets
 * no span.
 */
class ProxyTracingIT extends ProxyTestBase {
    static final AttributeKey<String> HOOK = AttributeKey.stringKey("cri4j.hook.name");
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("cri4j.hook.outcome");
    static final AttributeKey<String> RPC_METHOD = AttributeKey.stringKey("rpc.method");
    static final AttributeKey<String> STATUS = AttributeKey.stringKey("rpc.grpc.status_code");

    static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    static final String CLIENT_SPAN = "00f067aa0ba902b7";

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk otel =
            OpenTelemetrySdk.builder()
                    .setTracerProvider(
                            SdkTracerProvider.builder()
                                    .addSpanProcessor(SimpleSpanProcessor.create(spans))
                                    .build())
                    .build();
    private KoordinatorHookPeer peer;

    @AfterEach
    void closeTelemetry() {
        if (peer != null) {
            peer.close();
        }
        otel.close();
    }

    /** Labels every pod, in process. */
    static final class LabelHook implements Hook {
        @Override
        public String name() {
            return "in-process";
        }

        @Override
        public HookPolicy policy() {
            return HookPolicy.DEFAULT.withIndex(10);
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
            return PodSandboxAdjustment.builder().putLabel("traced", "yes").build();
        }
    }

    @Test
    void aHookedCallIsOneTraceFromKubeletsContextToTheHookServer() throws Exception {
        peer = KoordinatorHookPeer.start(dir.resolve("koordlet.sock"));
        Files.createDirectories(dir.resolve("hooks"));
        Files.writeString(
                dir.resolve("hooks/koordlet.json"),
                "{\"remote-endpoint\": \"unix://"
                        + peer.socket()
                        + "\", \"failure-policy\": \"Fail\", \"runtime-hooks\":"
                        + " [\"PreRunPodSandbox\"]}");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(
                        CriProxy.builder()
                                .openTelemetry(otel)
                                .addHook(new LabelHook())
                                .hookConfigDir(dir.resolve("hooks")));
        awaitKoordlet();
        spans.reset(); // the start's Synchronize is a trace of its own

        Metadata kubelet = new Metadata();
        kubelet.put(
                Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER),
                "00-" + TRACE_ID + "-" + CLIENT_SPAN + "-01");
        stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(kubelet))
                .runPodSandbox(CriProxyIT.pod("web"));
        assertThat(backend.received(RunPodSandboxRequest.class).get(0).getConfig().getLabelsMap())
                .containsEntry("traced", "yes");

        List<SpanData> all = spans.getFinishedSpanItems();
        assertThat(all).allSatisfy(s -> assertThat(s.getTraceId()).isEqualTo(TRACE_ID));
        SpanData call = only(all, "runtime.v1.RuntimeService/RunPodSandbox", SpanKind.SERVER);
        assertThat(call.getParentSpanId()).isEqualTo(CLIENT_SPAN);
        assertThat(call.getAttributes().get(RPC_METHOD)).isEqualTo("RunPodSandbox");
        assertThat(call.getAttributes().get(STATUS)).isEqualTo("0");

        SpanData runtime = only(all, "runtime.v1.RuntimeService/RunPodSandbox", SpanKind.CLIENT);
        assertThat(runtime.getParentSpanId()).isEqualTo(call.getSpanId());

        SpanData event = only(all, "hooks AdjustPodSandbox", SpanKind.INTERNAL);
        assertThat(event.getParentSpanId()).isEqualTo(call.getSpanId());
        assertThat(event.getEndEpochNanos()).isLessThanOrEqualTo(runtime.getStartEpochNanos());
        SpanData inProcess = hook(all, "in-process");
        SpanData koordlet = hook(all, "koordlet");
        assertThat(inProcess.getParentSpanId()).isEqualTo(event.getSpanId());
        assertThat(koordlet.getParentSpanId()).isEqualTo(event.getSpanId());
        assertThat(inProcess.getAttributes().get(OUTCOME)).isEqualTo("adjusted");

        // grpc-js saw the koordlet hook's span as its caller
        peer.awaitRequest("PreRunPodSandboxHook", 1);
        assertThat(peer.traceparents("PreRunPodSandboxHook"))
                .containsExactly("00-" + TRACE_ID + "-" + koordlet.getSpanId() + "-01");

        // relayed as frames (no interceptor wants Version): no span
        spans.reset();
        stub.version(VersionRequest.getDefaultInstance());
        assertThat(spans.getFinishedSpanItems()).isEmpty();
    }

    @Test
    void withoutKubeletsContextTheCallStartsATrace() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().openTelemetry(otel).addHook(new LabelHook()));
        spans.reset();
        stub.runPodSandbox(CriProxyIT.pod("web"));
        List<SpanData> all = spans.getFinishedSpanItems();
        SpanData call = only(all, "runtime.v1.RuntimeService/RunPodSandbox", SpanKind.SERVER);
        assertThat(call.getParentSpanContext().isValid()).isFalse();
        assertThat(all)
                .extracting(SpanData::getName)
                .containsExactlyInAnyOrder(
                        "runtime.v1.RuntimeService/RunPodSandbox",
                        "hooks AdjustPodSandbox",
                        "hook AdjustPodSandbox",
                        "runtime.v1.RuntimeService/RunPodSandbox");
        assertThat(all).allSatisfy(s -> assertThat(s.getTraceId()).isEqualTo(call.getTraceId()));
    }

    private void awaitKoordlet() throws InterruptedException {
        HookConfigDirectory d = proxy.hookConfigDirectory().orElseThrow();
        LinkedBlockingQueue<HookConfigDirectory.Snapshot> q = new LinkedBlockingQueue<>();
        d.addListener(q::add);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!d.snapshot().configs().containsKey("koordlet")) {
            assertThat(System.nanoTime()).as("koordlet.json in force").isLessThan(deadline);
            q.poll(100, TimeUnit.MILLISECONDS);
        }
    }

    private static SpanData only(List<SpanData> all, String name, SpanKind kind) {
        List<SpanData> found =
                all.stream().filter(s -> s.getName().equals(name) && s.getKind() == kind).toList();
        assertThat(found).as(name + " " + kind + " in " + all).hasSize(1);
        return found.get(0);
    }

    private static SpanData hook(List<SpanData> all, String name) {
        List<SpanData> found =
                all.stream().filter(s -> name.equals(s.getAttributes().get(HOOK))).toList();
        assertThat(found).as("span of hook " + name + " in " + all).hasSize(1);
        return found.get(0);
    }
}
