package io.cri4j.testing.fake.internal;

import com.google.protobuf.Timestamp;
import io.cri4j.cri.internal.containerd.Info;
import io.cri4j.cri.internal.containerd.Status;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The fake's content store, in containerd's model: committed blobs (digest, size, labels, times) and ingests
 * in progress (ref {@code layer-<digest>}, offset, total, expected digest). A pull stores the image's manifest
 * and config at once, labelled as containerd labels them ({@code containerd.io/distribution.source.<host>} with
 * the repository, {@code containerd.io/gc.ref.content.config} and {@code containerd.io/gc.ref.content.l.<i>}
 * on the manifest), then downloads its layers: at most {@value #CONCURRENT_DOWNLOADS} at once (containerd's
 * CRI default), sharing {@code bytesPerSecond} between them, each an ingest until it is committed. Two pulls
 * needing one layer share its download, as containerd's ingest lock makes them. A rate of 0 commits
 * everything at once. Layers have sizes but no bytes; manifests and configs have their JSON.
 */
public final class FakeContent implements AutoCloseable {

    /** The only namespace the fake's content lives in: CRI's. */
    public static final String NAMESPACE = "k8s.io";

    /** Layer downloads running at once (containerd's CRI {@code max_concurrent_downloads} default). */
    public static final int CONCURRENT_DOWNLOADS = 3;

    static final String SOURCE_LABEL = "containerd.io/distribution.source.";
    static final String OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
    static final String OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
    static final String OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
    private static final long TICK_MILLIS = 50;

    /** A committed blob. */
    record Blob(
            String digest, long size, Instant createdAt, Map<String, String> labels, byte[] data) {
        Info info() {
            return Info.newBuilder()
                    .setDigest(digest)
                    .setSize(size)
                    .setCreatedAt(ts(createdAt))
                    .setUpdatedAt(ts(createdAt))
                    .putAllLabels(labels)
                    .build();
        }
    }

    /** A layer being downloaded (an ingest once it started). */
    private static final class Download {
        final String digest;
        final long size;
        final Map<String, String> labels;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        long offset;
        double carry;
        Instant started;
        Instant updated;
        int pulls;

        Download(String digest, long size, Map<String, String> labels) {
            this.digest = digest;
            this.size = size;
            this.labels = labels;
        }
    }

    private final Clock clock;
    private final long bytesPerSecond;
    private final ScheduledThreadPoolExecutor ticker;
    private final Map<String, Blob> blobs = new LinkedHashMap<>();
    private final Map<String, Download> downloads = new LinkedHashMap<>();
    private ScheduledFuture<?> ticking;
    private long lastTick;
    private boolean closed;

