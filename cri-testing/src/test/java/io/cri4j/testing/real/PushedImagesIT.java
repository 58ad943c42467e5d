package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.Image;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The offline-built test images: each is in the registry in the promised format, its recorded
 * digests and sizes match what the registry serves, and containerd pulls it through CRI.
 */
class PushedImagesIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static ManagedChannel channel;
    private static CriCalls cri;

    @BeforeAll
    static void connect() {
        channel = CriChannels.newChannel(CONTAINERD.endpoint());
        cri = new CriCalls(channel);
    }

    @AfterAll
    static void disconnect() {
        channel.shutdownNow();
    }

    @Test
    void busyboxIsAnOciImageThatContainerdPulls() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.busybox());
        assertThat(image.reference())
                .isEqualTo(CONTAINERD.registry().hostPort() + "/cri4j/busybox:1.0");
        assertThat(image.manifest().mediaType())
                .isEqualTo("application/vnd.oci.image.manifest.v1+json");
        assertThat(image.platformManifest()).isEqualTo(image.manifest());
        assertThat(image.config().mediaType())
                .isEqualTo("application/vnd.oci.image.config.v1+json");
        assertThat(image.layers())
                .singleElement()
                .satisfies(
                        layer ->
                                assertThat(layer.mediaType())
                                        .isEqualTo("application/vnd.oci.image.layer.v1.tar+gzip"));
        assertLayersServedWithRecordedSizes(image);
        assertPullable(image);
    }

    @Test
    void busyboxDockerIsADockerSchema2ImageThatContainerdPulls() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.busyboxDocker());
        assertThat(image.manifest().mediaType())
                .isEqualTo("application/vnd.docker.distribution.manifest.v2+json");
        assertThat(image.config().mediaType())
                .isEqualTo("application/vnd.docker.container.image.v1+json");
        assertThat(image.layers())
                .singleElement()
                .satisfies(
                        layer ->
                                assertThat(layer.mediaType())
                                        .isEqualTo(
                                                "application/vnd.docker.image.rootfs.diff.tar.gzip"));
        assertLayersServedWithRecordedSizes(image);
        assertPullable(image);
    }

    @Test
    void multiPlatformIsAnIndexAndContainerdPicksThisHostsManifest() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.busyboxMultiPlatform());
        assertThat(image.manifest().mediaType())
                .isEqualTo("application/vnd.oci.image.index.v1+json");
        assertThat(image.platforms()).hasSize(2).contains("linux/" + hostArch());
        assertThat(image.platformManifest().digest()).isNotEqualTo(image.manifest().digest());
        assertLayersServedWithRecordedSizes(image);
        Image pulled = assertPullable(image);
        assertThat(pulled.getRepoDigestsList()).contains(image.digestReference());
    }

    @Test
    void pauseImageIsTheSandboxImageAndAlreadyInContainerd() {
        PushedImage pause = CONTAINERD.registry().push(TestImage.pause());
        assertThat(CONTAINERD.containerd().sandboxImage()).isEqualTo(pause.reference());
        Image status =
                cri.images
                        .imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(
                                                ImageSpec.newBuilder().setImage(pause.reference()))
                                        .build())
                        .getImage();
        assertThat(status.getId()).isEqualTo(pause.config().digest());
        assertThat(status.getSize()).isPositive();
    }

    @Test
    void largeImageHasARandomLayerOfAtLeastTheRequestedSize() throws Exception {
        long bytes = 3L * 1024 * 1024 + 17;
        PushedImage image = CONTAINERD.registry().push(TestImage.large(bytes));
        assertThat(image.reference()).endsWith("/cri4j/large:" + bytes);
        assertThat(image.layers()).hasSize(2);
        // random bytes do not compress: the gzip layer is at least as large as the file
        assertThat(image.layers().get(1).size()).isBetween(bytes, bytes + 64 * 1024);
        assertThat(image.layersSize())
                .isEqualTo(image.layers().get(0).size() + image.layers().get(1).size());
        assertLayersServedWithRecordedSizes(image);
        Image pulled = assertPullable(image);
        assertThat(pulled.getSize()).isGreaterThan(bytes);
    }

    @Test
    void defaultLargeImageCarries64MiBOfRandomBytes() {
        PushedImage image = CONTAINERD.registry().push(TestImage.large());
        assertThat(image.layers().get(1).size()).isGreaterThanOrEqualTo(64L << 20);
        long t0 = System.nanoTime();
        Image pulled = assertPullable(image);
        System.out.printf(
                "pulled %s (%d layer bytes) through CRI in %d ms%n",
                image.reference(), image.layersSize(), (System.nanoTime() - t0) / 1_000_000);
        assertThat(pulled.getSize()).isGreaterThan(64L << 20);
    }

    @Test
    void pushIsCachedPerRegistry() {
        PushedImage first = CONTAINERD.registry().push(TestImage.busybox());
        assertThat(CONTAINERD.registry().push(TestImage.busybox())).isSameAs(first);
    }

    private static Image assertPullable(PushedImage image) {
        String ref = cri.pull(image.reference());
        assertThat(ref).isEqualTo(image.config().digest());
        Image status =
                cri.images
                        .imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(
                                                ImageSpec.newBuilder().setImage(image.reference()))
                                        .build())
                        .getImage();
        assertThat(status.getId()).isEqualTo(image.config().digest());
        assertThat(status.getSize()).isPositive();
        assertThat(status.getRepoTagsList()).contains(image.reference());
        assertThat(status.getRepoDigestsList()).contains(image.digestReference());
        return status;
    }

    /** HEAD each blob: the registry's Content-Length is the size the record claims. */
    private static void assertLayersServedWithRecordedSizes(PushedImage image) throws Exception {
        for (PushedImage.Blob blob : image.layers()) {
            HttpResponse<Void> response =
                    HTTP.send(
                            HttpRequest.newBuilder(
                                            URI.create(
                                                    CONTAINERD.registry().url()
                                                            + "/v2/"
                                                            + image.repository()
                                                            + "/blobs/"
                                                            + blob.digest()))
                                    .method("HEAD", HttpRequest.BodyPublishers.noBody())
                                    .timeout(Duration.ofSeconds(10))
                                    .build(),
                            HttpResponse.BodyHandlers.discarding());
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.headers().firstValueAsLong("Content-Length")).hasValue(blob.size());
        }
    }

    private static String hostArch() {
        return System.getProperty("os.arch").equals("aarch64") ? "arm64" : "amd64";
    }
}
