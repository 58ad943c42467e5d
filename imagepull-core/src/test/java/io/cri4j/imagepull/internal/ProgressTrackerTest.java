package io.cri4j.imagepull.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.imagepull.PullProgress;
import java.time.Instant;
import java.util.LinkedHashMap;
import org.junit.jupiter.api.Test;

/** Percent, bytes and rate bookkeeping with explicit times. */
class ProgressTrackerTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    @Test
    void rateIsDownloadBytesOverTheRecentWindowExcludingLayersAlreadyPresent() {
        ProgressTracker t = new ProgressTracker();
        t.layer("base", "Complete", 5_000_000, 5_000_000, T0); // present before the pull
        t.layer("big", "Downloading", 0, 10_000_000, T0);
        assertThat(t.rate(T0)).isZero();
        t.layer("big", "Downloading", 100_000, 10_000_000, T0.plusMillis(100));
        assertThat(t.rate(T0.plusMillis(100))).as("under 250 ms of samples: no spike").isZero();
        t.layer("big", "Downloading", 2_000_000, 10_000_000, T0.plusMillis(1000));
        assertThat(t.rate(T0.plusMillis(1000))).isEqualTo(2_000_000.0);
        t.layer("big", "Downloading", 8_000_000, 10_000_000, T0.plusMillis(4000));
        // window keeps samples from t=1 s on: 6 MB over 3 s
        assertThat(t.rate(T0.plusMillis(4000))).isEqualTo(2_000_000.0);
        assertThat(t.rate(T0.plusMillis(8000))).as("stale samples: no rate").isZero();
        assertThat(t.bytesDone()).isEqualTo(13_000_000);
    }

    @Test
    void percentIsMonotonicCappedAndUnknownOnlyWhenSaid() {
        ProgressTracker t = new ProgressTracker();
        assertThat(t.percent(false)).isZero();
        t.layer("a", "Downloading", 60, 100, T0);
        assertThat(t.percent(false)).isEqualTo(60);
        t.layer("b", "Downloading", 0, 900, T0);
        assertThat(t.percent(false)).as("a new layer does not pull the bar back").isEqualTo(60);
        t.layer("a", "Downloading", 10, 100, T0);
        assertThat(t.snapshot("x", PullProgress.Phase.PULLING, 1, "", T0).layers().get(0).done())
                .as("a layer's bytes never decrease")
                .isEqualTo(60);
        t.layer("b", "Downloading", 900, 900, T0);
        t.layer("a", "Downloading", 100, 100, T0);
        assertThat(t.percent(false)).isEqualTo(99);
        assertThat(t.percent(true)).isEqualTo(100);

        ProgressTracker u = new ProgressTracker();
        u.unknown();
        assertThat(u.percent(false)).isEqualTo(-1);
        LinkedHashMap<String, Long> exact = new LinkedHashMap<>();
        exact.put("a", 100L);
        u.resolved(exact, T0);
        assertThat(u.snapshot("x", PullProgress.Phase.SUCCEEDED, 1, "", T0).bytesDone())
                .isEqualTo(100);
    }
}