    /**
     * @param clock for creation and update times
     * @param bytesPerSecond the download rate shared by all running layer downloads; 0 commits at once
     */
    public FakeContent(Clock clock, long bytesPerSecond) {
        if (bytesPerSecond < 0) {
            throw new IllegalArgumentException(
                    "pull rate must not be negative, was " + bytesPerSecond);
        }
        this.clock = clock;
        this.bytesPerSecond = bytesPerSecond;
        AtomicInteger n = new AtomicInteger();
        this.ticker =
                new ScheduledThreadPoolExecutor(
                        1,
                        r -> {
                            Thread t = new Thread(r, "cri4j-fake-download-" + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        ticker.setKeepAliveTime(2, TimeUnit.SECONDS);
        ticker.allowCoreThreadTimeOut(true);
        ticker.setRemoveOnCancelPolicy(true);
    }

    /** The layers (digest to size) the fake gives an image: one to three, summing to its size. */
    static LinkedHashMap<String, Long> layersOf(FakeState.ImagePlan plan) {
        long size = plan.size();
        int n = 1 + Math.floorMod(plan.manifestDigest().hashCode(), 3);
        long[] sizes =
                switch (n) {
                    case 1 -> new long[] {size};
                    case 2 -> new long[] {size * 3 / 5, size - size * 3 / 5};
                    default ->
                            new long[] {size / 2, size * 3 / 10, size - size / 2 - size * 3 / 10};
                };
        LinkedHashMap<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            out.put(
                    "sha256:" + FakeState.sha256("layer\n" + plan.manifestDigest() + "\n" + i),
                    sizes[i]);
        }
        return out;
    }

    private static byte[] manifestJson(
            FakeState.ImagePlan plan, byte[] config, Map<String, Long> layers) {
        StringBuilder sb =
                new StringBuilder(
                        "{\"schemaVersion\":2,\"mediaType\":\""
                                + OCI_MANIFEST
                                + "\","
                                + "\"config\":{\"mediaType\":\""
                                + OCI_CONFIG
                                + "\",\"digest\":\""
                                + plan.configDigest()
                                + "\",\"size\":"
                                + config.length
                                + "},\"layers\":[");
        String sep = "";
        for (Map.Entry<String, Long> l : layers.entrySet()) {
            sb.append(sep)
                    .append("{\"mediaType\":\"" + OCI_LAYER + "\",\"digest\":\"")
                    .append(l.getKey())
                    .append("\",\"size\":")
                    .append(l.getValue())
                    .append('}');
            sep = ",";
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] configJson(Map<String, Long> layers) {
        StringBuilder sb =
                new StringBuilder(
                        "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{},"
                                + "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[");
        String sep = "";
        for (String digest : layers.keySet()) {
            sb.append(sep)
                    .append("\"sha256:")
                    .append(FakeState.sha256("diff\n" + digest))
                    .append('"');
            sep = ",";
        }
        return sb.append("]}}").toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Stores what pulling {@code plan} stores: its manifest and config at once, its layers as they download.
     *
     * @return completes when every layer is committed; cancelling it abandons the downloads no other pull needs
     */
    public CompletableFuture<Void> pull(FakeState.ImagePlan plan) {
        String repository = plan.name().repository();
        int slash = repository.indexOf('/');
        String host = repository.substring(0, slash);
        int colon = host.lastIndexOf(':');
        String sourceKey = SOURCE_LABEL + (colon > 0 ? host.substring(0, colon) : host);
        Map<String, String> source = Map.of(sourceKey, repository.substring(slash + 1));
        LinkedHashMap<String, Long> layers = layersOf(plan);
        byte[] config = configJson(layers);
        byte[] manifest = manifestJson(plan, config, layers);
        List<Download> mine = new ArrayList<>();
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        List<Download> finished;
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(
                        io.grpc.Status.UNAVAILABLE
                                .withDescription("the fake runtime is shutting down")
                                .asRuntimeException());
            }
            Instant now = clock.instant();
            Map<String, String> manifestLabels = new LinkedHashMap<>(source);
            manifestLabels.put("containerd.io/gc.ref.content.config", plan.configDigest());
            int i = 0;
            for (String digest : layers.keySet()) {
                manifestLabels.put("containerd.io/gc.ref.content.l." + i++, digest);
            }
            blobs.putIfAbsent(
                    plan.configDigest(),
                    new Blob(plan.configDigest(), config.length, now, source, config));
            String manifestDigest = plan.manifestDigest();
            blobs.putIfAbsent(
                    manifestDigest,
                    new Blob(
                            manifestDigest,
                            manifest.length,
                            now,
                            Map.copyOf(manifestLabels),
                            manifest));
            for (Map.Entry<String, Long> l : layers.entrySet()) {
                if (blobs.containsKey(l.getKey())) {
                    continue;
                }
                Download d =
                        downloads.computeIfAbsent(
                                l.getKey(), k -> new Download(k, l.getValue(), source));
                d.pulls++;
                mine.add(d);
                waits.add(d.done);
            }
            if (bytesPerSecond == 0) {
                finished = new ArrayList<>(downloads.values());
                finished.forEach(this::commit);
                downloads.clear();
            } else {
                finished = List.of();
                startDownloads(now);
                if (ticking == null && !downloads.isEmpty()) {
                    lastTick = System.nanoTime();
                    ticking =
                            ticker.scheduleWithFixedDelay(
                                    this::tick, TICK_MILLIS, TICK_MILLIS, TimeUnit.MILLISECONDS);
                }
            }
        }
        finished.forEach(d -> d.done.complete(null));
        CompletableFuture<Void> out = new CompletableFuture<>();
        CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new))
                .whenComplete(
                        (v, e) -> {
                            if (e != null) {
                                out.completeExceptionally(
                                        e instanceof java.util.concurrent.CompletionException
                                                        && e.getCause() != null
                                                ? e.getCause()
                                                : e);
                            } else {
                                out.complete(null);
                            }
                        });
        out.whenComplete(
                (v, e) -> {
                    if (out.isCancelled()) {
                        abandon(mine);
                    }
                });
        return out;
    }

    private void abandon(List<Download> mine) {
        List<Download> dropped = new ArrayList<>();
        synchronized (this) {
            for (Download d : mine) {
                if (--d.pulls == 0 && downloads.remove(d.digest, d)) {
                    dropped.add(d);
                }
            }
            startDownloads(clock.instant());
        }
        dropped.forEach(d -> d.done.cancel(false));
    }

    /** Starts queued downloads while fewer than {@value #CONCURRENT_DOWNLOADS} run. */
    private void startDownloads(Instant now) {
        int running = 0;
        for (Download d : downloads.values()) {
            if (running == CONCURRENT_DOWNLOADS) {
                return;
            }
            if (d.started == null) {
                d.started = now;
                d.updated = now;
            }
            running++;
        }
    }

