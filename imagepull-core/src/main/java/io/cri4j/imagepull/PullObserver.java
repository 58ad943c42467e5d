package io.cri4j.imagepull;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.imagepull.PullProgress.Phase;
import io.cri4j.imagepull.internal.ContentProgressPoller;
import io.cri4j.imagepull.internal.ImageReference;
import io.cri4j.imagepull.internal.ProgressTracker;
import io.cri4j.imagepull.internal.PullMeters;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows image pulls that someone else makes: a CRI proxy tells it when a {@code PullImage} starts and
 * how it ended ({@link #pullStarted}), and the observer follows the pull's byte progress the way
 * {@link CriImagePullBackend} follows its own, through containerd's content service on the runtime's
 * socket (layer ingests while they download; the pull's exact layers from its manifest). Where the runtime
 * has no content service (CRI-O, or containerd with it unreachable), a pull's percent is an honest
 * unknown ({@code -1}) until it ends.
 *
 * <pre>{@code
 * try (PullObserver pulls = PullObserver.builder(CriEndpoint.parse("unix:///run/containerd/containerd.sock")).build();
 *      CriProxy proxy = CriProxy.builder().listen(...).backend(...).observePulls(pulls).build().start()) {
 *     pulls.watch("registry.example/app:1.2", p -> System.out.println(p.percent() + "%"));
 * }
 * }</pre>
 *
 * <p>Bounded: at most {@link Builder#maxFollowed(int)} pulls are followed at once (later ones report
 * unknown progress), at most {@link Builder#maxActive(int)} are recorded at once, finished ones are kept for
 * {@link Builder#retention(Duration)} (at most {@link Builder#maxRecent(int)} of them), and at most
 * {@link Builder#maxWatchers(int)} watches may be open. Calls of the same image at the same time are one
 * pull here (containerd downloads it once); it ends when the last of them ends, successful if any was.
 *
 * <p>Nothing here blocks the caller: {@link #pullStarted} and the handle's methods hand the work to the
 * observer's own thread. Listeners are called on that thread, one snapshot per pull at most every
 * {@link Builder#minInterval(Duration)}; they must not block.
 */
public final class PullObserver implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(PullObserver.class);

    /** Default bound on pulls followed at once. */
    public static final int DEFAULT_MAX_FOLLOWED = 8;

    /** Default time a finished pull stays listed. */
    public static final Duration DEFAULT_RETENTION = Duration.ofMinutes(2);

    /** A pull's handle for whoever saw it start: say how it ended, once. */
    public interface ObservedPull {
        /**
         * The runtime answered the pull.
         *
         * @param imageRef the runtime's answer ({@code image_ref}), for the record
         */
        void succeeded(String imageRef);

        /**
         * The pull failed, or its client gave up on it.
         *
         * @param error the cause as the runtime (or the client) stated it
         */
        void failed(String error);
    }

    /** Receives a watch's snapshots on the observer's thread; must not block. */
    public interface Listener {
        /** @param progress a pull's latest snapshot (terminal when it ended) */
        void onProgress(PullProgress progress);

        /** The watch ended: its pull ended (after its terminal snapshot), or the observer closed. */
        default void onEnd() {}
    }

    /** An open watch; closing it stops its snapshots (idempotent). */
    public interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    /** More watches are open than {@link Builder#maxWatchers(int)} allows. */
    public static final class TooManyWatchersException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        TooManyWatchersException(int max) {
            super("too many watchers of image pulls (at most " + max + " at once)");
        }
    }

    /** One pull (all calls of one image at once). Guarded by the observer's lock. */
    private final class Entry {
        final String image;
        final String key;
        final ProgressTracker tracker = new ProgressTracker();
        final long startedNanos = System.nanoTime();
        ContentProgressPoller.Tracked tracked;
        int calls;
        boolean succeeded;
        String error = "";
        String message = "";
        boolean ending;
        boolean flushPending;
        PullProgress last;
        Instant finishedAt;

        Entry(String image, String key) {
            this.image = image;
            this.key = key;
            this.last = tracker.snapshot(image, Phase.PULLING, 1, "", Instant.now());
        }

        final ImagePullBackend.ProgressSink sink =
                new ImagePullBackend.ProgressSink() {
                    @Override
                    public void layer(String id, String status, long done, long total) {
                        synchronized (PullObserver.this) {
                            if (!ending && tracker.layer(id, status, done, total, Instant.now())) {
                                dirty(Entry.this);
                            }
                        }
                    }

                    @Override
                    public void layersResolved(java.util.LinkedHashMap<String, Long> layerSizes) {
                        synchronized (PullObserver.this) {
                            tracker.resolved(layerSizes, Instant.now());
                        }
                    }

                    @Override
                    public void unknown(String reason) {
                        synchronized (PullObserver.this) {
                            if (!ending) {
                                tracker.unknown();
                                message = reason;
                                dirty(Entry.this);
                            }
                        }
                    }

                    @Override
                    public void message(String m) {
                        synchronized (PullObserver.this) {
                            message = m;
                        }
                    }
                };
    }

    private final class Call implements ObservedPull {
        private final String image;
        private Entry entry;
        private boolean done;

        Call(String image) {
            this.image = image;
        }

        @Override
        public void succeeded(String imageRef) {
            end(null);
        }

        @Override
        public void failed(String error) {
            end(error == null || error.isEmpty() ? "the pull failed" : error);
        }

        private void end(String error) {
            run(() -> ended(this, error));
        }
    }

    private final class WatchImpl implements Watch {
        final String key;
        final Listener listener;
        boolean closed;
        volatile boolean ready;

        WatchImpl(String key, Listener listener) {
            this.key = key;
            this.listener = listener;
        }

        @Override
        public void close() {
            synchronized (PullObserver.this) {
                if (closed) {
                    return;
                }
                closed = true;
                watchers.remove(this);
            }
        }
    }

    private final Builder config;
    private final ScheduledExecutorService executor;

    /**
     * The observer's own clients of the runtime, made for the first pull it records (not at
     * start: a proxy's start does not wait for a gRPC client it may not need for a while).
     */
    private record Clients(
            ManagedChannel channel,
            boolean ownsChannel,
            ContentProgressPoller content,
            CriImagePullBackend status) {}

    private Clients clients; // guarded by this
    private final Map<String, Entry> active = new LinkedHashMap<>();
    private final PullMeters meters;

    private synchronized int followedNow() {
        return active.size();
    }

    private final ArrayDeque<Entry> recent = new ArrayDeque<>();
    private final List<WatchImpl> watchers = new CopyOnWriteArrayList<>();
    private int followed;
    private long dropped;
    private boolean closed;

    private PullObserver(Builder b) {
        this.config = b;
        this.meters = PullMeters.observer(b.meterRegistry, this::followedNow);
        this.executor =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "cri4j-pull-observer");
                            t.setDaemon(true);
                            return t;
                        });
    }

    private synchronized Clients clients() {
        if (clients == null) {
            ManagedChannel channel =
                    config.channel != null
                            ? config.channel
                            : CriChannels.newChannel(config.endpoint);
            clients =
                    new Clients(
                            channel,
                            config.channel == null,
                            config.contentProgress
                                    ? new ContentProgressPoller(
                                            channel,
                                            config.namespace,
                                            config.pollInterval,
                                            executor,
                                            true)
                                    : null,
                            // only its ImageStatus (v1, v1alpha2 fallback) is used, to find a
                            // finished pull's manifest
                            CriImagePullBackend.builder(channel).contentProgress(false).build());
        }
        return clients;
    }

    /**
     * @param runtime the runtime the pulls go to (for containerd its main socket, which also serves the content service)
     * @return a builder
     */
    public static Builder builder(CriEndpoint runtime) {
        return new Builder(Objects.requireNonNull(runtime, "runtime"), null);
    }

    /**
     * @param channel a channel to the runtime; the observer does not close it
     * @return a builder
     */
    public static Builder builder(ManagedChannel channel) {
        return new Builder(null, Objects.requireNonNull(channel, "channel"));
    }

    /** Runs {@code task} on the observer's thread; dropped once closed. */
    private void run(Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            LOG.debug("pull observer closed; dropping an event");
        }
    }

    /**
     * A {@code PullImage} of {@code image} started. Never blocks.
     *
     * @param image the reference as the client named it
     * @return the handle to report how the call ended
     */
    public ObservedPull pullStarted(String image) {
        Call c = new Call(Objects.requireNonNull(image, "image"));
        run(() -> started(c));
        return c;
    }

    private static String key(String image) {
        try {
            return ImageReference.parse(image).toString();
        } catch (IllegalArgumentException e) {
            return image.strip();
        }
    }

    private void started(Call c) {
        List<PullProgress> publish = new ArrayList<>();
        Entry e;
        synchronized (this) {
            if (closed || c.done) {
                return;
            }
            String key = key(c.image);
            e = active.get(key);
            if (e == null) {
                if (active.size() >= config.maxActive) {
                    dropped++;
                    LOG.debug(
                            "not recording the pull of {}: {} pulls are recorded already",
                            c.image,
                            active.size());
                    return;
                }
                e = new Entry(c.image, key);
                active.put(key, e);
                String why = null;
                ContentProgressPoller content = clients().content();
                if (content == null) {
                    why = "byte progress is not followed (content progress is off)";
                } else if (content.unavailableReason() != null) {
                    why = content.unavailableReason();
                } else if (followed >= config.maxFollowed) {
                    why =
                            "byte progress is not followed: "
                                    + followed
                                    + " pulls are followed already (at most "
                                    + config.maxFollowed
                                    + ")";
                }
                if (why == null) {
                    followed++;
                    e.tracked = content.track(c.image, e.sink);
                } else {
                    e.tracker.unknown();
                    e.message = why;
                }
                e.last = e.tracker.snapshot(e.image, Phase.PULLING, 1, e.message, Instant.now());
                publish.add(e.last);
            }
            e.calls++;
            c.entry = e;
        }
        deliver(e.key, publish, false);
    }

    private void ended(Call c, String error) {
        Entry e;
        synchronized (this) {
            if (c.done) {
                return;
            }
            c.done = true;
            e = c.entry;
            if (e == null) {
                return; // not recorded (too many), or the observer closed
            }
            if (error == null) {
                e.succeeded = true;
            } else {
                e.error = error;
            }
            if (--e.calls > 0) {
                return;
            }
            e.ending = true;
            active.remove(e.key);
            meters.ended(
                    e.succeeded ? "succeeded" : "failed",
                    System.nanoTime() - e.startedNanos,
                    e.tracker.bytesDone());
        }
        if (!e.succeeded) {
            finish(e);
            return;
        }
        // the final layers: found during the pull, or read from the manifest the runtime stored
        Clients runtime;
        synchronized (this) {
            runtime = clients;
        }
        ContentProgressPoller content = runtime.content();
        runtime.status()
                .imageStatus(e.image)
                .thenCompose(
                        info ->
                                info.isEmpty() || content == null
                                        ? java.util.concurrent.CompletableFuture.completedFuture(
                                                null)
                                        : content.resolveFinal(
                                                e.tracked, info.get(), e.image, e.sink))
                .whenComplete((v, t) -> run(() -> finish(e)));
    }

    /** The pull's terminal snapshot goes out; it moves to the recent ones. */
    private void finish(Entry e) {
        PullProgress last;
        synchronized (this) {
            if (e.tracked != null) {
                e.tracked.close();
                e.tracked = null;
                followed--;
            }
            Instant now = Instant.now();
            e.finishedAt = now;
            e.last =
                    e.succeeded
                            ? e.tracker.snapshot(e.image, Phase.SUCCEEDED, 1, "", now)
                            : e.tracker.snapshot(e.image, Phase.FAILED, 1, e.error, now);
            last = e.last;
            if (!closed) {
                recent.addFirst(e);
                prune(now);
            }
        }
        deliver(e.key, List.of(last), true);
    }

    /** A pull's figures changed: a snapshot goes out within {@link Builder#minInterval(Duration)}. */
    private void dirty(Entry e) {
        if (e.flushPending || closed) {
            return;
        }
        e.flushPending = true;
        try {
            executor.schedule(() -> flush(e), config.minInterval.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException ex) {
            e.flushPending = false;
        }
    }

    private void flush(Entry e) {
        PullProgress p;
        synchronized (this) {
            e.flushPending = false;
            if (e.ending || closed) {
                return;
            }
            e.last = e.tracker.snapshot(e.image, Phase.PULLING, 1, e.message, Instant.now());
            p = e.last;
        }
        deliver(e.key, List.of(p), false);
    }

    /** Hands snapshots to the watchers of {@code key} and of every pull (outside the lock). */
    private void deliver(String key, List<PullProgress> snapshots, boolean terminal) {
        if (snapshots.isEmpty()) {
            return;
        }
        for (WatchImpl w : watchers) {
            if (!w.ready || (w.key != null && !w.key.equals(key))) {
                continue;
            }
            try {
                for (PullProgress p : snapshots) {
                    w.listener.onProgress(p);
                }
                if (terminal && w.key != null) {
                    w.close();
                    w.listener.onEnd();
                }
            } catch (RuntimeException ex) {
                LOG.warn("a pull progress listener failed; closing its watch: {}", ex.toString());
                w.close();
            }
        }
    }

    private void prune(Instant now) {
        Instant oldest = now.minus(config.retention);
        while (recent.size() > config.maxRecent) {
            recent.removeLast();
        }
        for (Iterator<Entry> it = recent.descendingIterator(); it.hasNext(); ) {
            Entry e = it.next();
            if (e.finishedAt.isBefore(oldest)) {
                it.remove();
            } else {
                break; // newer ones follow
            }
        }
    }

    /**
     * The pulls in progress (in the order they started), then the ones that finished within the retention
     * (newest first).
     */
    public synchronized List<PullProgress> pulls() {
        prune(Instant.now());
        List<PullProgress> out = new ArrayList<>(active.size() + recent.size());
        active.values().forEach(e -> out.add(e.last));
        recent.forEach(e -> out.add(e.last));
        return out;
    }

    /**
     * The latest snapshot of a pull of {@code image}: the one in progress, else the latest that finished
     * within the retention.
     */
    public synchronized Optional<PullProgress> pull(String image) {
        String key = key(image);
        Entry e = active.get(key);
        if (e != null) {
            return Optional.of(e.last);
        }
        prune(Instant.now());
        return recent.stream().filter(r -> r.key.equals(key)).findFirst().map(r -> r.last);
    }

    /** Pulls not recorded because {@link Builder#maxActive(int)} were recorded at the time. */
    public synchronized long droppedPulls() {
        return dropped;
    }

    /**
     * Watches pulls.
     *
     * <p>With an image: its pull's current snapshot (if one is in progress) and every change until it ends,
     * then {@link Listener#onEnd()}; if none is in progress but one finished within the retention, that
     * one's terminal snapshot and the end at once; else it waits for a pull of the image to start. Without an
     * image (null or empty): the snapshots of the pulls in progress, then every change of every pull, until
     * closed.
     *
     * @param image the reference (normalised as Docker does: {@code busybox} is
     *              {@code docker.io/library/busybox:latest}), or null for every pull
     * @param listener called on the observer's thread; must not block
     * @return the watch; close it to stop
     * @throws TooManyWatchersException when {@link Builder#maxWatchers(int)} watches are open
     * @throws IllegalStateException when the observer is closed
     */
    public Watch watch(String image, Listener listener) {
        Objects.requireNonNull(listener, "listener");
        String key = image == null || image.isBlank() ? null : key(image);
        WatchImpl w = new WatchImpl(key, listener);
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the pull observer is closed");
            }
            if (watchers.size() >= config.maxWatchers) {
                throw new TooManyWatchersException(config.maxWatchers);
            }
            watchers.add(w); // counted now; snapshots only once its first ones went out (below)
        }
        // the first snapshots are taken and sent on the observer's thread, so every later one is
        // newer
        run(
                () -> {
                    List<PullProgress> initial = new ArrayList<>();
                    boolean ended = false;
                    synchronized (this) {
                        if (w.closed) {
                            return;
                        }
                        if (key == null) {
                            active.values().forEach(e -> initial.add(e.last));
                        } else if (active.containsKey(key)) {
                            initial.add(active.get(key).last);
                        } else {
                            prune(Instant.now());
                            Optional<Entry> done =
                                    recent.stream().filter(r -> r.key.equals(key)).findFirst();
                            if (done.isPresent()) {
                                initial.add(done.get().last);
                                ended = true;
                            }
                        }
                        w.ready = true;
                    }
                    try {
                        initial.forEach(listener::onProgress);
                        if (ended) {
                            w.close();
                            listener.onEnd();
                        }
                    } catch (RuntimeException ex) {
                        LOG.warn(
                                "a pull progress listener failed; closing its watch: {}",
                                ex.toString());
                        w.close();
                    }
                });
        return w;
    }

    /** Number of open watches. */
    public int watchers() {
        return watchers.size();
    }

    /**
     * Stops following: ends every watch, stops the thread and closes the channel if the observer owns it.
     * Idempotent.
     */
    @Override
    public void close() {
        List<WatchImpl> open;
        Clients runtime;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = new ArrayList<>(watchers);
            watchers.clear();
            active.clear();
            recent.clear();
            runtime = clients;
        }
        if (runtime != null && runtime.content() != null) {
            runtime.content().close();
        }
        executor.shutdownNow();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (WatchImpl w : open) {
            try {
                w.listener.onEnd();
            } catch (RuntimeException ex) {
                LOG.debug("a pull progress listener failed at the end: {}", ex.toString());
            }
        }
        if (runtime == null) {
            return;
        }
        runtime.status().close();
        if (runtime.ownsChannel()) {
            runtime.channel().shutdownNow();
            try {
                runtime.channel().awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Configures a {@link PullObserver}. */
    public static final class Builder {
        private final CriEndpoint endpoint;
        private final ManagedChannel channel;
        private int maxFollowed = DEFAULT_MAX_FOLLOWED;
        private int maxActive = 256;
        private int maxRecent = 64;
        private int maxWatchers = 64;
        private Duration retention = DEFAULT_RETENTION;
        private Duration minInterval = Duration.ofMillis(100);
        private Duration pollInterval = CriImagePullBackend.DEFAULT_POLL_INTERVAL;
        private String namespace = CriImagePullBackend.CRI_NAMESPACE;
        private boolean contentProgress = true;
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional

        private Builder(CriEndpoint endpoint, ManagedChannel channel) {
            this.endpoint = endpoint;
            this.channel = channel;
        }

        private static int positive(String what, int n) {
            if (n < 1) {
                throw new IllegalArgumentException(what + " must be at least 1, was " + n);
            }
            return n;
        }

        private static Duration positive(String what, Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, was " + d);
            }
            return d;
        }

        /**
         * Records {@code cri4j_imagepull_observed_pulls_total{outcome}}, {@code
         * cri4j_imagepull_observed_pull_duration_seconds{outcome}}, {@code
         * cri4j_imagepull_observed_bytes_total} and {@code cri4j_imagepull_observed_pulls_active}
         * (followed now) into {@code registry}; without one nothing is recorded and Micrometer need
         * not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /** @param n pulls whose bytes are followed at once (default {@value #DEFAULT_MAX_FOLLOWED}); more report unknown progress */
        public Builder maxFollowed(int n) {
            this.maxFollowed = positive("maxFollowed", n);
            return this;
        }

        /** @param n pulls recorded at once (default 256); more are not recorded */
        public Builder maxActive(int n) {
            this.maxActive = positive("maxActive", n);
            return this;
        }

        /** @param n finished pulls kept (default 64), the newest */
        public Builder maxRecent(int n) {
            this.maxRecent = positive("maxRecent", n);
            return this;
        }

        /** @param n watches open at once (default 64) */
        public Builder maxWatchers(int n) {
            this.maxWatchers = positive("maxWatchers", n);
            return this;
        }

        /** @param d how long a finished pull stays listed (default 2 minutes) */
        public Builder retention(Duration d) {
            this.retention = positive("retention", d);
            return this;
        }

        /** @param d shortest interval between two snapshots of one pull (default 100 ms) */
        public Builder minInterval(Duration d) {
            this.minInterval = positive("minInterval", d);
            return this;
        }

        /** @param d content-service poll interval (default 200 ms) */
        public Builder pollInterval(Duration d) {
            this.pollInterval = positive("pollInterval", d);
            return this;
        }

        /** @param ns containerd namespace of CRI's images (default {@value CriImagePullBackend#CRI_NAMESPACE}) */
        public Builder containerdNamespace(String ns) {
            this.namespace = Objects.requireNonNull(ns, "namespace");
            return this;
        }

        /** @param enabled follow bytes through containerd's content service (default true) */
        public Builder contentProgress(boolean enabled) {
            this.contentProgress = enabled;
            return this;
        }

        /** @return the observer, following from the first {@link PullObserver#pullStarted} */
        public PullObserver build() {
            return new PullObserver(this);
        }
    }
}
