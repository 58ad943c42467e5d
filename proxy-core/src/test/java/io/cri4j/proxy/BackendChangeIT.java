package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.CDIDevice;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy reads what its backend honours again when the backend comes back: a containerd 1.6
 * (which drops CDI devices) replaced on the same socket by a containerd 2.3 (which honours them).
 * A hook asking for a CDI device under {@code Fail} is refused in front of the first, and its
 * device reaches the second.
 */
class BackendChangeIT {

    private static final String IMAGE = "example.test/busybox:1";

    @TempDir Path dir;

    /** Adds one CDI device to every container; the call fails where it cannot be honoured. */
    static final class CdiHook implements Hook {
        @Override
        public String name() {
            return "gpu";
        }

        @Override
        public HookPolicy policy() {
            return new HookPolicy(10, Duration.ofSeconds(2), FailurePolicy.FAIL);
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container container) {
            return HookResult.adjust(Adjustments.create().addCdiDevice("vendor.com/gpu=0").build());
        }
    }

    @Test
    void whatTheBackendHonoursIsReadAgainWhenItComesBack() throws Exception {
        CriEndpoint backendSocket = CriEndpoint.unix(dir.resolve("runtime.sock"));
        FakeCriServer old = fake(backendSocket, "1.6.20");
        try (CriProxy proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(backendSocket)
                        .addHook(new CdiHook())
                        .build()
                        .start()) {
            ManagedChannel ch = CriChannels.newChannel(proxy.listenEndpoint());
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                assertThatThrownBy(() -> create(rt))
                        .isInstanceOf(StatusRuntimeException.class)
                        .hasMessageContaining("CDI");

                old.close();
                try (FakeCriServer upgraded = fake(backendSocket, "2.3.4")) {
                    String id = null;
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    StatusRuntimeException last = null;
                    while (id == null && System.nanoTime() < end) {
                        try {
                            id = create(rt);
                        } catch (StatusRuntimeException e) {
                            last = e; // the old runtime's answer until the proxy has read the new
                            Thread.sleep(50);
                        }
                    }
                    assertThat(id).as("last refusal: %s", last).isNotNull();
                    // the runtime knows the container by its own id, which the proxy keeps beside
                    // the one it gave the client
                    String proxyId = id;
                    String runtimeId =
                            upgraded.runtime().containerIds().stream()
                                    .filter(
                                            c ->
                                                    proxyId.equals(
                                                            upgraded.runtime()
                                                                    .containerConfig(c)
                                                                    .getAnnotationsMap()
                                                                    .get(
                                                                            "io.cri4j.proxy/container-id")))
                                    .findFirst()
                                    .orElseThrow();
                    assertThat(upgraded.runtime().containerConfig(runtimeId).getCDIDevicesList())
                            .extracting(CDIDevice::getName)
                            .containsExactly("vendor.com/gpu=0");
                }
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        } finally {
            old.close();
        }
    }

    private static FakeCriServer fake(CriEndpoint socket, String version) throws Exception {
        FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(socket)
                        .runtime("containerd", version)
                        .pullRate(0)
                        .build()
                        .start();
        fake.runtime().addImage(IMAGE);
        return fake;
    }

    /** A pod and a container in it through the proxy; the container's id. */
    private static String create(RuntimeServiceGrpc.RuntimeServiceBlockingStub rt) {
        PodSandboxConfig pod =
                PodSandboxConfig.newBuilder()
                        .setMetadata(
                                PodSandboxMetadata.newBuilder()
                                        .setName("p")
                                        .setNamespace("ns")
                                        .setUid(UUID.randomUUID().toString()))
                        .build();
        String podId =
                rt.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        return rt.withDeadlineAfter(10, TimeUnit.SECONDS)
                .createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(podId)
                                .setSandboxConfig(pod)
                                .setConfig(
                                        ContainerConfig.newBuilder()
                                                .setMetadata(
                                                        ContainerMetadata.newBuilder().setName("c"))
                                                .setImage(ImageSpec.newBuilder().setImage(IMAGE)))
                                .build())
                .getContainerId();
    }
}
