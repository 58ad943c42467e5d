package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class PullPolicyTest {

    @Test
    void timesAreBoundedSoThatNoSchedulerOverflows() {
        PullPolicy p = PullPolicy.defaults();
        assertThatThrownBy(() -> p.withAttemptTimeout(Duration.ofHours(1_000_000_000)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 24h");
        assertThatThrownBy(() -> p.withActiveDeadline(Duration.ofSeconds(Long.MAX_VALUE)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 24h");
        assertThatThrownBy(() -> p.withBackoff(Duration.ofSeconds(1), Duration.ofDays(2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("24h");
        assertThat(p.withAttemptTimeout(PullPolicy.MAX_DURATION).attemptTimeout())
                .isEqualTo(Duration.ofHours(24));
        assertThat(p.withActiveDeadline(PullPolicy.MAX_DURATION).activeDeadline())
                .contains(Duration.ofHours(24));
    }
}
