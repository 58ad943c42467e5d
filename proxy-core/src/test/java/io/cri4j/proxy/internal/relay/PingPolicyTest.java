package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The client's PING limits: grpc-go's keepalive enforcement with containerd's defaults. */
class PingPolicyTest {
    private static final long SECOND = 1_000_000_000L;
    private final PingPolicy policy = new PingPolicy();

    @Test
    void theFirstPingIsNoStrikeAndTheThirdStrikeEndsTheConnection() {
        long t = 1000;
        assertThat(policy.tooMany(t, false, false)).isFalse();
        assertThat(policy.tooMany(t += SECOND, false, false)).as("strike 1").isFalse();
        assertThat(policy.tooMany(t += SECOND, false, false)).as("strike 2").isFalse();
        assertThat(policy.tooMany(t + SECOND, false, false)).as("strike 3").isTrue();
    }

    @Test
    void aPingAfterHeadersOrDataClearsTheStrikes() {
        long t = 0;
        policy.tooMany(t, false, false);
        policy.tooMany(t += SECOND, false, false);
        policy.tooMany(t += SECOND, false, false);
        assertThat(policy.tooMany(t += SECOND, true, false)).isFalse();
        assertThat(policy.tooMany(t += SECOND, false, false)).as("strike 1").isFalse();
        assertThat(policy.tooMany(t += SECOND, false, false)).as("strike 2").isFalse();
        assertThat(policy.tooMany(t + SECOND, false, false)).as("strike 3").isTrue();
    }

    @Test
    void pingsFurtherApartThanTheMinimumAreNoStrike() {
        long t = 0;
        for (int i = 0; i < 10; i++) {
            assertThat(policy.tooMany(t += PingPolicy.PING_MIN_INTERVAL_NANOS, false, false))
                    .isFalse();
        }
    }

    @Test
    void withNoStreamOpenTheMinimumIsTheIdleOne() {
        long t = 0;
        policy.tooMany(t, false, true);
        for (int i = 0; i < PingPolicy.MAX_PING_STRIKES; i++) {
            assertThat(policy.tooMany(t += PingPolicy.PING_MIN_INTERVAL_NANOS, false, true))
                    .isFalse();
        }
        assertThat(policy.tooMany(t += PingPolicy.PING_MIN_INTERVAL_NANOS, false, true)).isTrue();
        PingPolicy idle = new PingPolicy();
        long u = 0;
        for (int i = 0; i < 10; i++) {
            assertThat(idle.tooMany(u += PingPolicy.PING_IDLE_INTERVAL_NANOS, false, true))
                    .isFalse();
        }
    }
}
