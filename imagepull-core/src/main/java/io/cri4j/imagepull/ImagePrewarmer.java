package io.cri4j.imagepull;

import io.cri4j.imagepull.PrewarmStatus.Phase;
import io.cri4j.imagepull.PrewarmStatus.TagStatus;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a desired set of images pulled, reconciling like kruise-daemon does for a NodeImage:
 * {@link #apply(Map)} starts a worker (a {@link PullJob}) per new tag, restarts a tag's worker when
 * its version changes, stops workers of tags that left the set, and leaves tags whose version is
 * unchanged alone (a finished tag is not pulled again). {@link #status()} gives a snapshot;
 * listeners get one on every change, in order, on the prewarmer's own thread.
 */
public final class ImagePrewarmer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ImagePrewarmer.class);

    private final ImagePuller puller;
    private final List<Consumer<PrewarmStatus>> listeners = new CopyOnWriteArrayList<>();
    private final ExecutorService events =
            Executors.newSingleThreadExecutor(
                    r -> {
                        Thread t = new Thread(r, "cri4j-imagepull-prewarm-events");
                        t.setDaemon(true);
                        return t;
                    });

    /** image name -> tag -> worker, in desired order. */
    private final Map<String, Map<String, Worker>> workers = new LinkedHashMap<>();

    private boolean closed;

    private final class Worker {
        final String image;
        final PrewarmTag spec;
        PullJob job;
        TagStatus status;

        Worker(String image, PrewarmTag spec) {
            this.image = image;
            this.spec = spec;
            this.status =
                    new TagStatus(
                            image,
                            spec.tag(),
                            spec.version(),
                            Phase.WAITING,
                            0,
                            puller.scheduler().now(),
                            Optional.empty(),
                            "",
                            "");
        }

        /** Starts the pull; called once the worker is in the map. */
        void start() {
            String ref =
                    spec.tag().contains(":") ? image + "@" + spec.tag() : image + ":" + spec.tag();
            PullRequest req = PullRequest.of(ref);
            if (spec.policy().isPresent()) {
                req = req.withPolicy(spec.policy().get());
            }
            this.job = puller.pull(req);
            job.onProgress(this::onProgress);
            job.result()
                    .whenComplete(
                            (r, e) -> {
                                if (r != null) {
                                    update(Phase.SUCCEEDED, 100, "", r.imageId(), true);
                                } else if (!(e
                                        instanceof java.util.concurrent.CancellationException)) {
                                    Throwable cause =
                                            e instanceof java.util.concurrent.CompletionException
                                                            && e.getCause() != null
                                                    ? e.getCause()
                                                    : e;
                                    update(
                                            Phase.FAILED,
                                            status.progress(),
                                            cause.getMessage(),
                                            "",
                                            true);
                                }
                            });
        }

        private void onProgress(PullProgress p) {
            Phase phase =
                    switch (p.phase()) {
                        case QUEUED -> p.attempt() == 0 ? Phase.WAITING : Phase.PULLING;
                        case CHECKING, PULLING, BACKING_OFF -> Phase.PULLING;
                        default -> null; // terminal phases come from the result
                    };
            if (phase != null) {
                update(phase, p.percent(), p.message(), "", false);
            }
        }

        private void update(
                Phase phase, int progress, String message, String imageId, boolean completed) {
            PrewarmStatus snapshot;
            synchronized (ImagePrewarmer.this) {
                if (closed || workers.getOrDefault(image, Map.of()).get(spec.tag()) != this) {
                    return; // a stopped or replaced worker
                }
                if (status.completionTime().isPresent()) {
                    return;
                }
                TagStatus next =
                        new TagStatus(
                                image,
                                spec.tag(),
                                spec.version(),
                                phase,
                                progress,
                                status.startTime(),
                                completed
                                        ? Optional.of(puller.scheduler().now())
                                        : Optional.empty(),
                                message == null ? "" : message,
                                imageId);
                if (next.equals(status)) {
                    return;
                }
                status = next;
                snapshot = snapshot();
            }
            fire(snapshot);
        }
    }

    private ImagePrewarmer(ImagePuller puller) {
        this.puller = Objects.requireNonNull(puller, "puller");
    }

    /**
     * @param puller the puller doing the work (its worker pool bounds concurrency)
     * @return a prewarmer with an empty set
     */
    public static ImagePrewarmer create(ImagePuller puller) {
        return new ImagePrewarmer(puller);
    }

    /**
     * Reconciles to a desired set.
     *
     * @param desired image name (without tag) to its tags
     */
    public void apply(Map<String, List<PrewarmTag>> desired) {
        Objects.requireNonNull(desired, "desired");
        List<PullJob> toStop = new ArrayList<>();
        PrewarmStatus snapshot;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("prewarmer is closed");
            }
            for (Map.Entry<String, List<PrewarmTag>> e : desired.entrySet()) {
                java.util.Set<String> seen = new java.util.HashSet<>();
                for (PrewarmTag t : e.getValue()) {
                    if (!seen.add(t.tag())) {
                        throw new IllegalArgumentException(
                                "image " + e.getKey() + " lists tag " + t.tag() + " twice");
                    }
                }
            }
            // stop what left the set or changed version
            for (var it = workers.entrySet().iterator(); it.hasNext(); ) {
                var image = it.next();
                List<PrewarmTag> want = desired.getOrDefault(image.getKey(), List.of());
                for (var wit = image.getValue().entrySet().iterator(); wit.hasNext(); ) {
                    Worker w = wit.next().getValue();
                    Optional<PrewarmTag> spec =
                            want.stream().filter(t -> t.tag().equals(w.spec.tag())).findFirst();
                    if (spec.isEmpty() || !spec.get().version().equals(w.spec.version())) {
                        LOG.info(
                                "stopping worker for {}:{} ({})",
                                w.image,
                                w.spec.tag(),
                                spec.isEmpty()
                                        ? "left the set"
                                        : "version "
                                                + w.spec.version()
                                                + " -> "
                                                + spec.get().version());
                        wit.remove();
                        toStop.add(w.job);
                    }
                }
                if (image.getValue().isEmpty()) {
                    it.remove();
                }
            }
            // start new workers, keeping the desired order
            Map<String, Map<String, Worker>> next = new LinkedHashMap<>();
            for (Map.Entry<String, List<PrewarmTag>> e : desired.entrySet()) {
                Map<String, Worker> tags = new LinkedHashMap<>();
                Map<String, Worker> old = workers.getOrDefault(e.getKey(), Map.of());
                for (PrewarmTag t : e.getValue()) {
                    Worker w = old.get(t.tag());
                    tags.put(t.tag(), w);
                }
                next.put(e.getKey(), tags);
            }
            workers.clear();
            workers.putAll(next);
            for (Map.Entry<String, Map<String, Worker>> e : workers.entrySet()) {
                for (PrewarmTag t : desired.get(e.getKey())) {
                    if (e.getValue().get(t.tag()) == null) {
                        LOG.info(
                                "starting worker for {}:{} version {}",
                                e.getKey(),
                                t.tag(),
                                t.version());
                        Worker w = new Worker(e.getKey(), t);
                        e.getValue().put(t.tag(), w);
                        w.start();
                    }
                }
            }
            snapshot = snapshot();
        }
        toStop.forEach(PullJob::cancel);
        fire(snapshot);
    }

    /** @return the current status */
    public synchronized PrewarmStatus status() {
        return snapshot();
    }

    /**
     * @param listener called with a snapshot on every change
     * @return this
     */
    public ImagePrewarmer addListener(Consumer<PrewarmStatus> listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
        return this;
    }

    private PrewarmStatus snapshot() {
        Map<String, List<TagStatus>> images = new LinkedHashMap<>();
        int waiting = 0;
        int pulling = 0;
        int succeeded = 0;
        int failed = 0;
        int desired = 0;
        for (Map.Entry<String, Map<String, Worker>> e : workers.entrySet()) {
            List<TagStatus> tags = new ArrayList<>();
            for (Worker w : e.getValue().values()) {
                if (w == null) {
                    continue;
                }
                desired++;
                tags.add(w.status);
                switch (w.status.phase()) {
                    case WAITING -> waiting++;
                    case PULLING -> pulling++;
                    case SUCCEEDED -> succeeded++;
                    case FAILED -> failed++;
                    default -> {}
                }
            }
            images.put(e.getKey(), List.copyOf(tags));
        }
        return new PrewarmStatus(images, desired, waiting, pulling, succeeded, failed);
    }

    private void fire(PrewarmStatus snapshot) {
        try {
            events.execute(
                    () -> {
                        for (Consumer<PrewarmStatus> l : listeners) {
                            try {
                                l.accept(snapshot);
                            } catch (RuntimeException e) {
                                LOG.warn("prewarm listener failed", e);
                            }
                        }
                    });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed
        }
    }

    /** Stops every worker (cancelling unfinished pulls) and the event thread; idempotent. */
    @Override
    public void close() {
        List<PullJob> jobs = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            workers.values().forEach(m -> m.values().forEach(w -> jobs.add(w.job)));
            workers.clear();
        }
        jobs.forEach(PullJob::cancel);
        events.shutdown();
        try {
            events.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
