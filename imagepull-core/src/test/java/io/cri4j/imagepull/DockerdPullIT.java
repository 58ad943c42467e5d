package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.imagepull.internal.ContentProgressPoller;
import io.cri4j.imagepull.internal.UnixHttpClient;
import io.cri4j.testing.real.DockerdExtension;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.RegistryExtension;
import io.cri4j.testing.real.TestImage;
import io.netty.handler.codec.http.HttpMethod;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link DockerImagePullBackend} against a real dockerd 20.10 (Debian docker.io) pulling from a
 * real docker-registry on loopback (plain HTTP: dockerd treats 127.0.0.0/8 as insecure).
 */
class DockerdPullIT {

    private static final String PASSWORD = "d0cker-pw-4b2e!";

    @RegisterExtension static final RegistryExtension REGISTRY = new RegistryExtension();

    @RegisterExtension
    static final RegistryExtension AUTH_REGISTRY = RegistryExtension.withBasicAuth("bob", PASSWORD);

    @RegisterExtension static final DockerdExtension DOCKERD = new DockerdExtension();

    private UnixHttpClient engine;
    private ImagePuller puller;

    @BeforeEach
    void connect() {
        engine = new UnixHttpClient(DOCKERD.socket());
        puller =
                ImagePuller.builder(DockerImagePullBackend.create(DOCKERD.socket()))
                        .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                        .build();
    }

    @AfterEach
    void close() {
        puller.close();
        engine.close();
    }

    private Optional<com.google.gson.JsonObject> inspect(String ref) throws Exception {
        UnixHttpClient.Response r =
                engine.send(HttpMethod.GET, "/images/" + ref + "/json", Map.of(), null)
                        .get(30, TimeUnit.SECONDS);
        if (r.status() == 404) {
            return Optional.empty();
        }
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return Optional.of(com.google.gson.JsonParser.parseString(r.body()).getAsJsonObject());
    }

    private void remove(String ref) throws Exception {
        UnixHttpClient.Response r =
                engine.send(HttpMethod.DELETE, "/images/" + ref + "?force=1", Map.of(), null)
                        .get(30, TimeUnit.SECONDS);
        assertThat(r.status()).as(r.body()).isIn(200, 404);
        assertThat(inspect(ref)).isEmpty();
    }

    /** Removes every image, so no layer "Already exists" and all bytes are downloaded. */
    private void removeAll() throws Exception {
        UnixHttpClient.Response r =
                engine.send(HttpMethod.GET, "/images/json?all=1", Map.of(), null)
                        .get(30, TimeUnit.SECONDS);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        for (var image : com.google.gson.JsonParser.parseString(r.body()).getAsJsonArray()) {
            remove(image.getAsJsonObject().get("Id").getAsString());
        }
    }

    private static Map<String, Long> expectedLayers(PushedImage image) {
        Map<String, Long> m = new LinkedHashMap<>();
        image.layers()
                .forEach(l -> m.putIfAbsent(ContentProgressPoller.shortId(l.digest()), l.size()));
        return m;
    }

    private static Map<String, Long> layersOf(PullProgress p) {
        Map<String, Long> m = new LinkedHashMap<>();
        p.layers().forEach(l -> m.put(l.id(), l.done()));
        return m;
    }

    private static Throwable failure(PullJob job) throws Exception {
        try {
            job.result().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("pull of " + job.image() + " succeeded");
    }

    private PullResult pullAndCheck(PushedImage image) throws Exception {
        removeAll();
        PullJob job = puller.pull(image.reference());
        ProgressWatch watch = new ProgressWatch(job);
        PullResult r = job.result().get(120, TimeUnit.SECONDS);
        PullProgress last = watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
        watch.assertMonotonic();
        assertThat(last.percent()).isEqualTo(100);
        assertThat(layersOf(last))
                .as(image.reference() + " layers, bytes per layer as pushed")
                .isEqualTo(expectedLayers(image));
        assertThat(last.bytesDone()).isEqualTo(image.layersSize()).isEqualTo(last.bytesTotal());

        var inspected = inspect(image.reference()).orElseThrow();
        assertThat(r.imageId())
                .isEqualTo(inspected.get("Id").getAsString())
                .isEqualTo(image.config().digest());
        assertThat(r.digest()).isEqualTo(image.manifest().digest());
        assertThat(inspected.getAsJsonArray("RepoDigests").toString())
                .contains(image.digestReference());
        assertThat(r.alreadyPresent()).isFalse();
        return r;
    }

    @Test
    void pullsOciAndDockerFormatImagesWithExactLayerBytes() throws Exception {
        for (TestImage t : List.of(TestImage.busybox(), TestImage.busyboxDocker())) {
            PushedImage image = REGISTRY.push(t);
            pullAndCheck(image);
            PullResult again = puller.pull(image.reference()).result().get(30, TimeUnit.SECONDS);
            assertThat(again.alreadyPresent()).as("present now: not pulled again").isTrue();
            assertThat(again.imageId()).isEqualTo(image.config().digest());
        }
    }

    @Test
    void layerSharedWithAPresentImageIsReportedAlreadyExistsAndNotCounted() throws Exception {
        PushedImage base = REGISTRY.push(TestImage.busybox());
        PushedImage large =
                REGISTRY.push(TestImage.large(2L << 20)); // busybox's layer + a random one
        pullAndCheck(base);
        PushedImage.Blob shared = base.layers().get(0);
        assertThat(large.layers()).contains(shared);
        PullJob job = puller.pull(large.reference());
        ProgressWatch watch = new ProgressWatch(job);
        job.result().get(60, TimeUnit.SECONDS);
        PullProgress last = watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
        watch.assertMonotonic();
        assertThat(last.percent()).isEqualTo(100);
        LayerProgress existing =
                last.layers().stream()
                        .filter(l -> l.id().equals(ContentProgressPoller.shortId(shared.digest())))
                        .findFirst()
                        .orElseThrow();
        assertThat(existing.status()).isEqualTo("Already exists");
        assertThat(existing.complete()).isTrue();
        assertThat(last.bytesDone())
                .as("only the new layer was downloaded")
                .isEqualTo(large.layersSize() - shared.size())
                .isEqualTo(last.bytesTotal());
    }

    @Test
    void cancelMidPullMakesDockerdAbandonIt() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.large());
        removeAll();
        PullJob job = puller.pull(image.reference());
        ProgressWatch watch = new ProgressWatch(job);
        watch.await("bytes flowing", p -> p.bytesDone() > 0);
        long start = System.nanoTime();
        job.cancel();
        try {
            job.result().get(5, TimeUnit.SECONDS);
            throw new AssertionError("cancelled pull succeeded");
        } catch (java.util.concurrent.CancellationException expected) {
            // the job's future
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
        assertThat(job.progress().phase()).isEqualTo(PullProgress.Phase.CANCELLED);
        // dockerd cancels the pull when its client goes away: it logs so, and the image never
        // appears
        java.nio.file.Path log = DOCKERD.dockerd().logFile();
        io.cri4j.testing.real.internal.Await.until(
                "dockerd logging the cancelled pull",
                java.time.Duration.ofSeconds(10),
                () ->
                        java.nio.file.Files.readString(log)
                                .contains(
                                        "Not continuing with pull after error: context canceled"));
        UnixHttpClient.Response r =
                engine.send(HttpMethod.GET, "/images/json?all=1", Map.of(), null)
                        .get(30, TimeUnit.SECONDS);
        assertThat(r.body()).doesNotContain(image.config().digest());
        assertThat(inspect(image.reference())).isEmpty();
    }

