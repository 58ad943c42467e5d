package io.cri4j.streaming.internal;

import io.grpc.Status;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Single-use tokens for cached streaming requests, as kubelet's request cache: a token maps to the
 * CRI request that produced it, lives for a fixed TTL and is removed when consumed. The number of
 * unconsumed, unexpired tokens is bounded; inserting beyond the bound fails with
 * RESOURCE_EXHAUSTED. Tokens are 128 random bits from a CSPRNG in URL-safe base64 (22 chars).
 *
 * <p>Thread-safe. Tokens are secrets: this class never logs them.
 */
public final class RequestCache {
    /** Token length in random bytes (upstream uses 8; the cri4j requirement is at least 128 bits). */
    public static final int TOKEN_BYTES = 16;

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    private final SecureRandom random = new SecureRandom();
    private final long ttlNanos;
    private final int maxInFlight;
    private final LongSupplier nanoClock;
    // Insertion order == expiry order (constant TTL), so expired entries are always at the head.
    private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>();

    private record Entry(Object request, long expiresAtNanos) {}

    /** A cache with the given TTL and bound, on {@link System#nanoTime()}. */
    public RequestCache(Duration ttl, int maxInFlight) {
        this(ttl, maxInFlight, System::nanoTime);
    }

    /** A cache on an injectable monotonic clock (nanoseconds), for tests. */
    public RequestCache(Duration ttl, int maxInFlight, LongSupplier nanoClock) {
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("token TTL must be positive: " + ttl);
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be at least 1: " + maxInFlight);
        }
        this.ttlNanos = ttl.toNanos();
        this.maxInFlight = maxInFlight;
        this.nanoClock = nanoClock;
    }

    /** The TTL in whole seconds, for {@code Retry-After} (at least 1). */
    public long ttlSeconds() {
        return Math.max(1, Duration.ofNanos(ttlNanos).toSeconds());
    }

    /**
     * Caches {@code request} and returns its new token.
     *
     * @throws io.grpc.StatusRuntimeException RESOURCE_EXHAUSTED when the cache is full
     */
    public String insert(Object request) {
        if (request == null) {
            throw new NullPointerException("request");
        }
        synchronized (entries) {
            long now = nanoClock.getAsLong();
            gc(now);
            if (entries.size() >= maxInFlight) {
                throw Status.RESOURCE_EXHAUSTED
                        .withDescription("maximum number of in-flight requests exceeded")
                        .asRuntimeException();
            }
            String token;
            do {
                byte[] bytes = new byte[TOKEN_BYTES];
                random.nextBytes(bytes);
                token = ENCODER.encodeToString(bytes);
            } while (entries.containsKey(token));
            entries.put(token, new Entry(request, now + ttlNanos));
            return token;
        }
    }

    /**
     * Removes and returns the request for {@code token}, or {@code null} when the token is unknown,
     * already used or expired.
     */
    public Object consume(String token) {
        if (token == null || token.isEmpty()) {
            return null;
        }
        synchronized (entries) {
            long now = nanoClock.getAsLong();
            Entry e = entries.remove(token);
            gc(now);
            if (e == null || now - e.expiresAtNanos >= 0) {
                return null;
            }
            return e.request;
        }
    }

    /** Number of cached (not yet expired-and-collected) tokens. */
    public int size() {
        synchronized (entries) {
            gc(nanoClock.getAsLong());
            return entries.size();
        }
    }

    private void gc(long now) {
        Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator();
        while (it.hasNext()) {
            Entry e = it.next().getValue();
            if (now - e.expiresAtNanos >= 0) {
                it.remove();
            } else {
                break;
            }
        }
    }
}
