package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link PullObserver} following pulls someone else makes, against the fake runtime's content service (the
 * same wire as containerd's, read by ctr in cri-testing's FakeContentIT; the proxy's tests follow real
 * containerd): bytes rise to the layers' total, runtimes without a content service report unknown, and
 * every bound holds.
 */
class PullObserverIT {

    @TempDir Path dir;
    private FakeCriServer fake;
    private ManagedChannel channel;
    private PullObserver observer;

    private void start(FakeCriServer.Builder b, PullObserver.Builder o) throws Exception {
        fake = b.listen(CriEndpoint.unix(dir.resolve("fake.sock"))).build().start();
        channel = fake.newChannel();
        observer =
                o == null
                        ? PullObserver.builder(fake.endpoint())
                                .pollInterval(Duration.ofMillis(50))
                                .build()
                        : o.build();
    }

    @AfterEach
    void stop() throws Exception {
        if (observer != null) {
            observer.close();
        }
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (fake != null) {
            fake.close();
        }
    }

    private long imageSize(String image) {
        return ImageServiceGrpc.newBlockingStub(channel)
                .imageStatus(
                        ImageStatusRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build())
                .getImage()
                .getSize();
    }

    /** Collects a watch's snapshots. */
    static final class Seen implements PullObserver.Listener {
        final List<PullProgress> all = new CopyOnWriteArrayList<>();
        final LinkedBlockingQueue<PullProgress> queue = new LinkedBlockingQueue<>();
        final CountDownLatch ended = new CountDownLatch(1);

        @Override
        public void onProgress(PullProgress p) {
            all.add(p);
            queue.add(p);
        }

        @Override
        public void onEnd() {
            ended.countDown();
        }

