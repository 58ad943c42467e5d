package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an {@link ImagePuller} and a {@link PullObserver} given a registry record, against the fake
 * runtime: pulls by outcome with their duration and bytes, and the pulls running now.
 */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class PullMetricsIT {
    @TempDir Path dir;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    private double count(String name, String outcome) {
        Counter c = registry.find(name).tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void pullsAreCountedByOutcomeWithTheirBytes() throws Exception {
        try (FakeCriServer fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                                .pullRate(256L << 20)
                                .build()
                                .start();
                ImagePuller puller =
                        ImagePuller.builder(CriImagePullBackend.builder(fake.endpoint()).build())
                                .meterRegistry(registry)
                                .build()) {
            PullPolicy once = PullPolicy.defaults().withBackoffLimit(0);
            puller.pull(PullRequest.of("registry.example/a:1").withPolicy(once))
                    .result()
                    .get(60, TimeUnit.SECONDS);
            puller.pull(PullRequest.of("registry.example/b:1").withPolicy(once))
                    .result()
                    .get(60, TimeUnit.SECONDS);
            fake.faults().on("PullImage").failNext(1, Status.NOT_FOUND);
            PullJob failing = puller.pull(PullRequest.of("registry.example/c:1").withPolicy(once));
            try {
                failing.result().get(60, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException expected) {
                // counted below
            }
            awaitCount("cri4j.imagepull.pulls", "failed", 1);
            assertThat(count("cri4j.imagepull.pulls", "succeeded")).isEqualTo(2);
            assertThat(count("cri4j.imagepull.pulls", "failed")).isEqualTo(1);
            assertThat(
                            registry.find("cri4j.imagepull.pull.duration")
                                    .tag("outcome", "succeeded")
                                    .timer()
                                    .count())
                    .isEqualTo(2);
            assertThat(registry.find("cri4j.imagepull.pulled.bytes").counter().count())
                    .as("the bytes of two images of 2 MiB or more")
                    .isGreaterThanOrEqualTo(4 << 20);
            long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (registry.find("cri4j.imagepull.pulls.active").gauge().value() != 0
                    && System.nanoTime() < end) {
                Thread.sleep(10); // the job leaves the active set just after its result
            }
            assertThat(registry.find("cri4j.imagepull.pulls.active").gauge().value()).isZero();
        }
    }

    @Test
    void observedPullsAreCountedByOutcome() throws Exception {
        try (FakeCriServer fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                                .build()
                                .start();
                PullObserver observer =
                        PullObserver.builder(fake.endpoint()).meterRegistry(registry).build()) {
            PullObserver.ObservedPull ok = observer.pullStarted("registry.example/ok:1");
            PullObserver.ObservedPull bad = observer.pullStarted("registry.example/bad:1");
            awaitGauge(2);
            ok.succeeded("sha256:" + "0".repeat(64));
            bad.failed("not found");
            awaitCount("cri4j.imagepull.observed.pulls", "failed", 1);
            awaitCount("cri4j.imagepull.observed.pulls", "succeeded", 1);
            assertThat(count("cri4j.imagepull.observed.pulls", "succeeded")).isEqualTo(1);
            assertThat(count("cri4j.imagepull.observed.pulls", "failed")).isEqualTo(1);
            assertThat(registry.find("cri4j.imagepull.observed.pulls.active").gauge().value())
                    .isZero();
        }
    }

    private void awaitCount(String name, String outcome, double want) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (count(name, outcome) != want && System.nanoTime() < end) {
            Thread.sleep(10);
        }
    }

    private void awaitGauge(double want) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (registry.find("cri4j.imagepull.observed.pulls.active").gauge().value() != want
                && System.nanoTime() < end) {
            Thread.sleep(10);
        }
        assertThat(registry.find("cri4j.imagepull.observed.pulls.active").gauge().value())
                .isEqualTo(want);
    }
}
