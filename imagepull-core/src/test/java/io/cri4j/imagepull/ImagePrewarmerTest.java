package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.imagepull.PrewarmStatus.Phase;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Pre-warming sets: add, version bump, removal, status counts and change events. */
class ImagePrewarmerTest {

    private final FakeBackend backend = new FakeBackend();
    private final VirtualScheduler time = new VirtualScheduler();
    private final ImagePuller puller =
            ImagePuller.builder(backend)
                    .scheduler(time)
                    .defaultPolicy(PullPolicy.defaults().withBackoffLimit(0))
                    .build();
    private final ImagePrewarmer prewarmer = ImagePrewarmer.create(puller);
    private final LinkedBlockingQueue<PrewarmStatus> events = new LinkedBlockingQueue<>();

    {
        prewarmer.addListener(events::add);
    }

    @AfterEach
    void close() throws InterruptedException {
        prewarmer.close();
        puller.close();
        Threads.assertNoneLeft();
    }

    private PrewarmStatus awaitEvent(String what, Predicate<PrewarmStatus> p)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        PrewarmStatus last = null;
        while (System.nanoTime() < end) {
            PrewarmStatus s = events.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (s == null) {
                break;
            }
            last = s;
            if (p.test(s)) {
                return s;
            }
        }
        throw new AssertionError("no status event with " + what + "; last " + last);
    }

    private FakeBackend.Call call(String image) throws InterruptedException {
        FakeBackend.Call c = backend.next();
        assertThat(c.image()).isEqualTo(image);
        return c;
    }

    private static Map<String, List<PrewarmTag>> set(Object... nameThenTags) {
        Map<String, List<PrewarmTag>> m = new LinkedHashMap<>();
        for (int i = 0; i < nameThenTags.length; i += 2) {
            @SuppressWarnings("unchecked")
            List<PrewarmTag> tags = (List<PrewarmTag>) nameThenTags[i + 1];
            m.put((String) nameThenTags[i], tags);
        }
        return m;
    }

    @Test
    void reconcilesAddVersionBumpAndRemove() throws Exception {
        prewarmer.apply(
                set("reg:5000/app", List.of(PrewarmTag.of("1", "v1"), PrewarmTag.of("2", "v1"))));
        PrewarmStatus s0 = prewarmer.status();
        assertThat(s0.desired()).isEqualTo(2);
        assertThat(s0.images().get("reg:5000/app"))
                .extracting(PrewarmStatus.TagStatus::tag)
                .containsExactly("1", "2");

        FakeBackend.Call c1 = backend.next();
        FakeBackend.Call c2 = backend.next();
        FakeBackend.Call tag1 = c1.image().endsWith(":1") ? c1 : c2;
        FakeBackend.Call tag2 = tag1 == c1 ? c2 : c1;
        awaitEvent("both pulling", s -> s.pulling() == 2);
        tag1.sink().layer("l1", "Downloading", 30, 100);
        awaitEvent("progress 30", s -> s.tag("reg:5000/app", "1").orElseThrow().progress() == 30);
        tag1.succeed();
        tag2.fail("manifest unknown");
        PrewarmStatus s1 =
                awaitEvent("1 succeeded, 2 failed", s -> s.succeeded() == 1 && s.failed() == 1);
        PrewarmStatus.TagStatus t1 = s1.tag("reg:5000/app", "1").orElseThrow();
        assertThat(t1.imageId()).isEqualTo(FakeBackend.info("reg:5000/app:1").id());
        assertThat(t1.completionTime()).isPresent();
        assertThat(t1.progress()).isEqualTo(100);
        assertThat(s1.tag("reg:5000/app", "2").orElseThrow().message())
                .isEqualTo("pulling reg:5000/app:2 failed after 1 attempt: manifest unknown");

        // unchanged versions: nothing is pulled again
        prewarmer.apply(
                set("reg:5000/app", List.of(PrewarmTag.of("1", "v1"), PrewarmTag.of("2", "v1"))));
        assertThat(backend.calls.poll(200, TimeUnit.MILLISECONDS)).isNull();

        // version bump of tag 2 restarts its worker; a new image starts one
        prewarmer.apply(
                set(
                        "reg:5000/app",
                        List.of(PrewarmTag.of("1", "v1"), PrewarmTag.of("2", "v2")),
                        "reg:5000/db",
                        List.of(PrewarmTag.of("sha256:" + "a".repeat(64), "v1"))));
        FakeBackend.Call n1 = backend.next();
        FakeBackend.Call n2 = backend.next();
        FakeBackend.Call bumped = n1.image().equals("reg:5000/app:2") ? n1 : n2;
        FakeBackend.Call db = bumped == n1 ? n2 : n1;
        assertThat(bumped.image()).isEqualTo("reg:5000/app:2");
        assertThat(db.image()).isEqualTo("reg:5000/db@sha256:" + "a".repeat(64));
        PrewarmStatus s2 = prewarmer.status();
        assertThat(s2.desired()).isEqualTo(3);
        assertThat(s2.tag("reg:5000/app", "2").orElseThrow().version()).isEqualTo("v2");
        assertThat(s2.tag("reg:5000/app", "2").orElseThrow().phase())
                .isIn(Phase.WAITING, Phase.PULLING);
        assertThat(s2.tag("reg:5000/app", "1").orElseThrow().phase()).isEqualTo(Phase.SUCCEEDED);

        // a version bump while pulling cancels the running pull
        prewarmer.apply(
                set(
                        "reg:5000/app",
                        List.of(PrewarmTag.of("1", "v1"), PrewarmTag.of("2", "v3")),
                        "reg:5000/db",
                        List.of(PrewarmTag.of("sha256:" + "a".repeat(64), "v1"))));
        assertThat(bumped.future().isCancelled()).isTrue();
        FakeBackend.Call v3 = call("reg:5000/app:2");

        // removal stops the worker and drops the status
        prewarmer.apply(set("reg:5000/app", List.of(PrewarmTag.of("1", "v1"))));
        assertThat(db.future().isCancelled()).isTrue();
        assertThat(v3.future().isCancelled()).isTrue();
        PrewarmStatus s3 = awaitEvent("only tag 1 left", s -> s.desired() == 1);
        assertThat(s3.images()).containsOnlyKeys("reg:5000/app");
        assertThat(s3.succeeded()).isEqualTo(1);
        // late results of stopped workers change nothing
        v3.succeed();
        assertThat(prewarmer.status()).isEqualTo(s3);
    }

    @Test
    void rejectsDuplicateTagsAndWorksAfterRestartOfAVersion() throws Exception {
        assertThatThrownBy(
                        () ->
                                prewarmer.apply(
                                        set(
                                                "x",
                                                List.of(
                                                        PrewarmTag.of("1", "a"),
                                                        PrewarmTag.of("1", "b")))))
                .hasMessage("image x lists tag 1 twice");
        backend.present.add("x:1");
        prewarmer.apply(set("x", List.of(PrewarmTag.of("1", "a"))));
        PrewarmStatus s = awaitEvent("already present", st -> st.succeeded() == 1);
        assertThat(s.tag("x", "1").orElseThrow().imageId()).isNotEmpty();
        assertThat(backend.calls).isEmpty();
    }

    @Test
    void backoffShowsAsPullingWithTheLastError() throws Exception {
        prewarmer.apply(
                Map.of(
                        "y",
                        List.of(
                                new PrewarmTag(
                                        "1",
                                        "a",
                                        java.util.Optional.of(
                                                PullPolicy.defaults().withBackoffLimit(2))))));
        backend.next().fail("connection refused");
        PrewarmStatus s =
                awaitEvent(
                        "back-off message",
                        st -> st.tag("y", "1").orElseThrow().message().contains("retrying in 1s"));
        assertThat(s.tag("y", "1").orElseThrow().phase()).isEqualTo(Phase.PULLING);
        time.awaitPending(Duration.ofSeconds(1));
        time.advance(Duration.ofSeconds(1));
        backend.next().succeed();
        awaitEvent("succeeded", st -> st.succeeded() == 1);
    }
}
