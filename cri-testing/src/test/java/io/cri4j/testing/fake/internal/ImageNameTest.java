package io.cri4j.testing.fake.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ImageNameTest {

    @Test
    void normalisesLikeDocker() {
        assertThat(ImageName.parse("nginx").normalized())
                .isEqualTo("docker.io/library/nginx:latest");
        assertThat(ImageName.parse("team/app:1.0").normalized())
                .isEqualTo("docker.io/team/app:1.0");
        assertThat(ImageName.parse("localhost/app").normalized()).isEqualTo("localhost/app:latest");
        assertThat(ImageName.parse("registry.k8s.io/pause:3.10").repoTag())
                .isEqualTo("registry.k8s.io/pause:3.10");
        ImageName port = ImageName.parse("localhost:5000/a/b:v1");
        assertThat(port.repository()).isEqualTo("localhost:5000/a/b");
        assertThat(port.tag()).isEqualTo("v1");
        String digest = "sha256:" + "a".repeat(64);
        ImageName pinned = ImageName.parse("busybox@" + digest);
        assertThat(pinned.tag()).isNull();
        assertThat(pinned.digest()).isEqualTo(digest);
        assertThat(pinned.normalized()).isEqualTo("docker.io/library/busybox@" + digest);
        assertThat(ImageName.parse("busybox:1.36@" + digest).normalized())
                .isEqualTo("docker.io/library/busybox:1.36@" + digest);
    }

    @Test
    void rejectsBadReferencesNamingTheProblem() {
        assertThatThrownBy(() -> ImageName.parse("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> ImageName.parse("Upper/case")).hasMessageContaining("'Upper'");
        assertThatThrownBy(() -> ImageName.parse("busybox@sha256:xyz"))
                .hasMessageContaining("invalid digest");
        assertThatThrownBy(() -> ImageName.parse("busybox:-bad"))
                .hasMessageContaining("invalid tag");
        assertThatThrownBy(() -> ImageName.parse("a//b")).hasMessageContaining("component");
    }
}