    @Test
    void pullsByDigestReference() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.busyboxDocker());
        removeAll();
        PullResult r = puller.pull(image.digestReference()).result().get(60, TimeUnit.SECONDS);
        assertThat(r.imageId()).isEqualTo(image.config().digest());
        assertThat(r.digest()).isEqualTo(image.manifest().digest());
        assertThat(r.alreadyPresent()).isFalse();
        assertThat(inspect(image.digestReference())).isPresent();
    }

    @Test
    void largeImageProgressRisesMonotonicallyTo100() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.large(16L << 20));
        remove(image.reference());
        PullJob job = puller.pull(image.reference());
        ProgressWatch watch = new ProgressWatch(job);
        job.result().get(120, TimeUnit.SECONDS);
        watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
        watch.assertMonotonic();
        assertThat(watch.all)
                .as("bytes seen while pulling")
                .anyMatch(
                        p ->
                                p.phase() == PullProgress.Phase.PULLING
                                        && p.bytesDone() > 0
                                        && p.bytesDone() < image.layersSize());
        pullAndCheck(image); // once more from scratch, with the full assertions
    }

    @Test
    void missingImageFailsNamingTheImageAndDockerdsMessage() throws Exception {
        String ref = REGISTRY.hostPort() + "/cri4j/no-such-image:1";
        Throwable e = failure(puller.pull(ref));
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageContaining(ref)
                .hasMessageContaining("manifest unknown");
    }

    @Test
    void layerMissingInTheRegistryFailsFromTheStreamedErrorDetail() throws Exception {
        PushedImage image = REGISTRY.push(TestImage.large(1L << 20)); // used by no other test
        PushedImage.Blob random =
                image.layers().stream()
                        .filter(l -> l.size() > (1L << 20))
                        .findFirst()
                        .orElseThrow();
        String hex = random.digest().substring("sha256:".length());
        java.nio.file.Path data =
                REGISTRY.registry()
                        .directory()
                        .resolve("storage/docker/registry/v2/blobs/sha256")
                        .resolve(hex.substring(0, 2))
                        .resolve(hex)
                        .resolve("data");
        java.nio.file.Files.delete(data);
        removeAll();
        Throwable e = failure(puller.pull(image.reference()));
        // HTTP 200 was sent already: dockerd reports this one as errorDetail in the JSON stream
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageContaining(image.reference())
                .hasMessageEndingWith("docker: unknown blob");
        assertThat(inspect(image.reference())).isEmpty();
    }

    @Test
    void authRegistryPullsWithACredentialAndFailsWithout() throws Exception {
        PushedImage image = AUTH_REGISTRY.push(TestImage.busyboxDocker());
        remove(image.reference());
        Throwable e = failure(puller.pull(image.reference()));
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageContaining(image.reference())
                .hasMessageContaining("no basic auth credentials");
        assertThat(inspect(image.reference())).isEmpty();

        String auth =
                Base64.getEncoder()
                        .encodeToString(("bob:" + PASSWORD).getBytes(StandardCharsets.UTF_8));
        try (ImagePuller withCreds =
                ImagePuller.builder(DockerImagePullBackend.create(DOCKERD.socket()))
                        .credentials(
                                CredentialStore.fromDockerConfigJson(
                                        "{\"auths\": {\""
                                                + AUTH_REGISTRY.hostPort()
                                                + "\": {\"auth\": \""
                                                + auth
                                                + "\"}}}",
                                        "test"))
                        .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                        .build()) {
            PullResult r = withCreds.pull(image.reference()).result().get(60, TimeUnit.SECONDS);
            assertThat(r.imageId()).isEqualTo(image.config().digest());
        }
        assertThat(inspect(image.reference())).isPresent();
    }
}
