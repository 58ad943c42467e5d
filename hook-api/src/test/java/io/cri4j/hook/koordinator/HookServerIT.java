package io.cri4j.hook.koordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.internal.Koordinator;
import io.cri4j.hook.koordinator.v1alpha1.ContainerMetadata;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxMetadata;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cri4j hook served by {@link HookServer}, called the way Koordinator's Go proxy calls a hook
 * server: the generated {@code runtime.v1alpha1.RuntimeHookService} stub over a unix socket.
 */
class HookServerIT {
    @TempDir Path dir;

    static final class CpusetHook implements Hook {
        @Override
        public String name() {
            return "cpuset";
        }

        @Override
        public HookPolicy policy() {
            return HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL);
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container c) {
            return HookResult.adjust(
                    Adjustments.create()
                            .setLinuxCpuSetCpus("2-3")
                            .addAnnotation("for", c.getName())
                            .addEnv(
                                    "SEEN",
                                    Koordinator.envs(c.getEnvList()).getOrDefault("HOME", "none"))
                            .build());
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
            throw new IllegalStateException("no pods today for " + pod.getName());
        }
    }

    @Test
    void servesKoordinatorsServiceAndReportsHookErrors() throws Exception {
        Path socket = dir.resolve("hook.sock");
        try (HookServer server = HookServer.start(socket, List.of(new CpusetHook()))) {
            ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(socket));
            try {
                var stub = RuntimeHookServiceGrpc.newBlockingStub(ch);
                ContainerResourceHookResponse r =
                        stub.preCreateContainerHook(
                                ContainerResourceHookRequest.newBuilder()
                                        .setContainerMeta(
                                                ContainerMetadata.newBuilder().setName("app"))
                                        .putContainerEnvs("HOME", "/root")
                                        .build());
                assertThat(r.getContainerResources().getCpusetCpus()).isEqualTo("2-3");
                assertThat(r.getContainerAnnotationsMap()).containsEntry("for", "app");
                // the hook's environment goes out as Koordinator's container_envs
                assertThat(r.getContainerEnvsMap())
                        .containsExactly(java.util.Map.entry("SEEN", "/root"));
                // a point the hook did not ask for: empty answer
                assertThat(
                                stub.preStartContainerHook(
                                        ContainerResourceHookRequest.getDefaultInstance()))
                        .isEqualTo(ContainerResourceHookResponse.getDefaultInstance());
                assertThatThrownBy(
                                () ->
                                        stub.preRunPodSandboxHook(
                                                PodSandboxHookRequest.newBuilder()
                                                        .setPodMeta(
                                                                PodSandboxMetadata.newBuilder()
                                                                        .setName("web"))
                                                        .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> {
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.INTERNAL);
                                    assertThat(e.getStatus().getDescription())
                                            .contains("hook \"cpuset\" failed")
                                            .contains("no pods today for web");
                                });
            } finally {
                ch.shutdownNow();
            }
            server.close(); // idempotent with the try-with-resources close
        }
    }
}
