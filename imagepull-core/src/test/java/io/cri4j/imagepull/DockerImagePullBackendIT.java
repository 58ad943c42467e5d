package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Docker Engine API backend over a real unix socket against {@link FakeDockerd}, an HTTP
 * server speaking the Engine API's wire format (no dockerd can run on the build machines).
 */
class DockerImagePullBackendIT {

    @TempDir Path dir;

    private static String resource(String name) throws Exception {
        try (InputStream in =
                DockerImagePullBackendIT.class.getResourceAsStream("/docker/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void pullsWithPerLayerProgressThatNeverGoesBackwards() throws Exception {
        Path sock = dir.resolve("docker.sock");
        try (FakeDockerd dockerd = new FakeDockerd(sock);
                ImagePuller puller =
                        ImagePuller.builder(DockerImagePullBackend.create(sock)).build()) {
            dockerd.stream = resource("pull-two-layers.jsonl");
            PullJob job =
                    puller.pull(
                            PullRequest.of("registry.test:5000/team/app:1.0")
                                    .withCredentials(
                                            List.of(
                                                    RegistryCredential.basic(
                                                            "registry.test:5000",
                                                            "carol",
                                                            "pa55"))));
            ProgressWatch watch = new ProgressWatch(job);
            PullResult r = job.result().get(10, TimeUnit.SECONDS);
            assertThat(r.imageId()).isEqualTo("sha256:" + "7".repeat(64));
            assertThat(r.digest()).isEqualTo("sha256:" + "9".repeat(64));
            assertThat(r.size()).isEqualTo(3538478);

            PullProgress last =
                    watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
            watch.assertMonotonic();
            assertThat(last.percent()).isEqualTo(100);
            assertThat(last.layers())
                    .containsExactly(
                            new LayerProgress(
                                    "3f4ca61aafcd", "Pull complete", 2_811_478, 2_811_478),
                            new LayerProgress("8a1e25ce7c4f", "Pull complete", 727_000, 727_000),
                            new LayerProgress("d1e017099d17", "Already exists", 0, 0));
            assertThat(last.bytesDone())
                    .isEqualTo(2_811_478 + 727_000)
                    .isEqualTo(last.bytesTotal());
            assertThat(watch.all)
                    .extracting(PullProgress::percent)
                    .as("intermediate figures were reported")
                    .anyMatch(p -> p > 0 && p < 100);
            assertThat(watch.all)
                    .extracting(PullProgress::message)
                    .contains(
                            "1.0: Pulling from team/app",
                            "Status: Downloaded newer image for registry.test:5000/team/app:1.0");

            FakeDockerd.Seen create =
                    dockerd.requests.stream()
                            .filter(s -> s.method().equals("POST"))
                            .findFirst()
                            .orElseThrow();
            assertThat(create.uri())
                    .isEqualTo(
                            "/images/create?fromImage=registry.test%3A5000%2Fteam%2Fapp&tag=1.0");
            JsonObject auth =
                    JsonParser.parseString(
                                    new String(
                                            Base64.getUrlDecoder().decode(create.registryAuth()),
                                            StandardCharsets.UTF_8))
                            .getAsJsonObject();
            assertThat(auth.get("username").getAsString()).isEqualTo("carol");
            assertThat(auth.get("password").getAsString()).isEqualTo("pa55");
            assertThat(auth.get("serveraddress").getAsString()).isEqualTo("registry.test:5000");
        }
    }

    @Test
    void errorDetailFailsThePullWithItsMessage() throws Exception {
        Path sock = dir.resolve("docker.sock");
        try (FakeDockerd dockerd = new FakeDockerd(sock);
                ImagePuller puller =
                        ImagePuller.builder(DockerImagePullBackend.create(sock))
                                .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                                .build()) {
            dockerd.stream = resource("pull-unauthorized.jsonl");
            PullJob job = puller.pull("registry.test:5000/team/app:2.0");
            try {
                job.result().get(10, TimeUnit.SECONDS);
                throw new AssertionError("pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .isInstanceOf(ImagePullException.class)
                        .hasMessage(
                                "pulling registry.test:5000/team/app:2.0 failed after 1 attempt: docker: unauthorized: authentication required");
            }
        }
    }

    @Test
    void httpErrorsNameStatusAndDaemonMessage() throws Exception {
        Path sock = dir.resolve("docker.sock");
        try (FakeDockerd dockerd = new FakeDockerd(sock);
                DockerImagePullBackend backend = DockerImagePullBackend.create(sock)) {
            dockerd.createStatus = 404;
            dockerd.createBody =
                    "{\"message\":\"pull access denied for nope, repository does not exist\"}";
            try {
                backend.pull("nope", java.util.Optional.empty(), new NoProgress())
                        .get(10, TimeUnit.SECONDS);
                throw new AssertionError("pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .hasMessage(
                                "docker: pulling nope answered 404 Not Found: "
                                        + "pull access denied for nope, repository does not exist");
            }
            assertThat(backend.imageStatus("nope").get(10, TimeUnit.SECONDS)).isEmpty();
            assertThat(dockerd.requests.get(0).uri())
                    .isEqualTo("/images/create?fromImage=nope&tag=latest");
        }
    }

    @Test
    void cancelClosesTheConnectionWithinASecond() throws Exception {
        Path sock = dir.resolve("docker.sock");
        try (FakeDockerd dockerd = new FakeDockerd(sock);
                ImagePuller puller =
                        ImagePuller.builder(DockerImagePullBackend.create(sock)).build()) {
            dockerd.stream =
                    resource("pull-two-layers.jsonl")
                            .lines()
                            .limit(8)
                            .reduce("", (a, b) -> a + b + "\r\n");
            dockerd.hold = true;
            PullJob job = puller.pull("registry.test:5000/team/app:1.0");
            ProgressWatch watch = new ProgressWatch(job);
            watch.await("bytes flowing", p -> p.bytesDone() > 0);
            job.cancel();
            assertThat(dockerd.pullConnectionClosed.await(1, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void closingLeavesNoThreads() throws Exception {
        Path sock = dir.resolve("docker.sock");
        try (FakeDockerd dockerd = new FakeDockerd(sock)) {
            dockerd.stream = resource("pull-two-layers.jsonl");
            ImagePuller puller = ImagePuller.builder(DockerImagePullBackend.create(sock)).build();
            puller.pull("registry.test:5000/team/app:1.0").result().get(10, TimeUnit.SECONDS);
            puller.close();
            puller.close();
            Threads.assertNoneLeft();
        }
    }

    @Test
    void unreachableDaemonIsAClearError() throws Exception {
        try (DockerImagePullBackend backend =
                DockerImagePullBackend.create(dir.resolve("none.sock"))) {
            try {
                backend.pull("x", java.util.Optional.empty(), new NoProgress())
                        .get(10, TimeUnit.SECONDS);
                throw new AssertionError("pull succeeded");
            } catch (ExecutionException e) {
                assertThat(e.getCause())
                        .hasMessageStartingWith("cannot connect to " + dir.resolve("none.sock"));
            }
        }
    }

    static final class NoProgress implements ImagePullBackend.ProgressSink {
        @Override
        public void layer(String id, String status, long done, long total) {}

        @Override
        public void layersResolved(java.util.LinkedHashMap<String, Long> layerSizes) {}

        @Override
        public void unknown(String reason) {}

        @Override
        public void message(String message) {}
    }
}
