package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The puller's job semantics against a hand-driven backend and virtual time. */
class ImagePullerTest {

    private final FakeBackend backend = new FakeBackend();
    private final VirtualScheduler time = new VirtualScheduler();
    private ImagePuller puller = ImagePuller.builder(backend).scheduler(time).build();

    @AfterEach
    void close() throws InterruptedException {
        puller.close();
        assertThat(backend.closed).isTrue();
        Threads.assertNoneLeft();
    }

    private static <T> T await(java.util.concurrent.CompletableFuture<T> f) throws Exception {
        return f.get(5, TimeUnit.SECONDS);
    }

    private static Throwable failure(PullJob job) {
        try {
            job.result().get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
        throw new AssertionError("pull of " + job.image() + " succeeded");
    }

    @Test
    void retriesWithDoublingBackoffThenFailsNamingImageAndCause() throws Exception {
        PullJob job = puller.pull("registry.test:5000/app:1");
        List<Duration> waits = new ArrayList<>();
        for (int attempt = 1; attempt <= 4; attempt++) {
            FakeBackend.Call call = backend.next();
            assertThat(call.credential()).isEmpty();
            call.fail("connection refused (attempt " + attempt + ")");
            if (attempt < 4) {
                Duration expected = Duration.ofSeconds(1L << (attempt - 1));
                time.awaitPending(expected);
                assertThat(job.progress().phase()).isEqualTo(PullProgress.Phase.BACKING_OFF);
                assertThat(job.progress().message())
                        .contains("connection refused (attempt " + attempt + ")");
                waits.add(expected);
                // nothing happens a millisecond before the back-off ends
                time.advance(expected.minusMillis(1));
                assertThat(backend.calls).isEmpty();
                time.advance(Duration.ofMillis(1));
            }
        }
        Throwable e = failure(job);
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessage(
                        "pulling registry.test:5000/app:1 failed after 4 attempts: connection refused (attempt 4)");
        assertThat(((ImagePullException) e).attempts()).isEqualTo(4);
        assertThat(waits)
                .containsExactly(
                        Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4));
        assertThat(((io.cri4j.imagepull.internal.PullJobImpl) job).backoffs()).isEqualTo(waits);
        assertThat(job.progress().phase()).isEqualTo(PullProgress.Phase.FAILED);
        assertThat(backend.calls).isEmpty();
    }

    @Test
    void backoffDoublesUpToThirtySeconds() {
        PullPolicy p = PullPolicy.defaults();
        List<Long> secs = new ArrayList<>();
        for (int i = 1; i <= 8; i++) {
            secs.add(p.backoffAfter(i).toSeconds());
        }
        assertThat(secs).containsExactly(1L, 2L, 4L, 8L, 16L, 30L, 30L, 30L);
        assertThat(p.attemptTimeout()).isEqualTo(Duration.ofMinutes(10));
        assertThat(p.backoffLimit()).isEqualTo(3);
        assertThatThrownBy(() -> p.withBackoffLimit(-1))
                .hasMessageContaining("back-off limit must be >= 0");
    }

    @Test
    void skipsImagesAlreadyPresentUnlessForced() throws Exception {
        backend.present.add("busybox:1.36");
        PullResult r = await(puller.pull("busybox:1.36").result());
        assertThat(r.alreadyPresent()).isTrue();
        assertThat(r.attempts()).isZero();
        assertThat(r.imageId()).isEqualTo(FakeBackend.info("busybox:1.36").id());
        assertThat(backend.calls).isEmpty();

        PullJob forced = puller.pull(PullRequest.of("busybox:1.36").withForce(true));
        backend.next().succeed();
        PullResult f = await(forced.result());
        assertThat(f.alreadyPresent()).isFalse();
        assertThat(f.attempts()).isEqualTo(1);
        assertThat(f.digest()).isEqualTo("sha256:feed");
    }

    @Test
    void attemptTimeoutAbortsTheCallAndRetries() throws Exception {
        PullJob job =
                puller.pull(
                        PullRequest.of("app:1")
                                .withPolicy(
                                        PullPolicy.defaults()
                                                .withAttemptTimeout(Duration.ofMinutes(2))
                                                .withBackoffLimit(1)));
        FakeBackend.Call first = backend.next();
        time.awaitPending(Duration.ofMinutes(2));
        time.advance(Duration.ofMinutes(2));
        assertThat(first.future().isCancelled()).as("timed-out attempt aborted").isTrue();
        assertThat(job.progress().message())
                .contains("attempt 1 timed out after 2m")
                .contains("retrying in 1s");
        time.advance(Duration.ofSeconds(1));
        FakeBackend.Call second = backend.next();
        second.succeed();
        assertThat(await(job.result()).attempts()).isEqualTo(2);
    }

    @Test
    void activeDeadlineEndsThePullAcrossAttempts() throws Exception {
        PullJob job =
                puller.pull(
                        PullRequest.of("app:2")
                                .withPolicy(
                                        PullPolicy.defaults()
                                                .withActiveDeadline(Duration.ofSeconds(5))
                                                .withBackoffLimit(10)));
        backend.next().fail("registry unavailable");
        time.awaitPending(Duration.ofSeconds(1));
        time.advance(Duration.ofSeconds(1));
        backend.next().fail("registry unavailable");
        time.awaitPending(Duration.ofSeconds(2));
        time.advance(Duration.ofSeconds(2));
        FakeBackend.Call third = backend.next();
        time.advance(Duration.ofSeconds(2)); // t = 5 s
        Throwable e = failure(job);
        assertThat(e)
                .isInstanceOf(ImagePullException.class)
                .hasMessageStartingWith(
                        "pulling app:2 exceeded its active deadline of 5s after 3 attempts");
        assertThat(third.future().isCancelled())
                .as("running attempt aborted at the deadline")
                .isTrue();
        assertThat(time.pendingDelays()).isEmpty();
    }

