package io.cri4j.examples.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.hook.Hook;
import io.cri4j.hook.Hooks;
import io.cri4j.testing.conformance.ContainerInfo;
import io.cri4j.testing.fake.FakeCriExtension;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A test as a user writes it for their own hook, with no containerd: the example plugin's hooks,
 * found by {@code ServiceLoader} as every cri4j host finds them, run in the fake runtime, and their
 * effect is read where a workload would see it (the container's environment and its status).
 */
class UserAgentTest {

    static final List<Hook> PLUGIN_HOOKS = Hooks.loadBlocking(UserAgentTest.class.getClassLoader());

    @RegisterExtension static FakeCriExtension cri = withPluginHooks(FakeCriExtension.unixSocket());

    private static FakeCriExtension withPluginHooks(FakeCriExtension extension) {
        PLUGIN_HOOKS.forEach(extension::addHook);
        return extension;
    }

    @Test
    void theExamplePluginGivesEachContainerItsPodsTeam() {
        assertThat(PLUGIN_HOOKS).extracting(Hook::name).contains("owner-team");
        cri.fakeRuntime().addImage("busybox:1.36");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                cri.runtimeService().withDeadlineAfter(20, TimeUnit.SECONDS);

        String storage = startContainer(rt, "db", "storage");
        String unlabelled = startContainer(rt, "web", null);

        assertThat(env(rt, storage)).contains("CRI4J_TEAM=storage");
        assertThat(env(rt, unlabelled)).contains("CRI4J_TEAM=unassigned");
        // the hook's annotation is in the OCI spec the container runs with, as on containerd
        assertThat(ContainerInfo.read(rt, storage).runtimeSpec().annotations())
                .containsEntry("cri4j.io/owner-team", "storage");
    }

    private static String startContainer(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt, String pod, String team) {
        PodSandboxConfig.Builder config =
                PodSandboxConfig.newBuilder()
                        .setMetadata(
                                PodSandboxMetadata.newBuilder()
                                        .setName(pod)
                                        .setNamespace("default")
                                        .setUid(pod + "-uid"));
        if (team != null) {
            config.putLabels("team", team);
        }
        String podId =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                        .getPodSandboxId();
        String id =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(config)
                                        .setConfig(
                                                ContainerConfig.newBuilder()
                                                        .setMetadata(
                                                                ContainerMetadata.newBuilder()
                                                                        .setName("app"))
                                                        .setImage(
                                                                ImageSpec.newBuilder()
                                                                        .setImage("busybox:1.36")))
                                        .build())
                        .getContainerId();
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        return id;
    }

    private static String env(RuntimeServiceGrpc.RuntimeServiceBlockingStub rt, String id) {
        return rt.execSync(
                        ExecSyncRequest.newBuilder()
                                .setContainerId(id)
                                .addCmd("env")
                                .setTimeout(10)
                                .build())
                .getStdout()
                .toString(StandardCharsets.UTF_8);
    }
}
