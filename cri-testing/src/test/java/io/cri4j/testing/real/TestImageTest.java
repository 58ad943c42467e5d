package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class TestImageTest {

    @Test
    void referencesNameTheRegistryRepositoryAndTag() {
        assertThat(TestImage.busybox().referenceIn("127.0.0.1:41234"))
                .isEqualTo("127.0.0.1:41234/cri4j/busybox:1.0");
        assertThat(TestImage.busyboxDocker().referenceIn("127.0.0.1:1"))
                .isEqualTo("127.0.0.1:1/cri4j/busybox-docker:1.0");
        assertThat(TestImage.pause().referenceIn("h:2")).isEqualTo("h:2/cri4j/pause:1.0");
        assertThat(TestImage.large().referenceIn("h:2")).isEqualTo("h:2/cri4j/large:67108864");
        assertThat(TestImage.busyboxMultiPlatform().format()).isEqualTo(TestImage.Format.OCI_INDEX);
    }

    @Test
    void equalityFollowsContent() {
        assertThat(TestImage.large(10))
                .isEqualTo(TestImage.large(10))
                .hasSameHashCodeAs(TestImage.large(10))
                .isNotEqualTo(TestImage.large(11));
        assertThat(TestImage.busybox()).isNotEqualTo(TestImage.busyboxDocker());
    }

    @Test
    void largeRejectsNonsenseSizes() {
        assertThatThrownBy(() -> TestImage.large(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
        assertThatThrownBy(() -> TestImage.large(5L << 30))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void pushedImageSumsLayersAndPinsDigests() {
        PushedImage.Blob manifest = new PushedImage.Blob("m", "sha256:aa", 10);
        PushedImage image =
                new PushedImage(
                        "127.0.0.1:5/cri4j/busybox:1.0",
                        "cri4j/busybox",
                        "1.0",
                        manifest,
                        manifest,
                        new PushedImage.Blob("c", "sha256:cc", 3),
                        List.of(
                                new PushedImage.Blob("l", "sha256:l1", 100),
                                new PushedImage.Blob("l", "sha256:l2", 23)),
                        List.of("linux/amd64"));
        assertThat(image.layersSize()).isEqualTo(123);
        assertThat(image.digestReference()).isEqualTo("127.0.0.1:5/cri4j/busybox@sha256:aa");
        assertThatThrownBy(() -> new PushedImage.Blob("l", "sha256:x", -1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void credentialsAreNotPrinted() {
        assertThat(new LocalRegistry.BasicAuth("bob", "hunter2").toString())
                .contains("bob")
                .doesNotContain("hunter2");
        assertThatThrownBy(() -> new LocalRegistry.BasicAuth("a:b", "x"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
