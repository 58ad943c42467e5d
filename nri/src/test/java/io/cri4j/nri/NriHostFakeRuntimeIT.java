package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.hook.HookEvent;
import io.cri4j.testing.conformance.ContainerInfo;
import io.cri4j.testing.fake.FakeCriServer;
import io.cri4j.testing.real.NriGoPlugin;
import io.grpc.ManagedChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fake runtime as an NRI host for external plugins: an {@link NriHost} given to {@link
 * FakeCriServer} ({@code addHookProvider}), NRI's Go {@code nri-logger} connected to it, and its
 * effect visible where a user of the fake looks (ExecSync's env, ContainerStatus): an NRI plugin
 * unit-tested without containerd.
 */
class NriHostFakeRuntimeIT {

    @TempDir Path dir;

    private static PodSandboxConfig pod(String name) {
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace("default")
                                .setUid("uid-" + name))
                .build();
    }

    private static String create(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt,
            String pod,
            String podName,
            String name) {
        return rt.createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(pod)
                                .setConfig(
                                        ContainerConfig.newBuilder()
                                                .setMetadata(
                                                        ContainerMetadata.newBuilder()
                                                                .setName(name))
                                                .setImage(
                                                        ImageSpec.newBuilder()
                                                                .setImage("busybox:1.36"))
                                                .addCommand("sleep")
                                                .addArgs("3600"))
                                .setSandboxConfig(pod(podName))
                                .build())
                .getContainerId();
    }

    @Test
    void nriLoggerOnTheFakesNriSocketAdjustsItsContainers() throws Exception {
        BlockingQueue<String> registered = new LinkedBlockingQueue<>();
        BlockingQueue<String> gone = new LinkedBlockingQueue<>();
        NriHost nri =
                NriHost.builder(dir.resolve("nri.sock"))
                        .listener(
                                new NriHost.Listener() {
                                    @Override
                                    public void registered(
                                            String name, int index, Set<HookEvent> events) {
                                        registered.add(name);
                                    }

                                    @Override
                                    public void disconnected(String name, Throwable cause) {
                                        gone.add(name);
                                    }
                                })
                        .build();
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("cri.sock")))
                        .addHookProvider(nri)
                        .build()
                        .start()) {
            fake.runtime().addImage("busybox:1.36");
            ManagedChannel ch = fake.newChannel();
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                        RuntimeServiceGrpc.newBlockingStub(ch)
                                .withDeadlineAfter(20, TimeUnit.SECONDS);
                String pod =
                        rt.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(pod("web"))
                                                .build())
                                .getPodSandboxId();
                String early = create(rt, pod, "web", "early");

                try (NriGoPlugin logger =
                        NriGoPlugin.launch(
                                nri.socket(),
                                dir,
                                "nri-logger",
                                20,
                                "-add-env",
                                "NRI_LOGGER_WAS_HERE",
                                "-add-annotation",
                                "nri.example/logged")) {
                    assertThat(registered.poll(20, TimeUnit.SECONDS)).isEqualTo("nri-logger");
                    assertThat(Files.readString(logger.logFile()))
                            .as("Synchronize gave it the fake's state")
                            .contains(pod)
                            .contains(early);

                    String app = create(rt, pod, "web", "app");
                    rt.startContainer(
                            StartContainerRequest.newBuilder().setContainerId(app).build());
                    String value = "logger-pid-" + logger.pid();
                    String env =
                            rt.execSync(
                                            ExecSyncRequest.newBuilder()
                                                    .setContainerId(app)
                                                    .addCmd("env")
                                                    .setTimeout(10)
                                                    .build())
                                    .getStdout()
                                    .toString(StandardCharsets.UTF_8);
                    assertThat(env).contains("NRI_LOGGER_WAS_HERE=" + value);
                    // as on containerd: the plugin's annotation is in the OCI spec, not in
                    // ContainerStatus's annotations (the config as requested)
                    assertThat(ContainerInfo.read(rt, app).runtimeSpec().annotations())
                            .containsEntry("nri.example/logged", value);
                    assertThat(
                                    rt.containerStatus(
                                                    ContainerStatusRequest.newBuilder()
                                                            .setContainerId(app)
                                                            .build())
                                            .getStatus()
                                            .getAnnotationsMap())
                            .doesNotContainKey("nri.example/logged");
                    assertThat(fake.runtime().containerConfig(app).getEnvsList())
                            .anySatisfy(
                                    kv -> assertThat(kv.getKey()).isEqualTo("NRI_LOGGER_WAS_HERE"));
                }
                // the plugin is gone: the next container is created without it
                assertThat(gone.poll(10, TimeUnit.SECONDS)).isEqualTo("nri-logger");
                assertThat(nri.hooks()).isEmpty();
                String late = create(rt, pod, "web", "late");
                assertThat(ContainerInfo.read(rt, late).runtimeSpec().annotations())
                        .doesNotContainKey("nri.example/logged");
            } finally {
                ch.shutdownNow();
            }
        }
        assertThat(Files.exists(nri.socket())).as("the fake closed the NRI host").isFalse();
    }
}
