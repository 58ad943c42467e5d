package io.cri4j.testing.fake;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.Mount;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import java.util.Map;

/** Request builders shared by the tests. */
final class Cri {
    private Cri() {}

    /**
     * Where the tests' pods keep their logs (the fake writes its containers' logs there): one
     * directory per test JVM, deleted when it exits.
     */
    static final String LOG_ROOT = logRoot();

    private static String logRoot() {
        try {
            java.nio.file.Path root = java.nio.file.Files.createTempDirectory("cri4j-test-pods-");
            Runtime.getRuntime()
                    .addShutdownHook(
                            new Thread(
                                    () -> {
                                        try (var files = java.nio.file.Files.walk(root)) {
                                            files.sorted(java.util.Comparator.reverseOrder())
                                                    .forEach(f -> f.toFile().delete());
                                        } catch (java.io.IOException e) {
                                            // best effort: a temp directory
                                        }
                                    },
                                    "cri4j-test-pods-cleanup"));
            return root.toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static PodSandboxConfig pod(String name, Map<String, String> labels) {
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace("default")
                                .setUid("uid-" + name))
                .setHostname(name)
                .setLogDirectory(LOG_ROOT + "/default_" + name)
                .putAllLabels(labels)
                .putAnnotations("owner", "test")
                .build();
    }

    static ContainerConfig container(String name, String image, Map<String, String> labels) {
        return ContainerConfig.newBuilder()
                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                .setImage(ImageSpec.newBuilder().setImage(image))
                .addCommand("sleep")
                .addArgs("infinity")
                .addEnvs(
                        KeyValue.newBuilder()
                                .setKey("GREETING")
                                .setValue(ByteString.copyFromUtf8("hello")))
                .addMounts(Mount.newBuilder().setContainerPath("/data").setHostPath("/tmp/data"))
                .setLogPath(name + "/0.log")
                .putAllLabels(labels)
                .build();
    }
}
