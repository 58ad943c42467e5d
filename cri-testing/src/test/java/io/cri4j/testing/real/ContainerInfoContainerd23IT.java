package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.testing.conformance.ContainerInfo;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where an NRI adjustment shows on containerd 2.3.4, the reference for the fake runtime (whose
 * FakeHooksIT asserts the same): in the OCI spec of the verbose ContainerStatus's {@code info}, as
 * {@link ContainerInfo} reads it, not in ContainerStatus's own annotations.
 */
class ContainerInfoContainerd23IT {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd23WithNri().build();

    @TempDir Path logs;

    @Test
    void anNriAdjustmentIsInTheRuntimeSpecNotInContainerStatus() throws Exception {
        LocalContainerd containerd = CONTAINERD.containerd();
        ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
        try (NriGoPlugin logger =
                NriGoPlugin.logger(
                        containerd,
                        20,
                        "-add-env",
                        "CRI4J_FROM_GO",
                        "-add-annotation",
                        "cri4j.test/logged")) {
            CriCalls cri = new CriCalls(channel);
            String image = containerd.registry().push(TestImage.busybox()).reference();
            cri.pull(image);
            PodSandboxConfig pod = CriCalls.podConfig("info", true, logs);
            String podId = cri.runPod(pod);
            String id =
                    cri.runtime
                            .withDeadlineAfter(60, TimeUnit.SECONDS)
                            .createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setSandboxConfig(pod)
                                            .setConfig(
                                                    TestPods.sleeper("app", image)
                                                            .putAnnotations("asked", "yes"))
                                            .build())
                            .getContainerId();
            ContainerStatus status =
                    cri.runtime
                            .containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(id).build())
                            .getStatus();
            assertThat(status.getAnnotationsMap())
                    .containsEntry("asked", "yes")
                    .doesNotContainKey("cri4j.test/logged");
            ContainerInfo info = ContainerInfo.read(cri.runtime, id);
            assertThat(info.sandboxId()).isEqualTo(podId);
            // the spec carries the plugin's annotation and containerd's own, not the config's
            assertThat(info.runtimeSpec().annotations())
                    .containsEntry("cri4j.test/logged", "logger-pid-" + logger.pid())
                    .containsEntry("io.kubernetes.cri.container-name", "app")
                    .containsEntry("io.kubernetes.cri.sandbox-id", podId)
                    .doesNotContainKey("asked");
            assertThat(info.runtimeSpec().env().get("CRI4J_FROM_GO"))
                    .isEqualTo("logger-pid-" + logger.pid());
            assertThat(info.runtimeSpec().args()).containsExactly("sleep", "3600");
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
