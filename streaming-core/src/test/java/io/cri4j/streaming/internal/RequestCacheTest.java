package io.cri4j.streaming.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RequestCacheTest {
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final RequestCache cache = new RequestCache(Duration.ofMinutes(1), 3, now::get);

    @Test
    void tokensAreSingleUseUrlSafeAndLongEnough() {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            RequestCache c = new RequestCache(Duration.ofMinutes(1), 1);
            String t = c.insert("r" + i);
            assertThat(t)
                    .hasSize(22)
                    .matches("[A-Za-z0-9_-]+"); // 128 bits, base64url without padding
            assertThat(seen.add(t)).isTrue();
            assertThat(c.consume(t)).isEqualTo("r" + i);
            assertThat(c.consume(t)).isNull();
        }
    }

    @Test
    void consumeOutOfOrderAndUnknown() {
        String a = cache.insert("a");
        String b = cache.insert("b");
        assertThat(cache.consume(b)).isEqualTo("b");
        assertThat(cache.consume(a)).isEqualTo("a");
        assertThat(cache.consume("fooBAR")).isNull();
        assertThat(cache.consume("")).isNull();
        assertThat(cache.size()).isZero();
    }

    @Test
    void expiredTokensAreGone() {
        String a = cache.insert("a");
        now.addAndGet(Duration.ofSeconds(59).toNanos());
        String b = cache.insert("b");
        now.addAndGet(Duration.ofSeconds(2).toNanos());
        assertThat(cache.consume(a)).isNull();
        assertThat(cache.consume(b)).isEqualTo("b");
    }

    @Test
    void fullCacheRefusesWithResourceExhaustedUntilSomethingIsConsumedOrExpires() {
        String first = cache.insert(1);
        cache.insert(2);
        cache.insert(3);
        assertThatThrownBy(() -> cache.insert(4))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                            assertThat(e.getStatus().getDescription())
                                    .isEqualTo("maximum number of in-flight requests exceeded");
                        });
        assertThat(cache.consume(first)).isEqualTo(1);
        cache.insert(5);
        now.addAndGet(Duration.ofMinutes(2).toNanos());
        assertThat(cache.size()).isZero();
        cache.insert(6);
        assertThat(cache.ttlSeconds()).isEqualTo(60);
    }

    @Test
    void rejectsBadConfiguration() {
        assertThatThrownBy(() -> new RequestCache(Duration.ZERO, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RequestCache(Duration.ofSeconds(1), 0))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
