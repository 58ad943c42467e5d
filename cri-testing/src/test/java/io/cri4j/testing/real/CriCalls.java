package io.cri4j.testing.real;

import com.google.gson.JsonParser;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Small CRI helpers shared by the integration tests (plain generated stubs underneath). */
final class CriCalls {

    final RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    final ImageServiceGrpc.ImageServiceBlockingStub images;

    CriCalls(ManagedChannel channel) {
        this.runtime = RuntimeServiceGrpc.newBlockingStub(channel);
        this.images = ImageServiceGrpc.newBlockingStub(channel);
    }

    String pull(String image) {
        return images.withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build())
                .getImageRef();
    }

    static PodSandboxConfig podConfig(String name, boolean hostNetwork, Path logDir) {
        PodSandboxConfig.Builder b = TestPods.hostNetwork(name, "cri4j", logDir);
        if (!hostNetwork) {
            b.getLinuxBuilder()
                    .getSecurityContextBuilder()
                    .getNamespaceOptionsBuilder()
                    .setNetwork(NamespaceMode.POD);
        }
        return b.build();
    }

    String runPod(PodSandboxConfig config) {
        return runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                .getPodSandboxId();
    }

    /** Creates and starts a container running {@code sleep 3600} from {@code image}. */
    String startSleeper(String podId, PodSandboxConfig podConfig, String image) {
        ContainerConfig config = TestPods.sleeper("sleeper", image).build();
        String id =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setConfig(config)
                                        .setSandboxConfig(podConfig)
                                        .build())
                        .getContainerId();
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        return id;
    }

    /** The host pid of a container's init process, from containerd's verbose status. */
    long containerPid(String containerId) {
        String info =
                runtime.containerStatus(
                                ContainerStatusRequest.newBuilder()
                                        .setContainerId(containerId)
                                        .setVerbose(true)
                                        .build())
                        .getInfoOrThrow("info");
        return JsonParser.parseString(info).getAsJsonObject().get("pid").getAsLong();
    }

    /** The host pid of a sandbox's pause process, from containerd's verbose status. */
    long sandboxPid(String podId) {
        String info =
                runtime.podSandboxStatus(
                                PodSandboxStatusRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setVerbose(true)
                                        .build())
                        .getInfoOrThrow("info");
        return JsonParser.parseString(info).getAsJsonObject().get("pid").getAsLong();
    }
}
