package io.cri4j.imagepull;

import io.cri4j.imagepull.internal.PullJobImpl;
import io.cri4j.imagepull.internal.SystemScheduler;
import io.cri4j.imagepull.internal.WorkerSlots;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pulls images through a backend with a bounded pool of workers, retries with back-off,
 * deadlines, cancellation and live progress.
 *
 * <pre>{@code
 * try (ImagePuller puller = ImagePuller.builder(CriImagePullBackend.builder(endpoint).build())
 *         .workers(4)
 *         .credentials(CredentialStore.fromDockerConfig(Path.of("/root/.docker/config.json")))
 *         .build()) {
 *     PullJob job = puller.pull(PullRequest.of("registry:5000/app:1.2"))
 *             .onProgress(p -> System.out.println(p.percent() + "%"));
 *     PullResult r = job.result().get();
 * }
 * }</pre>
 *
 * <p>Semantics per request (see {@link PullPolicy}): first ask the backend whether the image is
 * present and skip the pull unless {@link PullRequest#force()}; otherwise attempts of at most the
 * attempt timeout, each trying every matching credential in turn and then anonymously; after a
 * failed attempt wait the back-off (1 s, 2 s, 4 s, ... up to 30 s) without holding a worker; give
 * up after the back-off limit or at the active deadline. Cancellation and deadlines abort the
 * running backend call immediately.
 *
 * <p>{@link #close()} cancels every unfinished job, stops the puller's threads and closes the
 * backend if the puller owns it (the default). Idempotent.
 */
public final class ImagePuller implements AutoCloseable {

    /** Default number of concurrent pulls. */
    public static final int DEFAULT_WORKERS = 4;

    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final ImagePullBackend backend;
    private final boolean ownsBackend;
    private final PullPolicy defaultPolicy;
    private final CredentialStore credentials;
    private final PullScheduler scheduler;
    private final SystemScheduler ownScheduler;
    private final ExecutorService events;
    private final WorkerSlots slots;
    private final int workers;
    private final Set<PullJobImpl> active = new LinkedHashSet<>();
    private final io.cri4j.imagepull.internal.PullMeters meters;
    private boolean closed;

    private ImagePuller(Builder b) {
        int id = INSTANCES.incrementAndGet();
        this.backend = b.backend;
        this.ownsBackend = b.ownsBackend;
        this.defaultPolicy = b.defaultPolicy;
        this.credentials = b.credentials;
        this.workers = b.workers;
        if (b.scheduler == null) {
            ownScheduler = new SystemScheduler("cri4j-imagepull-" + id + "-timer");
            scheduler = ownScheduler;
        } else {
            ownScheduler = null;
            scheduler = b.scheduler;
        }
        AtomicInteger n = new AtomicInteger();
        events =
                Executors.newCachedThreadPool(
                        r -> {
                            Thread t =
                                    new Thread(
                                            r,
                                            "cri4j-imagepull-"
                                                    + id
                                                    + "-events-"
                                                    + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        slots = new WorkerSlots(workers, events);
        meters = io.cri4j.imagepull.internal.PullMeters.puller(b.meterRegistry, this::activeCount);
    }

    private synchronized int activeCount() {
        return active.size();
    }

    /**
     * @param backend what pulls; the puller closes it on {@link #close()} unless told otherwise
     * @return a builder
     */
    public static Builder builder(ImagePullBackend backend) {
        return new Builder(backend);
    }

    /**
     * Submits a pull with the default policy.
     *
     * @param image image reference
     * @return the job
     */
    public PullJob pull(String image) {
        return pull(PullRequest.of(image));
    }

    /**
     * Submits a pull.
     *
     * @param request what to pull and how
     * @return the job, already started
     * @throws IllegalStateException when the puller is closed
     */
    public PullJob pull(PullRequest request) {
        Objects.requireNonNull(request, "request");
        List<RegistryCredential> creds = new ArrayList<>(request.credentials());
        creds.addAll(credentials.lookup(request.image()));
        PullJobImpl job =
                new PullJobImpl(
                        request,
                        request.policy().orElse(defaultPolicy),
                        creds,
                        backend,
                        scheduler,
                        slots,
                        events,
                        this::done);
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("image puller is closed");
            }
            active.add(job);
        }
        job.start();
        if (meters != io.cri4j.imagepull.internal.PullMeters.NONE) {
            long t0 = System.nanoTime();
            job.result()
                    .whenComplete(
                            (r, t) ->
                                    meters.ended(
                                            t == null
                                                    ? "succeeded"
                                                    : job.wasCancelled() ? "cancelled" : "failed",
                                            System.nanoTime() - t0,
                                            Math.max(0, job.progress().bytesDone())));
        }
        return job;
    }

    private synchronized void done(PullJobImpl job) {
        active.remove(job);
    }

    /** @return the backend */
    public ImagePullBackend backend() {
        return backend;
    }

    /** @return the policy used when a request has none */
    public PullPolicy defaultPolicy() {
        return defaultPolicy;
    }

    /** @return the worker pool size */
    public int workers() {
        return workers;
    }

    /** @return unfinished jobs */
    public synchronized List<PullJob> activeJobs() {
        return List.copyOf(active);
    }

    /** @return the time source */
    PullScheduler scheduler() {
        return scheduler;
    }

    @Override
    public void close() {
        List<PullJobImpl> toCancel;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            toCancel = new ArrayList<>(active);
        }
        toCancel.forEach(PullJobImpl::cancel);
        if (ownsBackend) {
            backend.close();
        }
        if (ownScheduler != null) {
            ownScheduler.close();
        }
        events.shutdown();
        try {
            if (!events.awaitTermination(5, TimeUnit.SECONDS)) {
                events.shutdownNow();
            }
        } catch (InterruptedException e) {
            events.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** Configures an {@link ImagePuller}. */
    public static final class Builder {
        private final ImagePullBackend backend;
        private boolean ownsBackend = true;
        private int workers = DEFAULT_WORKERS;
        private PullPolicy defaultPolicy = PullPolicy.defaults();
        private CredentialStore credentials = CredentialStore.empty();
        private PullScheduler scheduler;
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional

        private Builder(ImagePullBackend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /**
         * Records {@code cri4j_imagepull_pulls_total{outcome}} ({@code succeeded}, {@code failed},
         * {@code cancelled}), {@code cri4j_imagepull_pull_duration_seconds{outcome}}, {@code
         * cri4j_imagepull_pulled_bytes_total} and {@code cri4j_imagepull_pulls_active} into {@code
         * registry}; without one nothing is recorded and Micrometer need not be on the class path.
         *
         * @return this
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * @param n maximum concurrent pulls (default {@value ImagePuller#DEFAULT_WORKERS})
         * @return this
         */
        public Builder workers(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("workers must be >= 1, got " + n);
            }
            this.workers = n;
            return this;
        }

        /**
         * @param policy policy for requests that carry none (default {@link PullPolicy#defaults()})
         * @return this
         */
        public Builder defaultPolicy(PullPolicy policy) {
            this.defaultPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * @param store credentials matched by registry host (default none)
         * @return this
         */
        public Builder credentials(CredentialStore store) {
            this.credentials = Objects.requireNonNull(store, "store");
            return this;
        }

        /**
         * @param s time source for timeouts, back-offs and deadlines (default: system clock and a
         *          timer thread owned by the puller)
         * @return this
         */
        public Builder scheduler(PullScheduler s) {
            this.scheduler = Objects.requireNonNull(s, "scheduler");
            return this;
        }

        /**
         * @param owns whether {@link ImagePuller#close()} closes the backend (default true)
         * @return this
         */
        public Builder closeBackend(boolean owns) {
            this.ownsBackend = owns;
            return this;
        }

        /** @return the puller */
        public ImagePuller build() {
            return new ImagePuller(this);
        }
    }
}
