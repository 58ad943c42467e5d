package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.RegistryExtension;
import io.cri4j.testing.real.TestImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** A registry with htpasswd basic auth: pulled with a config.json credential, refused without. */
class RegistryAuthIT {

    private static final String PASSWORD = "s3cret-9f1c!";

    @RegisterExtension
    static final RegistryExtension REGISTRY = RegistryExtension.withBasicAuth("alice", PASSWORD);

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().registry(REGISTRY).build();

    @TempDir Path dir;

    @Test
    void refusedWithoutCredentials() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.busyboxDocker());
        try (ImagePuller puller =
                ImagePuller.builder(CriImagePullBackend.builder(CONTAINERD.endpoint()).build())
                        .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                        .build()) {
            try {
                puller.pull(image.reference()).result().get(60, TimeUnit.SECONDS);
                throw new AssertionError("anonymous pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .isInstanceOf(ImagePullException.class)
                        .hasMessageStartingWith(
                                "pulling " + image.reference() + " failed after 1 attempt: ")
                        .hasMessageContaining("401");
            }
        }
    }

    @Test
    void pulledWithAConfigJsonCredentialAfterAWrongOneAndNeverLogged() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.busybox());
        Path config = dir.resolve("config.json");
        String good =
                Base64.getEncoder()
                        .encodeToString(("alice:" + PASSWORD).getBytes(StandardCharsets.UTF_8));
        Files.writeString(
                config,
                "{\"auths\": {"
                        + "\""
                        + REGISTRY.hostPort()
                        + "\": {\"auth\": \""
                        + good
                        + "\"},"
                        + "\"http://"
                        + REGISTRY.hostPort()
                        + "/cri4j\": {\"username\": \"alice\", \"password\": \"wrong-pw-77\"}"
                        + "}}");
        PrintStream savedErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        PullResult r;
        try (ImagePuller puller =
                ImagePuller.builder(CriImagePullBackend.builder(CONTAINERD.endpoint()).build())
                        .credentials(CredentialStore.fromDockerConfig(config))
                        .build()) {
            r = puller.pull(image.reference()).result().get(60, TimeUnit.SECONDS);
        } finally {
            System.setErr(savedErr);
        }
        assertThat(r.imageId()).isEqualTo(image.config().digest());
        assertThat(r.attempts())
                .as("the wrong credential (more specific, tried first) failed within attempt 1")
                .isEqualTo(1);
        String log = captured.toString(StandardCharsets.UTF_8);
        savedErr.print(log);
        assertThat(log)
                .contains("pulled " + image.reference())
                .doesNotContain(PASSWORD)
                .doesNotContain(good)
                .doesNotContain("wrong-pw-77");
    }
}
