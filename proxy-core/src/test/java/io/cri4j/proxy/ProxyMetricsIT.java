package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/**
 * What a proxy given a registry records, over real unix sockets: relayed calls by service, method and
 * gRPC code with their latency, intercepted (hooked) calls as such, its hooks' latency and outcome,
 * and no call left in flight.
 */
class ProxyMetricsIT extends ProxyTestBase {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    private double calls(String method, String code, String kind) {
        Counter c =
                registry.find("cri4j.proxy.calls")
                        .tags(
                                "service",
                                "runtime.v1.RuntimeService",
                                "method",
                                method,
                                "code",
                                code,
                                "kind",
                                kind)
                        .counter();
        return c == null ? 0 : c.count();
    }

    private double inflight() {
        Gauge g = registry.find("cri4j.proxy.calls.inflight").gauge();
        return g.value();
    }

    @Test
    void relayedCallsAreCountedByMethodAndStatusWithTheirLatency() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().meterRegistry(registry));
        for (int i = 0; i < 5; i++) {
            stub.version(VersionRequest.getDefaultInstance());
        }
        assertThatThrownBy(
                        () ->
                                stub.startContainer(
                                        StartContainerRequest.newBuilder()
                                                .setContainerId("nope")
                                                .build()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("NOT_FOUND");
        assertThat(calls("Version", "OK", "relayed")).isEqualTo(5);
        assertThat(calls("StartContainer", "NOT_FOUND", "relayed")).isEqualTo(1);
        Timer t =
                registry.find("cri4j.proxy.call.duration")
                        .tags("method", "Version", "kind", "relayed")
                        .timer();
        assertThat(t.count()).isEqualTo(5);
        assertThat(t.totalTime(java.util.concurrent.TimeUnit.NANOSECONDS)).isPositive();
        assertThat(inflight()).isZero();
    }

    @Test
    void theRelaysConnectionsToTheRuntimeAreCountedAsTheyComeAndGo() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().meterRegistry(registry));
        stub.version(VersionRequest.getDefaultInstance());
        assertThat(registry.find("cri4j.proxy.backend.connections").gauge().value()).isEqualTo(1);

        backend.close(); // the runtime goes away (GOAWAY) under an open relay connection
        awaitValue(() -> registry.find("cri4j.proxy.backend.connections").gauge().value(), 0);
        assertThat(registry.find("cri4j.proxy.backend.connections.lost").counter().count())
                .isEqualTo(1);
        assertThatThrownBy(() -> stub.version(VersionRequest.getDefaultInstance()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("UNAVAILABLE");
        assertThat(registry.find("cri4j.proxy.backend.connect.failures").counter().count())
                .isGreaterThanOrEqualTo(1);

        backend = new TestBackend(dir.resolve("backend.sock"), false).start();
        stub.version(VersionRequest.getDefaultInstance());
        assertThat(registry.find("cri4j.proxy.backend.connections").gauge().value()).isEqualTo(1);

        client.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
        awaitValue(() -> registry.find("cri4j.proxy.backend.connections").gauge().value(), 0);
        assertThat(registry.find("cri4j.proxy.backend.connections.lost").counter().count())
                .as("closed by the proxy when its client left: not a loss")
                .isEqualTo(1);
    }

    private static void awaitValue(java.util.function.DoubleSupplier v, double want)
            throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (v.getAsDouble() != want && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(v.getAsDouble()).isEqualTo(want);
    }

    @Test
    void hookedCallsAndTheirHooksAreRecorded() throws Exception {
        Hook env =
                new Hook() {
                    @Override
                    public String name() {
                        return "metrics-env";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container c) {
                        return HookResult.adjust(Adjustments.create().addEnv("M", "1").build());
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().meterRegistry(registry).addHook(env));
        RunPodSandboxRequest pod = CriProxyIT.pod("metrics");
        String podId = stub.runPodSandbox(pod).getPodSandboxId();
        stub.createContainer(CriProxyIT.container(podId, pod));
        assertThat(calls("CreateContainer", "OK", "intercepted")).isEqualTo(1);
        assertThat(
                        registry.find("cri4j.hook.duration")
                                .tags(
                                        "chain",
                                        "cri4j-proxy",
                                        "hook",
                                        "metrics-env",
                                        "event",
                                        "CreateContainer",
                                        "outcome",
                                        "adjusted")
                                .timer()
                                .count())
                .isEqualTo(1);
        assertThat(inflight()).isZero();
    }
}