    @Test
    void cancelAbortsTheRunningAttemptAndStopsRetries() throws Exception {
        PullJob job = puller.pull("app:3");
        FakeBackend.Call call = backend.next();
        CountDownLatch completed = new CountDownLatch(1);
        List<PullProgress> seen = new CopyOnWriteArrayList<>();
        job.progressPublisher()
                .subscribe(
                        new Flow.Subscriber<>() {
                            @Override
                            public void onSubscribe(Flow.Subscription s) {
                                s.request(Long.MAX_VALUE);
                            }

                            @Override
                            public void onNext(PullProgress item) {
                                seen.add(item);
                            }

                            @Override
                            public void onError(Throwable t) {}

                            @Override
                            public void onComplete() {
                                completed.countDown();
                            }
                        });
        long start = System.nanoTime();
        assertThat(job.cancel()).isTrue();
        assertThat(job.cancel()).isFalse();
        assertThat(failure(job))
                .isInstanceOf(CancellationException.class)
                .hasMessageContaining("app:3");
        assertThat(call.future().isCancelled()).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
        assertThat(completed.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(seen.get(seen.size() - 1).phase()).isEqualTo(PullProgress.Phase.CANCELLED);
        assertThat(time.pendingDelays()).as("no timers left").isEmpty();
        assertThat(backend.calls).isEmpty();
    }

    @Test
    void cancellingTheResultFutureCancelsThePull() throws Exception {
        PullJob job = puller.pull("app:4");
        FakeBackend.Call call = backend.next();
        job.result().cancel(true);
        assertThat(call.future().isCancelled()).isTrue();
        assertThat(job.progress().phase()).isEqualTo(PullProgress.Phase.CANCELLED);
    }

    @Test
    void progressIsMonotonicPerLayerAndReaches100OnlyOnSuccess() throws Exception {
        PullJob job = puller.pull("big:1");
        ProgressWatch watch = new ProgressWatch(job);
        FakeBackend.Call call = backend.next();
        call.sink().layer("aaa", "Downloading", 50, 100); // 50 %
        call.sink().layer("bbb", "Downloading", 0, 300); // total grows: raw 12 %, stays 50
        call.sink().layer("aaa", "Downloading", 100, 100);
        call.sink().layer("bbb", "Downloading", 300, 300); // all bytes: capped at 99 until success
        assertThat(job.progress().percent()).isEqualTo(99);
        assertThat(job.progress().bytesDone()).isEqualTo(400);
        assertThat(job.progress().bytesTotal()).isEqualTo(400);
        assertThat(job.progress().layers())
                .extracting(LayerProgress::id)
                .containsExactly("aaa", "bbb");
        call.succeed();
        await(job.result());
        PullProgress last = watch.await("success", p -> p.phase().terminal());
        assertThat(last.phase()).isEqualTo(PullProgress.Phase.SUCCEEDED);
        assertThat(last.percent()).isEqualTo(100);
        watch.assertMonotonic();
        assertThat(watch.all).extracting(PullProgress::percent).contains(50, 99, 100);
    }

    @Test
    void unknownProgressIsReportedAsUnknownNotZero() throws Exception {
        PullJob job = puller.pull("opaque:1");
        FakeBackend.Call call = backend.next();
        call.sink().unknown("runtime reports no byte progress");
        assertThat(job.progress().percent()).isEqualTo(-1);
        assertThat(job.progress().percentKnown()).isFalse();
        assertThat(job.progress().message()).isEqualTo("runtime reports no byte progress");
        call.succeed();
        await(job.result());
        assertThat(job.progress().percent()).isEqualTo(100);
    }

    @Test
    void workerPoolBoundsConcurrentAttempts() throws Exception {
        puller.close();
        puller = ImagePuller.builder(backend).scheduler(time).workers(2).build();
        List<PullJob> jobs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            jobs.add(puller.pull("img:" + i));
        }
        FakeBackend.Call a = backend.next();
        FakeBackend.Call b = backend.next();
        assertThat(backend.calls.poll(200, TimeUnit.MILLISECONDS))
                .as("third pull waits for a worker")
                .isNull();
        assertThat(jobs.stream().filter(j -> j.progress().phase() == PullProgress.Phase.QUEUED))
                .hasSize(3);
        a.succeed();
        FakeBackend.Call c = backend.next();
        b.fail("boom"); // a failed attempt frees its worker during back-off
        FakeBackend.Call d = backend.next();
        assertThat(List.of(a.image(), b.image(), c.image(), d.image())).doesNotHaveDuplicates();
        c.succeed();
        d.succeed();
        backend.next().succeed();
        time.awaitPending(Duration.ofSeconds(1));
        time.advance(Duration.ofSeconds(1));
        backend.next().succeed();
        for (PullJob j : jobs) {
            await(j.result());
        }
        assertThat(puller.activeJobs()).isEmpty();
    }

    @Test
    void closeCancelsUnfinishedJobs() throws Exception {
        PullJob job = puller.pull("slow:1");
        FakeBackend.Call call = backend.next();
        puller.close();
        assertThat(failure(job)).isInstanceOf(CancellationException.class);
        assertThat(call.future().isCancelled()).isTrue();
        assertThatThrownBy(() -> puller.pull("late:1"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void rejectsBadReferences() {
        assertThatThrownBy(() -> puller.pull("has space:1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'has space:1'");
    }
}
