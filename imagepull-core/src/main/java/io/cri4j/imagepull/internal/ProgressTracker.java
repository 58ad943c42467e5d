package io.cri4j.imagepull.internal;

import io.cri4j.imagepull.LayerProgress;
import io.cri4j.imagepull.PullProgress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns what backends observe into snapshots whose percent never goes backwards.
 *
 * <p>Bytes: per layer, the download bytes (a layer's byte count never decreases: Docker's
 * "Extracting" counters, which restart from 0, are not download bytes and are ignored by the
 * backend; a restarted ingest keeps the higher count). Percent: bytes done over bytes known, capped
 * at 99 until the pull succeeds, and never below a previous value (new layers discovered later
 * raise the total; the bar waits instead of jumping back). Rate: bytes over the last
 * {@link #RATE_WINDOW}. Not thread-safe; the job synchronises.
 */
public final class ProgressTracker {

    /** Window of the rate estimate. */
    public static final Duration RATE_WINDOW = Duration.ofSeconds(3);

    /** Shortest span a rate is computed over, so two close samples do not make a spike. */
    public static final Duration MIN_RATE_SPAN = Duration.ofMillis(250);

    private record Layer(String status, long done, long total) {}

    private record Sample(Instant at, long bytes) {}

    private final Map<String, Layer> layers = new LinkedHashMap<>();
    private final Deque<Sample> samples = new ArrayDeque<>();
    private int maxPercent = -1;

    /** Bytes of layers first reported already complete (present before): not part of the rate. */
    private long presentBytes;

    private boolean unknown;

    /** Records a layer's state. @return true when it changed anything */
    public boolean layer(String id, String status, long done, long total, Instant now) {
        Layer old = layers.get(id);
        long t = total >= 0 ? total : old == null ? -1 : old.total;
        long d = Math.max(done, old == null ? 0 : old.done);
        if (t >= 0 && d > t) {
            d = t;
        }
        Layer next =
                new Layer(
                        status == null || status.isEmpty() ? old == null ? "" : old.status : status,
                        d,
                        t);
        if (next.equals(old)) {
            return false;
        }
        if (old == null && t >= 0 && d >= t) {
            presentBytes += d;
        }
        layers.put(id, next);
        sample(now);
        return true;
    }

    /** Replaces the layers with the image's exact, complete layer set. */
    public void resolved(java.util.Map<String, Long> sizes, Instant now) {
        layers.clear();
        sizes.forEach((id, size) -> layers.put(id, new Layer("Complete", size, size)));
        samples.clear(); // the final accounting is not a download rate
    }

    /** The backend cannot observe bytes: the percent is -1 until the pull succeeds (or bytes are seen). */
    public void unknown() {
        unknown = true;
    }

    boolean hasLayers() {
        return !layers.isEmpty();
    }

    private void sample(Instant now) {
        samples.addLast(new Sample(now, bytesDone() - presentBytes));
        while (samples.size() > 2 && samples.peekFirst().at.isBefore(now.minus(RATE_WINDOW))) {
            samples.pollFirst();
        }
    }

    /** Bytes downloaded so far, over every layer seen. */
    public long bytesDone() {
        long sum = 0;
        for (Layer l : layers.values()) {
            sum += l.done;
        }
        return sum;
    }

    long bytesTotal() {
        long sum = 0;
        for (Layer l : layers.values()) {
            sum += Math.max(0, l.total);
        }
        return sum;
    }

    double rate(Instant now) {
        if (samples.size() < 2) {
            return 0;
        }
        Sample first = samples.peekFirst();
        Sample last = samples.peekLast();
        long nanos = Duration.between(first.at, last.at).toNanos();
        if (nanos < MIN_RATE_SPAN.toNanos() || last.at.isBefore(now.minus(RATE_WINDOW))) {
            return 0;
        }
        return (last.bytes - first.bytes) * 1e9 / nanos;
    }

    /** @return the current percent, monotonic; -1 when unknown */
    int percent(boolean succeeded) {
        if (succeeded) {
            maxPercent = 100;
            return 100;
        }
        long total = bytesTotal();
        if (total <= 0) {
            if (maxPercent >= 0) {
                return maxPercent;
            }
            return unknown ? -1 : 0;
        }
        int raw = (int) Math.min(99, bytesDone() * 100 / total);
        maxPercent = Math.max(maxPercent, raw);
        return maxPercent;
    }

    /** Builds a snapshot. */
    public PullProgress snapshot(
            String image, PullProgress.Phase phase, int attempt, String message, Instant now) {
        List<LayerProgress> out = new ArrayList<>(layers.size());
        layers.forEach((id, l) -> out.add(new LayerProgress(id, l.status, l.done, l.total)));
        int pct = percent(phase == PullProgress.Phase.SUCCEEDED);
        return new PullProgress(
                image,
                phase,
                attempt,
                pct,
                bytesDone(),
                bytesTotal(),
                phase == PullProgress.Phase.PULLING ? rate(now) : 0,
                out,
                message,
                now);
    }
}
