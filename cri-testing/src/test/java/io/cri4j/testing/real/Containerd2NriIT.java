package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.testing.conformance.ContainerInfo;
import io.cri4j.testing.real.internal.NriSocketLink;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness's containerd 2.1.4 with NRI: CRI v1 from the 2.1.4 binary, a private NRI socket,
 * NRI's own Go plugin registered through the machine-wide socket link, a restart that keeps the pods.
 */
class Containerd2NriIT {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd2WithNri().build();

    @TempDir Path logs;

    @Test
    void runsContainerd214WithNrisGoLoggerAndSurvivesARestart() throws Exception {
        LocalContainerd containerd = CONTAINERD.containerd();
        assertThat(containerd.hasNri()).isTrue();
        assertThat(containerd.nriSocket())
                .isEqualTo(containerd.directory().resolve("nri.sock"))
                .exists();
        ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
        try {
            CriCalls cri = new CriCalls(channel);
            assertThat(
                            cri.runtime
                                    .version(VersionRequest.newBuilder().setVersion("v1").build())
                                    .getRuntimeVersion())
                    .startsWith("2.1.4");
            String image = containerd.registry().push(TestImage.busybox()).reference();
            cri.pull(image);
            PodSandboxConfig pod = CriCalls.podConfig("nri", true, logs);
            String podId = cri.runPod(pod);
            String id;
            try (NriGoPlugin logger =
                    NriGoPlugin.logger(containerd, 20, "-add-env", "CRI4J_FROM_GO")) {
                assertThat(logger.fullName()).isEqualTo("20-nri-logger");
                assertThat(Files.readSymbolicLink(Path.of(NriSocketLink.LINK)))
                        .isEqualTo(containerd.nriSocket());
                id =
                        cri.runtime
                                .withDeadlineAfter(60, TimeUnit.SECONDS)
                                .createContainer(
                                        CreateContainerRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .setSandboxConfig(pod)
                                                .setConfig(
                                                        ContainerConfig.newBuilder()
                                                                .setMetadata(
                                                                        ContainerMetadata
                                                                                .newBuilder()
                                                                                .setName("app"))
                                                                .setImage(
                                                                        ImageSpec.newBuilder()
                                                                                .setImage(image))
                                                                .addCommand("sleep")
                                                                .addArgs("60")
                                                                .setLogPath("app.log"))
                                                .build())
                                .getContainerId();
                String info =
                        cri.runtime
                                .containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(id)
                                                .setVerbose(true)
                                                .build())
                                .getInfoOrThrow("info");
                assertThat(info).containsPattern("CRI4J_FROM_GO=logger-pid-\\d+");
                // the typed view of the same info: the plugin's env is in the OCI spec
                assertThat(ContainerInfo.parse(info).runtimeSpec().env().get("CRI4J_FROM_GO"))
                        .matches("logger-pid-\\d+");
                assertThat(ContainerInfo.parse(info).runtimeSpec().args())
                        .containsExactly("sleep", "60");
                assertThat(ContainerInfo.parse(info).sandboxId()).isEqualTo(podId);
            }
            assertThat(Path.of(NriSocketLink.LINK))
                    .as("link removed with the last Go plugin")
                    .matches(p -> !Files.exists(p, LinkOption.NOFOLLOW_LINKS));

            containerd.restart();
            assertThat(
                            cri.runtime
                                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                                    .listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                                    .getItemsList())
                    .extracting(p -> p.getId())
                    .contains(podId);
            assertThat(containerd.nriSocket()).exists();
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