    private void tick() {
        List<Download> finished = new ArrayList<>();
        synchronized (this) {
            long now = System.nanoTime();
            double budget = bytesPerSecond * ((now - lastTick) / 1e9);
            lastTick = now;
            List<Download> running =
                    downloads.values().stream().filter(d -> d.started != null).toList();
            Instant at = clock.instant();
            for (Download d : running) {
                double share = budget / running.size() + d.carry;
                long step = (long) share;
                d.carry = share - step;
                d.offset = Math.min(d.size, d.offset + step);
                d.updated = at;
                if (d.offset >= d.size) {
                    downloads.remove(d.digest);
                    commit(d);
                    finished.add(d);
                }
            }
            startDownloads(at);
            if (downloads.isEmpty() && ticking != null) {
                ticking.cancel(false);
                ticking = null;
            }
        }
        finished.forEach(d -> d.done.complete(null));
    }

    private void commit(Download d) {
        blobs.put(d.digest, new Blob(d.digest, d.size, clock.instant(), d.labels, null));
    }

    /** The info of a committed blob. */
    public synchronized Optional<Info> info(String digest) {
        return Optional.ofNullable(blobs.get(digest)).map(Blob::info);
    }

    /** The infos of the committed blobs matching {@code filter} ({@code digest}, {@code size}, {@code labels.*}). */
    public synchronized List<Info> list(ContainerdFilter filter) {
        List<Info> out = new ArrayList<>();
        for (Blob b : blobs.values()) {
            if (filter.matches(path -> field(b, path))) {
                out.add(b.info());
            }
        }
        return out;
    }

    private static Optional<String> field(Blob b, List<String> path) {
        if (path.size() == 1) {
            return switch (path.get(0)) {
                case "digest" -> Optional.of(b.digest);
                case "size" -> Optional.of(Long.toString(b.size));
                default -> Optional.empty();
            };
        }
        if (path.get(0).equals("labels")) {
            return Optional.ofNullable(
                    b.labels.get(String.join(".", path.subList(1, path.size()))));
        }
        return Optional.empty();
    }

    /** The ingests in progress matching {@code filter} ({@code ref}, {@code expected}). */
    public synchronized List<Status> statuses(ContainerdFilter filter) {
        List<Status> out = new ArrayList<>();
        for (Download d : downloads.values()) {
            if (d.started == null) {
                continue;
            }
            String ref = "layer-" + d.digest;
            boolean match =
                    filter.matches(
                            path ->
                                    path.size() != 1
                                            ? Optional.empty()
                                            : switch (path.get(0)) {
                                                case "ref" -> Optional.of(ref);
                                                case "expected" -> Optional.of(d.digest);
                                                default -> Optional.empty();
                                            });
            if (match) {
                out.add(
                        Status.newBuilder()
                                .setRef(ref)
                                .setOffset(d.offset)
                                .setTotal(d.size)
                                .setExpected(d.digest)
                                .setStartedAt(ts(d.started))
                                .setUpdatedAt(ts(d.updated))
                                .build());
            }
        }
        return out;
    }

    /**
     * The bytes of a committed blob.
     *
     * @return empty when no such blob is committed
     * @throws IllegalStateException for a layer, whose bytes the fake does not keep
     */
    public synchronized Optional<byte[]> read(String digest) {
        Blob b = blobs.get(digest);
        if (b == null) {
            return Optional.empty();
        }
        if (b.data == null) {
            throw new IllegalStateException("the fake runtime keeps no bytes of layer " + digest);
        }
        return Optional.of(b.data);
    }

    /** Removes an image's manifest, config and layers (what containerd's garbage collector would remove). */
    public synchronized void forget(String manifestDigest) {
        Blob m = blobs.remove(manifestDigest);
        if (m == null) {
            return;
        }
        m.labels.forEach(
                (k, v) -> {
                    if (k.startsWith("containerd.io/gc.ref.content.")) {
                        blobs.remove(v);
                    }
                });
    }

    /** Forgets every blob (downloads in progress go on). */
    public synchronized void clear() {
        blobs.clear();
    }

    /** Fails the pulls still downloading with UNAVAILABLE and stops the download thread; idempotent. */
    @Override
    public void close() {
        List<Download> left;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            left = new ArrayList<>(downloads.values());
            downloads.clear();
            if (ticking != null) {
                ticking.cancel(false);
                ticking = null;
            }
        }
        ticker.shutdownNow();
        for (Download d : left) {
            d.done.completeExceptionally(
                    io.grpc.Status.UNAVAILABLE
                            .withDescription("the fake runtime is shutting down")
                            .asRuntimeException());
        }
    }

    static Timestamp ts(Instant i) {
        return Timestamp.newBuilder().setSeconds(i.getEpochSecond()).setNanos(i.getNano()).build();
    }
}
