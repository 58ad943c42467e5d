package io.cri4j.cri.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LogLimiterTest {

    @Test
    void letsABurstThroughPerWindowAndTheNextLineCountsWhatWasLeftOut() {
        LogLimiter l = new LogLimiter(3, Duration.ofSeconds(10));
        long s = 1_000_000_000L;
        List<String> admitted = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            String a = l.admit(s + i * 1_000_000L); // 1000 lines within one second
            if (a != null) {
                admitted.add(a);
            }
        }
        assertThat(admitted).containsExactly("", "", "");
        assertThat(l.admit(s + 10 * s)).isEqualTo(" (997 more like it not logged)");
        assertThat(l.admit(s + 10 * s + 1)).isEmpty();
    }
}
