package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cri4j proxy --plugins DIR} as a real process in front of containerd 1.6, which has no
 * NRI: the proxy is the NRI host, and the example plugin's hook ({@code OwnerTeamHook}, the same
 * class {@code cri4j nri-plugin} serves to containerd 2.x) changes the container containerd runs,
 * as seen inside it.
 */
class ProxyPluginsContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;

    @Test
    void theExamplePluginsHookIsSeenInsideAContainerOfContainerd16() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = NriPluginCommandIT.examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        Path socket = dir.resolve("proxy.sock");
        try (CliProcess proxy =
                CliProcess.start(
                        "proxy",
                        "--listen",
                        "unix://" + socket,
                        "--backend",
                        CONTAINERD.endpoint().toString(),
                        "--plugins",
                        plugins.toString(),
                        "--no-observe-pulls")) {
            String line = proxy.nextLine();
            while (!line.contains("serving")) {
                line = proxy.nextLine();
                assertThat(line).as("proxy output before it served").isNotNull();
            }
            ManagedChannel channel = CriChannels.newChannel(CriEndpoint.unix(socket));
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                        RuntimeServiceGrpc.newBlockingStub(channel);
                String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
                ImageServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(image))
                                        .build());
                PodSandboxConfig pod =
                        TestPods.hostNetwork("db", "ns", dir).putLabels("team", "storage").build();
                String podId =
                        rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                                .runPodSandbox(
                                        RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                                .getPodSandboxId();
                try {
                    String id =
                            rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                                    .createContainer(
                                            CreateContainerRequest.newBuilder()
                                                    .setPodSandboxId(podId)
                                                    .setSandboxConfig(pod)
                                                    .setConfig(TestPods.sleeper("app", image))
                                                    .build())
                                    .getContainerId();
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .startContainer(
                                    StartContainerRequest.newBuilder().setContainerId(id).build());
                    var env =
                            rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                                    .execSync(
                                            ExecSyncRequest.newBuilder()
                                                    .setContainerId(id)
                                                    .addCmd("env")
                                                    .setTimeout(10)
                                                    .build());
                    assertThat(env.getExitCode()).isZero();
                    assertThat(env.getStdout().toStringUtf8().lines())
                            .contains("CRI4J_TEAM=storage");
                    assertThat(
                                    rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                                            .containerStatus(
                                                    ContainerStatusRequest.newBuilder()
                                                            .setContainerId(id)
                                                            .build())
                                            .getStatus()
                                            .getAnnotationsMap())
                            .containsEntry("cri4j.io/owner-team", "storage");
                } finally {
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build());
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build());
                }
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
        assertThat(socket).doesNotExist();
    }
}
