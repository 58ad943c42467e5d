package io.cri4j.testing.real;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.LinuxSandboxSecurityContext;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import java.nio.file.Path;
import java.util.Objects;
import java.util.UUID;

/**
 * CRI configs for the pods and containers of a test against a real runtime such as {@link
 * LocalContainerd}: a pod on the node's network (no CNI involved) and a container that sleeps.
 * Each returns a builder, to add labels, annotations, env or resources before building.
 */
public final class TestPods {
    private TestPods() {}

    /**
     * A pod on the node's network: {@code name} and {@code namespace} as its metadata with a
     * random uid, its containers' logs under {@code logDirectory}.
     */
    public static PodSandboxConfig.Builder hostNetwork(
            String name, String namespace, Path logDirectory) {
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(Objects.requireNonNull(name, "name"))
                                .setNamespace(Objects.requireNonNull(namespace, "namespace"))
                                .setUid(UUID.randomUUID().toString()))
                .setLogDirectory(logDirectory.toString())
                .setLinux(
                        LinuxPodSandboxConfig.newBuilder()
                                .setSecurityContext(
                                        LinuxSandboxSecurityContext.newBuilder()
                                                .setNamespaceOptions(
                                                        NamespaceOption.newBuilder()
                                                                .setNetwork(NamespaceMode.NODE))));
    }

    /**
     * A container named {@code name} running {@code sleep 3600} from {@code image} (busybox's,
     * e.g. {@link TestImage#busybox()}), logging to {@code NAME.log} in its pod's log directory.
     */
    public static ContainerConfig.Builder sleeper(String name, String image) {
        return ContainerConfig.newBuilder()
                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                .setImage(ImageSpec.newBuilder().setImage(Objects.requireNonNull(image, "image")))
                .addCommand("sleep")
                .addArgs("3600")
                .setLogPath(name + ".log");
    }
}
