package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.testing.fake.FakeCriExtension;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cri4j proxy --plugins DIR} as a real process loads the example plugin jar (module
 * example-hook-plugin) with ServiceLoader, and its hook ({@code OwnerTeamHook}, the class that also
 * runs as an NRI plugin) changes what the runtime receives.
 */
class ProxyPluginsIT {

    @RegisterExtension static FakeCriExtension runtime = FakeCriExtension.unixSocket();

    @TempDir Path dir;

    @Test
    void loadsTheExampleHookPluginJar() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar;
        try (Stream<Path> built = Files.list(Path.of("..", "example-hook-plugin", "target"))) {
            jar =
                    built.filter(
                                    p ->
                                            p.getFileName()
                                                    .toString()
                                                    .matches("cri4j-example-hook-plugin-.*\\.jar"))
                            .findFirst()
                            .orElseThrow(
                                    () -> new AssertionError("example-hook-plugin jar not built"));
        }
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        Path socket = dir.resolve("proxy.sock");
        try (CliProcess proxy =
                CliProcess.start(
                        "proxy",
                        "--listen",
                        "unix://" + socket,
                        "--backend",
                        runtime.endpoint().toString(),
                        "--plugins",
                        plugins.toString())) {
            String started = proxy.nextLine();
            while (!Files.exists(socket)) {
                started = proxy.nextLine();
                assertThat(started).as("proxy output before its socket appeared").isNotNull();
            }
            ManagedChannel channel = CriChannels.newChannel(CriEndpoint.unix(socket));
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                        RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(10, TimeUnit.SECONDS);
                PodSandboxConfig pod =
                        PodSandboxConfig.newBuilder()
                                .setMetadata(
                                        PodSandboxMetadata.newBuilder()
                                                .setName("db")
                                                .setNamespace("ns")
                                                .setUid("u1"))
                                .putLabels("team", "storage")
                                .build();
                io.cri4j.cri.v1.ImageServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .pullImage(
                                io.cri4j.cri.v1.PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage("busybox"))
                                        .build());
                String podId =
                        rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                                .getPodSandboxId();
                rt.createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(podId)
                                .setSandboxConfig(pod)
                                .setConfig(
                                        ContainerConfig.newBuilder()
                                                .setMetadata(
                                                        ContainerMetadata.newBuilder()
                                                                .setName("app"))
                                                .setImage(
                                                        ImageSpec.newBuilder().setImage("busybox")))
                                .build());
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
        CreateContainerRequest received = runtime.calls().lastRequest(CreateContainerRequest.class);
        assertThat(received.getConfig().getAnnotationsMap())
                .containsEntry("cri4j.io/owner-team", "storage");
        assertThat(received.getConfig().getEnvsList())
                .anySatisfy(
                        kv -> {
                            assertThat(kv.getKey()).isEqualTo("CRI4J_TEAM");
                            assertThat(kv.getValue().toStringUtf8()).isEqualTo("storage");
                        });
        assertThat(socket).doesNotExist();
    }
}
