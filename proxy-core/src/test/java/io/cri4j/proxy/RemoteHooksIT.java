package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.Hook;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.koordinator.HookConfigDirectory;
import io.cri4j.hook.koordinator.HookServer;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Remote hooks: a cri4j hook served by {@link HookServer} over Koordinator's protocol on a unix
 * socket, configured through the watched hook config directory of a running proxy (so called by
 * the proxy through {@link io.cri4j.hook.koordinator.RemoteRuntimeHook}, the Koordinator adapter both ways);
 * and in-process hooks found with ServiceLoader.
 */
class RemoteHooksIT extends ProxyTestBase {
    private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
            new LinkedBlockingQueue<>();

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub proxy(CriProxy.Builder b)
            throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(b);
        proxy.hookConfigDirectory().ifPresent(d -> d.addListener(snapshots::add));
        return stub;
    }

    private void awaitConfig(Predicate<HookConfigDirectory.Snapshot> p)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            HookConfigDirectory.Snapshot s = snapshots.poll(100, TimeUnit.MILLISECONDS);
            if (s != null && p.test(s)) {
                return;
            }
        }
        throw new AssertionError("hook config not applied within 10 s");
    }

    /** A hook that labels pods, or hangs when told to. */
    static final class LabelHook implements Hook {
        volatile CountDownLatch hang;

        @Override
        public String name() {
            return "label";
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) throws InterruptedException {
            CountDownLatch h = hang;
            if (h != null) {
                h.await();
            }
            return PodSandboxAdjustment.builder()
                    .putLabel("remote", pod.getNamespace() + "/" + pod.getName())
                    .putAnnotation("hooked-by", "java-hook-server")
                    .build();
        }
    }

    private void writeConfig(String name, Path socket, String policy, String timeout)
            throws Exception {
        Path tmp = dir.resolve("hooks").resolve("." + name + ".tmp");
        Files.createDirectories(tmp.getParent());
        Files.writeString(
                tmp,
                "{\"remote-endpoint\": \"unix://"
                        + socket
                        + "\", \"failure-policy\": \""
                        + policy
                        + "\", \"runtime-hooks\": [\"PreRunPodSandbox\"], \"timeout\": \""
                        + timeout
                        + "\"}");
        Files.move(
                tmp,
                dir.resolve("hooks").resolve(name + ".json"),
                java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    @Test
    void remoteHookServerOverKoordinatorsProtocolWithFailAndIgnore() throws Exception {
        Path hookSocket = dir.resolve("hook.sock");
        LabelHook hook = new LabelHook();
        HookServer server = HookServer.start(hookSocket, List.of(hook));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub;
        try {
            stub = proxy(CriProxy.builder().hookConfigDir(dir.resolve("hooks")));
            writeConfig("koordlet", hookSocket, "Fail", "2s");
            awaitConfig(s -> s.configs().containsKey("koordlet"));

            stub.runPodSandbox(CriProxyIT.pod("web"));
            RunPodSandboxRequest sent = backend.received(RunPodSandboxRequest.class).get(0);
            assertThat(sent.getConfig().getLabelsMap()).containsEntry("remote", "default/web");
            assertThat(sent.getConfig().getAnnotationsMap())
                    .containsEntry("hooked-by", "java-hook-server");

            // hung past its timeout, policy Fail: the call fails naming the hook
            hook.hang = new CountDownLatch(1);
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> stub.runPodSandbox(CriProxyIT.pod("slow")))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> {
                                // the gRPC deadline and the chain's bound are both 2 s: either
                                // may report
                                assertThat(e.getStatus().getCode())
                                        .isIn(Status.Code.UNKNOWN, Status.Code.DEADLINE_EXCEEDED);
                                assertThat(e.getStatus().getDescription())
                                        .contains("AdjustPodSandbox: hook " + "\"koordlet\"")
                                        .containsAnyOf(
                                                "DEADLINE_EXCEEDED",
                                                "did not answer within 2000 ms");
                            });
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
            hook.hang.countDown();
            hook.hang = null;
        } finally {
            server.close();
        }
        // hook server killed, policy Fail: the call fails naming the hook, backend not called
        int before = backend.received(RunPodSandboxRequest.class).size();
        assertThatThrownBy(() -> stub.runPodSandbox(CriProxyIT.pod("dead")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getDescription())
                                        .contains("hook \"koordlet\" failed")
                                        .contains("UNAVAILABLE"));
        assertThat(backend.received(RunPodSandboxRequest.class)).hasSize(before);

        // same dead server with policy Ignore: forwarded unmodified
        writeConfig("koordlet", hookSocket, "Ignore", "300ms");
        awaitConfig(
                s ->
                        s.configs().containsKey("koordlet")
                                && s.configs().get("koordlet").failurePolicy()
                                        == io.cri4j.hook.FailurePolicy.IGNORE);
        stub.runPodSandbox(CriProxyIT.pod("lax"));
        List<RunPodSandboxRequest> all = backend.received(RunPodSandboxRequest.class);
        assertThat(all).hasSize(before + 1);
        assertThat(all.get(before).getConfig().getLabelsMap()).doesNotContainKey("remote");

        // config deleted: no hook at all
        Files.delete(dir.resolve("hooks").resolve("koordlet.json"));
        awaitConfig(s -> s.configs().isEmpty());
        stub.runPodSandbox(CriProxyIT.pod("free"));
        assertThat(backend.received(RunPodSandboxRequest.class)).hasSize(before + 2);
    }

    @Test
    void inProcessHooksAreFoundWithServiceLoader() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                proxy(CriProxy.builder().loadHooks(getClass().getClassLoader()));
        RunPodSandboxRequest p = CriProxyIT.pod("svc");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        stub.createContainer(CriProxyIT.container(podId, p));
        CreateContainerRequest sent = backend.received(CreateContainerRequest.class).get(0);
        assertThat(sent.getConfig().getAnnotationsMap())
                .containsEntry("loaded-by", "ServiceLoader");
        // every Hook the class path provides: the test's own and the example plugin's
        assertThat(sent.getConfig().getEnvsList())
                .extracting(KeyValue::getKey)
                .containsExactlyInAnyOrder("A", "B", "C", "CRI4J_HOOKED", "CRI4J_TEAM");
        assertThat(sent.getConfig().getEnvsList())
                .filteredOn(e -> e.getKey().equals("CRI4J_HOOKED"))
                .singleElement()
                .satisfies(e -> assertThat(e.getValue().toStringUtf8()).isEqualTo("pod=svc"));
    }
}