        PullProgress await(String what, Predicate<PullProgress> p) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < end) {
                PullProgress next = queue.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (next != null && p.test(next)) {
                    return next;
                }
            }
            throw new AssertionError("no snapshot with " + what + "; seen " + all);
        }

        void awaitEnd() throws InterruptedException {
            assertThat(ended.await(30, TimeUnit.SECONDS))
                    .as("the watch ended; seen %s", all)
                    .isTrue();
        }

        List<Integer> percents() {
            return all.stream().map(PullProgress::percent).toList();
        }
    }

    @Test
    void followsAPullsBytesToItsLayersTotalWithFullDigests() throws Exception {
        start(FakeCriServer.builder().pullRate(32L << 20), null);
        String image = "registry.example/team/app:1.0";
        Seen seen = new Seen();
        observer.watch(image, seen); // before the pull: waits for it
        ObservedPulls.pull(observer, channel, image).get(60, TimeUnit.SECONDS);
        seen.awaitEnd();
        PullProgress last = seen.all.get(seen.all.size() - 1);
        assertThat(last.phase()).isEqualTo(PullProgress.Phase.SUCCEEDED);
        assertThat(last.percent()).isEqualTo(100);
        long size = imageSize(image);
        assertThat(last.bytesTotal()).isEqualTo(size).isEqualTo(last.bytesDone());
        assertThat(last.layers())
                .isNotEmpty()
                .allSatisfy(l -> assertThat(l.id()).matches("sha256:[0-9a-f]{64}"));
        assertThat(seen.percents()).as("monotonic").isSorted();
        assertThat(seen.all)
                .as("bytes seen moving")
                .anyMatch(
                        p ->
                                p.phase() == PullProgress.Phase.PULLING
                                        && p.bytesDone() > 0
                                        && p.bytesDone() < size);
        assertThat(seen.all.get(0).percent()).isLessThan(10);
        assertThat(observer.pulls()).extracting(PullProgress::image).containsExactly(image);

        // a watch of a pull that ended within the retention answers its outcome at once
        Seen again = new Seen();
        observer.watch("registry.example/team/app:1.0", again);
        again.awaitEnd();
        assertThat(again.all)
                .singleElement()
                .satisfies(p -> assertThat(p.percent()).isEqualTo(100));
    }

    @Test
    void aRuntimeWithoutContentServiceReportsUnknownUntilTheEnd() throws Exception {
        start(FakeCriServer.builder().contentService(false).pullRate(64L << 20), null);
        String image = "busybox:1.36";
        Seen seen = new Seen();
        observer.watch("docker.io/library/busybox:1.36", seen); // normalised like Docker
        ObservedPulls.pull(observer, channel, image).get(60, TimeUnit.SECONDS);
        seen.awaitEnd();
        PullProgress unknown =
                seen.all.stream()
                        .filter(p -> p.phase() == PullProgress.Phase.PULLING)
                        .reduce((a, b) -> b)
                        .orElseThrow();
        assertThat(unknown.percent()).isEqualTo(-1);
        assertThat(unknown.message()).contains("no containerd content service");
        assertThat(seen.all.get(seen.all.size() - 1).percent()).isEqualTo(100);
    }

    @Test
    void aFailedPullEndsWithItsError() throws Exception {
        start(FakeCriServer.builder(), null);
        fake.faults()
                .on("PullImage")
                .failNext(
                        1,
                        io.grpc.Status.NOT_FOUND.withDescription(
                                "failed to resolve reference \"x/y:nope\": not found"));
        Seen seen = new Seen();
        observer.watch("x/y:nope", seen);
        assertThat(ObservedPulls.pull(observer, channel, "x/y:nope"))
                .failsWithin(30, TimeUnit.SECONDS);
        seen.awaitEnd();
        PullProgress last = seen.all.get(seen.all.size() - 1);
        assertThat(last.phase()).isEqualTo(PullProgress.Phase.FAILED);
        assertThat(last.message()).contains("not found");
        assertThat(last.percent()).isLessThan(100);
    }

    @Test
    void boundsFollowedRecordedRecentAndWatchers() throws Exception {
        start(FakeCriServer.builder().pullRate(16L << 20), null);
        observer.close();
        observer =
                PullObserver.builder(fake.endpoint())
                        .maxFollowed(1)
                        .maxActive(2)
                        .maxRecent(1)
                        .retention(Duration.ofMillis(300))
                        .maxWatchers(2)
                        .build();
        Seen all = new Seen();
        observer.watch(null, all);
        CompletableFuture<String> a = ObservedPulls.pull(observer, channel, "registry.example/a:1");
        all.await("a pulling", p -> p.image().equals("registry.example/a:1"));
        CompletableFuture<String> b = ObservedPulls.pull(observer, channel, "registry.example/b:1");
        PullProgress bSeen = all.await("b pulling", p -> p.image().equals("registry.example/b:1"));
        assertThat(bSeen.percent()).isEqualTo(-1);
        assertThat(bSeen.message()).contains("1 pulls are followed already");
        ObservedPulls.pull(
                observer, channel, "registry.example/c:1"); // a third one at once: not recorded
        Seen w2 = new Seen();
        observer.watch("registry.example/a:1", w2);
        assertThatThrownBy(() -> observer.watch(null, new Seen()))
                .isInstanceOf(PullObserver.TooManyWatchersException.class)
                .hasMessageContaining("at most 2");
        a.get(60, TimeUnit.SECONDS);
        b.get(60, TimeUnit.SECONDS);
        awaitTrue(() -> observer.pulls().stream().allMatch(q -> q.phase().terminal()));
        assertThat(observer.droppedPulls()).isEqualTo(1);
        assertThat(observer.pulls()).as("one recent pull kept").hasSizeLessThanOrEqualTo(1);
        w2.awaitEnd();
        assertThat(observer.watchers()).isEqualTo(1);
        awaitTrue(() -> observer.pulls().isEmpty());
        assertThat(observer.pulls()).as("finished pulls dropped after the retention").isEmpty();
    }

    @Test
    void closingEndsWatchesAndLeavesNoThread() throws Exception {
        start(FakeCriServer.builder().pullRate(1L << 20), null);
        Seen seen = new Seen();
        observer.watch(null, seen);
        ObservedPulls.pull(observer, channel, "registry.example/slow:1");
        seen.await("pulling", p -> p.bytesDone() > 0);
        observer.close();
        seen.awaitEnd();
        assertThatThrownBy(() -> observer.watch(null, new Seen()))
                .isInstanceOf(IllegalStateException.class);
        awaitTrue(() -> threads() == 0);
        assertThat(threads()).as("observer threads left").isZero();
    }

    /** Polls {@code condition} until it holds, for at most 10 s. */
    static void awaitTrue(java.util.function.BooleanSupplier condition)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean() && System.nanoTime() < end) {
            TimeUnit.MILLISECONDS.sleep(20);
        }
    }

    private static long threads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .filter(t -> t.getName().startsWith("cri4j-pull-observer"))
                .count();
    }
}
