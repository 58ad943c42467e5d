package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.imagepull.internal.ContentProgressPoller;
import io.cri4j.imagepull.internal.PullJobImpl;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.TestImage;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The puller against a real containerd (CRI + content service) pulling from a real registry. */
class ContainerdPullIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    private static ManagedChannel channel;
    private ImagePuller puller;

    @BeforeAll
    static void connect() {
        channel = CriChannels.newChannel(CONTAINERD.endpoint());
    }

    @AfterAll
    static void disconnect() {
        channel.shutdownNow();
    }

    @BeforeEach
    void newPuller() {
        puller =
                ImagePuller.builder(
                                CriImagePullBackend.builder(CONTAINERD.endpoint())
                                        .pollInterval(Duration.ofMillis(50))
                                        .build())
                        .build();
    }

    @AfterEach
    void closePuller() {
        puller.close();
    }

    private static void removeImage(String ref) {
        var stub =
                ImageServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
        var st =
                stub.imageStatus(
                        ImageStatusRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(ref))
                                .build());
        if (st.hasImage() && !st.getImage().getId().isEmpty()) {
            stub.removeImage(
                    RemoveImageRequest.newBuilder()
                            .setImage(ImageSpec.newBuilder().setImage(ref))
                            .build());
        }
    }

    private static boolean present(String ref) {
        var st =
                ImageServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(30, TimeUnit.SECONDS)
                        .imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(ref))
                                        .build());
        return st.hasImage() && !st.getImage().getId().isEmpty();
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

    private static Throwable failure(PullJob job, long seconds) throws Exception {
        try {
            job.result().get(seconds, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (CancellationException e) {
            return e;
        }
        throw new AssertionError("pull of " + job.image() + " succeeded");
    }

    @Test
    void pullsOciDockerAndIndexImagesWithExactLayers() throws Exception {
        for (TestImage t :
                List.of(
                        TestImage.busybox(),
                        TestImage.busyboxDocker(),
                        TestImage.busyboxMultiPlatform())) {
            PushedImage image = CONTAINERD.registry().push(t);
            removeImage(image.reference());
            PullJob job = puller.pull(image.reference());
            ProgressWatch watch = new ProgressWatch(job);
            PullResult r = job.result().get(60, TimeUnit.SECONDS);
            assertThat(r.imageId()).as(t.toString()).isEqualTo(image.config().digest());
            assertThat(r.digest()).as(t.toString()).isEqualTo(image.manifest().digest());
            assertThat(r.alreadyPresent()).isFalse();
            PullProgress last =
                    watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
            assertThat(last.percent()).isEqualTo(100);
            assertThat(layersOf(last))
                    .as(t + " layers from the manifest")
                    .isEqualTo(expectedLayers(image));
            assertThat(last.bytesDone()).isEqualTo(image.layersSize());
            watch.assertMonotonic();

            // present now: skipped unless forced
            PullResult again = puller.pull(image.reference()).result().get(30, TimeUnit.SECONDS);
            assertThat(again.alreadyPresent()).isTrue();
            assertThat(again.imageId()).isEqualTo(image.config().digest());
        }
    }

    @Test
    void largeImageProgressRisesMonotonicallyTo100WithBytesAddingUpToTheLayers() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.large());
        removeImage(image.reference());
        long start = System.nanoTime();
        PullJob job = puller.pull(image.reference());
        ProgressWatch watch = new ProgressWatch(job);
        PullResult r = job.result().get(120, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        PullProgress last = watch.await("success", p -> p.phase() == PullProgress.Phase.SUCCEEDED);
        watch.assertMonotonic();
        List<Integer> intermediate =
                watch.all.stream()
                        .map(PullProgress::percent)
                        .filter(p -> p > 0 && p < 100)
                        .distinct()
                        .toList();
        System.out.printf(
                "large image %d bytes pulled in %d ms; percents seen %s; peak rate %.1f MiB/s%n",
                image.layersSize(),
                ms,
                intermediate,
                watch.all.stream().mapToDouble(PullProgress::bytesPerSecond).max().orElse(0)
                        / (1 << 20));
        assertThat(intermediate).as("byte progress between 0 and 100 was observed").isNotEmpty();
        assertThat(watch.all)
                .as("real bytes seen while pulling")
                .anyMatch(
                        p ->
                                p.phase() == PullProgress.Phase.PULLING
                                        && p.bytesDone() > 0
                                        && p.bytesDone() < image.layersSize());
        // A rate needs samples at least MIN_RATE_SPAN apart; on a fast machine 64 MiB may be done
        // sooner.
        List<PullProgress> flowing =
                watch.all.stream()
                        .filter(p -> p.phase() == PullProgress.Phase.PULLING && p.bytesDone() > 0)
                        .toList();
        // the span that matters is while bytes still moved: from the first byte sample to the
        // first one that already had every byte (later events only change layer states)
        long maxBytes = flowing.stream().mapToLong(PullProgress::bytesDone).max().orElse(0);
        java.util.Optional<PullProgress> allBytes =
                flowing.stream().filter(p -> p.bytesDone() == maxBytes).findFirst();
        if (flowing.size() >= 2
                && allBytes.isPresent()
                && Duration.between(flowing.get(0).at(), allBytes.get().at())
                                .compareTo(
                                        io.cri4j.imagepull.internal.ProgressTracker.MIN_RATE_SPAN
                                                .multipliedBy(2))
                        > 0) {
            assertThat(watch.all)
                    .as("a download rate was reported")
                    .anyMatch(p -> p.bytesPerSecond() > 0);
        }
        assertThat(last.percent()).isEqualTo(100);
        assertThat(last.bytesDone()).isEqualTo(image.layersSize()).isEqualTo(last.bytesTotal());
        assertThat(layersOf(last)).isEqualTo(expectedLayers(image));
        assertThat(r.imageId()).isEqualTo(image.config().digest());
    }

    @Test
    void concurrentPullsEachSeeOnlyTheirOwnLayers() throws Exception {
        PushedImage a = CONTAINERD.registry().push(TestImage.large());
        PushedImage b = CONTAINERD.registry().push(TestImage.busyboxDocker()); // another repository
        removeImage(a.reference());
        removeImage(b.reference());
        PullJob ja = puller.pull(a.reference());
        PullJob jb = puller.pull(b.reference());
        ProgressWatch wa = new ProgressWatch(ja);
        ProgressWatch wb = new ProgressWatch(jb);
        ja.result().get(120, TimeUnit.SECONDS);
        jb.result().get(120, TimeUnit.SECONDS);
        wa.await("a done", p -> p.phase().terminal());
        wb.await("b done", p -> p.phase().terminal());
        for (var pair : List.of(Map.entry(a, wa), Map.entry(b, wb))) {
            Map<String, Long> own = expectedLayers(pair.getKey());
            pair.getValue().assertMonotonic();
            for (PullProgress p : pair.getValue().all) {
                assertThat(own.keySet())
                        .as("layers of %s in %s", pair.getKey().reference(), p)
                        .containsAll(p.layers().stream().map(LayerProgress::id).toList());
            }
        }
        assertThat(wa.all)
                .as("live bytes of the large image, against its exact total from the start")
                .anyMatch(
                        p ->
                                p.phase() == PullProgress.Phase.PULLING
                                        && p.bytesDone() > 0
                                        && p.bytesTotal() == a.layersSize()
                                        && p.percent() < 100);
    }

    @Test
    void stoppedRegistryRetriesWithBackoffThenFailsNamingImageAndCause() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.busyboxDocker());
        removeImage(image.reference());
        CONTAINERD.registry().stop();
        PullJob job =
                puller.pull(
                        PullRequest.of(image.reference())
                                .withPolicy(PullPolicy.defaults().withBackoffLimit(2)));
        Throwable e = failure(job, 60);
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageStartingWith(
                        "pulling " + image.reference() + " failed after 3 attempts: ")
                .hasMessageContaining("connection refused");
        assertThat(((PullJobImpl) job).backoffs())
                .containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2));
    }

    @Test
    void activeDeadlineStopsRetrying() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.busybox());
        removeImage(image.reference());
        CONTAINERD.registry().stop();
        long start = System.nanoTime();
        PullJob job =
                puller.pull(
                        PullRequest.of(image.reference())
                                .withPolicy(
                                        PullPolicy.defaults()
                                                .withBackoffLimit(10)
                                                .withActiveDeadline(Duration.ofMillis(2500))));
        Throwable e = failure(job, 30);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageStartingWith(
                        "pulling " + image.reference() + " exceeded its active deadline of 2.5s");
        assertThat(ms).as("ended at the deadline, within a second").isBetween(2400L, 3500L);
    }

    @Test
    void cancelMidPullStopsContainerd() throws Exception {
        PushedImage image = CONTAINERD.registry().push(TestImage.large());
        removeImage(image.reference());
        PullJob job = puller.pull(image.reference());
        ProgressWatch watch = new ProgressWatch(job);
        watch.await("bytes flowing", p -> p.bytesDone() > 0);
        long start = System.nanoTime();
        job.cancel();
        assertThat(failure(job, 5)).isInstanceOf(CancellationException.class);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
        assertThat(job.progress().phase()).isEqualTo(PullProgress.Phase.CANCELLED);
        assertThat(present(image.reference()))
                .as("containerd did not finish the cancelled pull")
                .isFalse();
    }

    @Test
    void prewarmingSetFollowsAddVersionBumpAndRemove() throws Exception {
        PushedImage oci = CONTAINERD.registry().push(TestImage.busybox());
        PushedImage docker = CONTAINERD.registry().push(TestImage.busyboxDocker());
        removeImage(oci.reference());
        removeImage(docker.reference());
        String ociName = oci.reference().substring(0, oci.reference().lastIndexOf(':'));
        String dockerName = docker.reference().substring(0, docker.reference().lastIndexOf(':'));
        try (ImagePrewarmer prewarmer = ImagePrewarmer.create(puller)) {
            java.util.concurrent.LinkedBlockingQueue<PrewarmStatus> events =
                    new java.util.concurrent.LinkedBlockingQueue<>();
            prewarmer.addListener(events::add);
            prewarmer.apply(Map.of(ociName, List.of(PrewarmTag.of(oci.tag(), "1"))));
            PrewarmStatus s1 = awaitStatus(events, s -> s.succeeded() == 1);
            assertThat(s1.tag(ociName, oci.tag()).orElseThrow().imageId())
                    .isEqualTo(oci.config().digest());
            assertThat(present(oci.reference())).isTrue();

            prewarmer.apply(
                    Map.of(
                            ociName,
                            List.of(PrewarmTag.of(oci.tag(), "2")),
                            dockerName,
                            List.of(PrewarmTag.of(docker.tag(), "1"))));
            PrewarmStatus s2 =
                    awaitStatus(
                            events,
                            s ->
                                    s.desired() == 2
                                            && s.succeeded() == 2
                                            && s.tag(ociName, oci.tag())
                                                    .orElseThrow()
                                                    .version()
                                                    .equals("2"));
            assertThat(s2.tag(dockerName, docker.tag()).orElseThrow().imageId())
                    .isEqualTo(docker.config().digest());
            assertThat(present(docker.reference())).isTrue();

            prewarmer.apply(Map.of(dockerName, List.of(PrewarmTag.of(docker.tag(), "1"))));
            PrewarmStatus s3 = prewarmer.status();
            assertThat(s3.images()).containsOnlyKeys(dockerName);
            assertThat(s3.desired()).isEqualTo(1);
            assertThat(s3.succeeded()).isEqualTo(1);
        }
    }

    private static PrewarmStatus awaitStatus(
            java.util.concurrent.BlockingQueue<PrewarmStatus> q,
            java.util.function.Predicate<PrewarmStatus> p)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        PrewarmStatus last = null;
        while (System.nanoTime() < end) {
            PrewarmStatus s = q.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (s == null) {
                break;
            }
            last = s;
            if (p.test(s)) {
                return s;
            }
        }
        throw new AssertionError("status never matched; last " + last);
    }
}
