package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxFilter;
import io.cri4j.cri.v1.PodSandboxState;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.testing.real.internal.Await;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The foundation's acceptance test against a real containerd: Version on both API versions,
 * image pull, and a pod sandbox with a container from the local registry, all through our
 * generated stubs.
 */
class ContainerdCriIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    private static ManagedChannel channel;
    private static RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    private static ImageServiceGrpc.ImageServiceBlockingStub images;

    @TempDir Path logs;

    @BeforeAll
    static void connect() {
        channel = CriChannels.newChannel(CONTAINERD.endpoint());
        runtime = RuntimeServiceGrpc.newBlockingStub(channel);
        images = ImageServiceGrpc.newBlockingStub(channel);
    }

    @AfterAll
    static void disconnect() {
        if (channel != null) {
            channel.shutdownNow();
        }
    }

    @Test
    void versionAnswersOnV1() {
        VersionResponse v =
                runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                        .version(VersionRequest.newBuilder().setVersion("v1").build());
        assertThat(v.getRuntimeName()).isEqualTo("containerd");
        assertThat(v.getRuntimeVersion()).isNotBlank();
        assertThat(v.getRuntimeApiVersion()).isEqualTo("v1");
    }

    @Test
    void versionAnswersOnV1alpha2() {
        io.cri4j.cri.v1alpha2.VersionResponse v =
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .version(
                                io.cri4j.cri.v1alpha2.VersionRequest.newBuilder()
                                        .setVersion("v1alpha2")
                                        .build());
        assertThat(v.getRuntimeName()).isEqualTo("containerd");
        assertThat(v.getRuntimeApiVersion()).isEqualTo("v1alpha2");
    }

    @Test
    void hostNetworkPodRunsAContainerFromTheLocalRegistry() throws Exception {
        String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        String imageRef =
                images.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(image))
                                        .build())
                        .getImageRef();
        assertThat(imageRef).startsWith("sha256:");

        PodSandboxConfig podConfig = TestPods.hostNetwork("it-host-net", "cri4j", logs).build();
        String podId =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .runPodSandbox(
                                RunPodSandboxRequest.newBuilder().setConfig(podConfig).build())
                        .getPodSandboxId();
        assertThat(
                        runtime.podSandboxStatus(
                                        PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .build())
                                .getStatus()
                                .getState())
                .isEqualTo(PodSandboxState.SANDBOX_READY);

        ContainerConfig containerConfig =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("sleeper"))
                        .setImage(ImageSpec.newBuilder().setImage(image))
                        .addCommand("sh")
                        .addArgs("-c")
                        .addArgs("trap 'echo bye; exit 0' TERM; echo started; sleep 3600 & wait")
                        .setLogPath("sleeper.log")
                        .build();
        String containerId =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setConfig(containerConfig)
                                        .setSandboxConfig(podConfig)
                                        .build())
                        .getContainerId();
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .startContainer(
                        StartContainerRequest.newBuilder().setContainerId(containerId).build());

        var listed =
                runtime.listContainers(
                                ListContainersRequest.newBuilder()
                                        .setFilter(
                                                ContainerFilter.newBuilder().setPodSandboxId(podId))
                                        .build())
                        .getContainersList();
        assertThat(listed).hasSize(1);
        assertThat(listed.get(0).getId()).isEqualTo(containerId);
        assertThat(listed.get(0).getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        assertThat(listed.get(0).getImageRef()).isEqualTo(imageRef);

        Path log = logs.resolve("sleeper.log");
        Await.until(
                "the container logging 'started'",
                Duration.ofSeconds(10),
                () -> Files.exists(log) && Files.readString(log).contains(" stdout F started"));

        long t0 = System.nanoTime();
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(containerId)
                                .setTimeout(30)
                                .build());
        long stopMillis = (System.nanoTime() - t0) / 1_000_000;
        ContainerStatusResponse status =
                runtime.containerStatus(
                        ContainerStatusRequest.newBuilder().setContainerId(containerId).build());
        assertThat(status.getStatus().getState()).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(status.getStatus().getExitCode()).as("exit code after SIGTERM").isZero();
        assertThat(stopMillis).as("SIGTERM handled, no 30 s kill timeout").isLessThan(10_000);
        assertThat(Files.readString(log)).contains(" stdout F bye");
        assertThat(
                        runtime.listContainers(
                                        ListContainersRequest.newBuilder()
                                                .setFilter(
                                                        ContainerFilter.newBuilder()
                                                                .setPodSandboxId(podId))
                                                .build())
                                .getContainers(0)
                                .getState())
                .isEqualTo(ContainerState.CONTAINER_EXITED);

        runtime.removeContainer(
                RemoveContainerRequest.newBuilder().setContainerId(containerId).build());
        assertThat(
                        runtime.listContainers(
                                        ListContainersRequest.newBuilder()
                                                .setFilter(
                                                        ContainerFilter.newBuilder()
                                                                .setPodSandboxId(podId))
                                                .build())
                                .getContainersList())
                .isEmpty();
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .removePodSandbox(
                        RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        assertThat(
                        runtime.listPodSandbox(
                                        ListPodSandboxRequest.newBuilder()
                                                .setFilter(
                                                        PodSandboxFilter.newBuilder().setId(podId))
                                                .build())
                                .getItemsList())
                .isEmpty();
        assertThat(
                        images.imageStatus(
                                        ImageStatusRequest.newBuilder()
                                                .setImage(ImageSpec.newBuilder().setImage(image))
                                                .build())
                                .getImage()
                                .getId())
                .isEqualTo(imageRef);
    }
}
