package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Requirements;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fake's content service and its pulls with byte progress, read by containerd's own client {@code ctr}
 * (Debian's containerd package): {@code content active} lists the ingests of a pull in progress with growing
 * offsets, {@code content ls} with containerd's filter syntax finds the pulled blobs by their labels,
 * {@code content get} reads the manifest, whose layers add up to the image's size.
 */
class FakeContentIT {

    private static final String IMAGE = "registry.example:5000/team/app:1.0";
    // slow enough that ctr, started as a process per look, sees the ingests on a loaded machine
    private static final long RATE = 4L * 1024 * 1024;

    @TempDir Path dir;
    private FakeCriServer fake;
    private ManagedChannel channel;
    private Path ctr;

    @BeforeEach
    void start() throws Exception {
        ctr = Requirements.require("ctr", "containerd");
        fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                        .pullRate(RATE)
                        .build()
                        .start();
        channel = fake.newChannel();
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        fake.close();
    }

    private String ctr(String... args) {
        List<String> cmd =
                new ArrayList<>(
                        List.of(ctr.toString(), "--address", dir.resolve("fake.sock").toString()));
        cmd.addAll(List.of(args));
        Commands.Result r = Commands.exec(Duration.ofSeconds(20), null, Map.of(), cmd);
        assertThat(r.exitCode()).as("ctr %s: %s", String.join(" ", args), r.output()).isZero();
        return r.output();
    }

    private CompletableFuture<PullImageResponse> pull(String image) {
        CompletableFuture<PullImageResponse> out = new CompletableFuture<>();
        ImageServiceGrpc.newStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(PullImageResponse value) {
                                out.complete(value);
                            }

                            @Override
                            public void onError(Throwable t) {
                                out.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {}
                        });
        return out;
    }

    /** Runs {@code ctr content active} until its output satisfies {@code p} (or the pull ended). */
    private String awaitActive(Predicate<String> p, CompletableFuture<?> pull) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String out = "";
        while (System.nanoTime() < end && !pull.isDone()) {
            out = ctr("--namespace", "k8s.io", "content", "active");
            if (p.test(out)) {
                return out;
            }
        }
        throw new AssertionError(
                "ctr content active never matched while pulling; last output:\n" + out);
    }

    @Test
    void ctrSeesIngestsGrowThenFindsTheBlobsByLabelAndReadsTheManifest() throws Exception {
        CompletableFuture<PullImageResponse> pull = pull(IMAGE);
        String first = awaitActive(o -> o.contains("layer-sha256:"), pull);
        // REF  SIZE  AGE: the offset grows while the pull runs
        String later = awaitActive(o -> o.contains("layer-sha256:") && !o.equals(first), pull);
        assertThat(later).contains("layer-sha256:");
        assertThat(pull.isDone()).as("the pull answers only when its layers are in").isFalse();

        String ref = pull.get(60, TimeUnit.SECONDS).getImageRef();
        String manifestDigest = ref.substring(ref.indexOf('@') + 1);
        assertThat(ctr("--namespace", "k8s.io", "content", "active"))
                .doesNotContain("layer-sha256:");

        // containerd's filter syntax, quoted label key and regex, as cri4j's progress poller sends
        // it
        String listed =
                ctr(
                        "--namespace",
                        "k8s.io",
                        "content",
                        "ls",
                        "--quiet",
                        "labels.\"containerd.io/distribution.source.registry.example\"~=\"(^|,)team/app(,|$)\"");
        assertThat(listed).contains(manifestDigest);
        JsonObject manifest =
                JsonParser.parseString(
                                ctr("--namespace", "k8s.io", "content", "get", manifestDigest))
                        .getAsJsonObject();
        long sum = 0;
        List<String> layers = new ArrayList<>();
        for (var l : manifest.getAsJsonArray("layers")) {
            sum += l.getAsJsonObject().get("size").getAsLong();
            layers.add(l.getAsJsonObject().get("digest").getAsString());
        }
        assertThat(listed).contains(layers);
        long size =
                ImageServiceGrpc.newBlockingStub(channel)
                        .imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(IMAGE))
                                        .build())
                        .getImage()
                        .getSize();
        assertThat(sum).isEqualTo(size);
        String labelled =
                ctr(
                        "--namespace",
                        "k8s.io",
                        "content",
                        "ls",
                        "labels.\"containerd.io/gc.ref.content.l.0\"");
        assertThat(labelled)
                .contains(manifestDigest)
                .contains("containerd.io/gc.ref.content.l.0=" + layers.get(0));

        // another namespace is empty; removing the image removes its blobs
        assertThat(ctr("--namespace", "default", "content", "ls", "--quiet")).isBlank();
        ImageServiceGrpc.newBlockingStub(channel)
                .removeImage(
                        RemoveImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(IMAGE))
                                .build());
        assertThat(ctr("--namespace", "k8s.io", "content", "ls", "--quiet"))
                .doesNotContain(manifestDigest);
    }

    @Test
    void aFilterThatDoesNotParseIsInvalidArgument() {
        Commands.Result r =
                Commands.exec(
                        Duration.ofSeconds(20),
                        null,
                        Map.of(),
                        List.of(
                                ctr.toString(),
                                "--address",
                                dir.resolve("fake.sock").toString(),
                                "--namespace",
                                "k8s.io",
                                "content",
                                "ls",
                                "labels.\"unterminated"));
        assertThat(r.exitCode()).isNotZero();
        assertThat(r.output()).contains("quoted literal not terminated");
    }

    @Test
    void cancellingThePullAbandonsItsDownloadsAndRecordsNoImage() throws Exception {
        Context.CancellableContext ctx = Context.current().withCancellation();
        CompletableFuture<PullImageResponse> pull = ctx.call(() -> pull(IMAGE));
        awaitActive(o -> o.contains("layer-sha256:"), pull);
        ctx.cancel(null);
        assertThat(pull)
                .failsWithin(10, TimeUnit.SECONDS)
                .withThrowableThat()
                .havingRootCause()
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.CANCELLED));
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String active = ctr("--namespace", "k8s.io", "content", "active");
        while (active.contains("layer-sha256:") && System.nanoTime() < end) {
            active = ctr("--namespace", "k8s.io", "content", "active");
        }
        assertThat(active).doesNotContain("layer-sha256:");
        assertThat(
                        ImageServiceGrpc.newBlockingStub(channel)
                                .imageStatus(
                                        ImageStatusRequest.newBuilder()
                                                .setImage(ImageSpec.newBuilder().setImage(IMAGE))
                                                .build())
                                .hasImage())
                .isFalse();
    }
}
