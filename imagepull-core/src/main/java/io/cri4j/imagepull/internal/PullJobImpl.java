package io.cri4j.imagepull.internal;

import io.cri4j.imagepull.ImageInfo;
import io.cri4j.imagepull.ImagePullBackend;
import io.cri4j.imagepull.ImagePullException;
import io.cri4j.imagepull.PullJob;
import io.cri4j.imagepull.PullPolicy;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.imagepull.PullProgress.Phase;
import io.cri4j.imagepull.PullRequest;
import io.cri4j.imagepull.PullResult;
import io.cri4j.imagepull.PullScheduler;
import io.cri4j.imagepull.RegistryCredential;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pull: a state machine driven by backend completions and timers. Every transition happens
 * under this object's lock; nothing blocking runs under it. Credentials are never logged.
 */
public final class PullJobImpl implements PullJob {

    private static final Logger LOG = LoggerFactory.getLogger(PullJobImpl.class);
    private static final int PUBLISHER_BUFFER = 256;

    private final PullRequest request;
    private final PullPolicy policy;
    private final List<RegistryCredential> credentials;
    private final ImagePullBackend backend;
    private final PullScheduler scheduler;
    private final WorkerSlots slots;
    private final CompletableFuture<PullResult> result = new CompletableFuture<>();
    private final SubmissionPublisher<PullProgress> publisher;
    private final ProgressTracker tracker = new ProgressTracker();
    private final Instant submitted;
    private final Runnable onSlot = this::onSlot;
    private final Consumer<PullJobImpl> onDone;

    private Phase phase = Phase.QUEUED;
    private int attempt;
    private boolean holdsSlot;
    private boolean waitingForSlot;
    private CompletableFuture<?> inFlight;
    private PullScheduler.Cancellable attemptTimer;
    private PullScheduler.Cancellable deadlineTimer;
    private PullScheduler.Cancellable backoffTimer;
    private String message = "";
    private PullProgress last;
    private final List<Duration> backoffs = new ArrayList<>();

    /**
     * @param request the request
     * @param policy the effective policy
     * @param credentials credentials to try in order (anonymous is tried after them)
     * @param backend the backend
     * @param scheduler time source
     * @param slots the worker pool
     * @param events executor delivering progress
     * @param onDone called once when the job reaches a terminal phase
     */
    public PullJobImpl(
            PullRequest request,
            PullPolicy policy,
            List<RegistryCredential> credentials,
            ImagePullBackend backend,
            PullScheduler scheduler,
            WorkerSlots slots,
            Executor events,
            Consumer<PullJobImpl> onDone) {
        this.request = request;
        this.policy = policy;
        this.credentials = List.copyOf(credentials);
        this.backend = backend;
        this.scheduler = scheduler;
        this.slots = slots;
        this.onDone = onDone;
        this.publisher = new SubmissionPublisher<>(events, PUBLISHER_BUFFER);
        this.submitted = scheduler.now();
        this.last = tracker.snapshot(request.image(), Phase.QUEUED, 0, "", submitted);
        // cancelling the result future cancels the pull
        result.whenComplete(
                (r, e) -> {
                    if (e instanceof CancellationException) {
                        cancel();
                    }
                });
    }

    /** Starts the job: arms the deadline and queues for a worker. */
    public void start() {
        synchronized (this) {
            policy.activeDeadline()
                    .ifPresent(d -> deadlineTimer = scheduler.schedule(d, this::onDeadline));
            waitingForSlot = true;
            publish();
        }
        slots.acquire(onSlot);
    }

    @Override
    public String image() {
        return request.image();
    }

    @Override
    public CompletableFuture<PullResult> result() {
        return result;
    }

    @Override
    public synchronized PullProgress progress() {
        return last;
    }

    /** @return back-off waits taken so far, in order (for status and tests) */
    public synchronized List<Duration> backoffs() {
        return List.copyOf(backoffs);
    }

    @Override
    public Flow.Publisher<PullProgress> progressPublisher() {
        return publisher;
    }

    @Override
    public PullJob onProgress(Consumer<PullProgress> listener) {
        // subscribe under the lock that every intermediate offer happens under, so the snapshot
        // handed over first is older than anything the subscription then receives
        synchronized (this) {
            PullProgress initial = last;
            publisher.subscribe(
                    new Flow.Subscriber<>() {
                        @Override
                        public void onSubscribe(Flow.Subscription s) {
                            listener.accept(initial);
                            s.request(Long.MAX_VALUE);
                        }

                        @Override
                        @SuppressWarnings("ReferenceEquality") // skips that very snapshot only
                        public void onNext(PullProgress item) {
                            if (item != initial) {
                                listener.accept(item);
                            }
                        }

                        @Override
                        public void onError(Throwable t) {}

                        @Override
                        public void onComplete() {}
                    });
        }
        return this;
    }

    /** Whether the job ended by {@link #cancel()}. */
    public synchronized boolean wasCancelled() {
        return phase == Phase.CANCELLED;
    }

    @Override
    public boolean cancel() {
        return finish(Phase.CANCELLED, "cancelled", null, null);
    }

    // ---- transitions -------------------------------------------------------------------------

    private void onSlot() {
        boolean check;
        synchronized (this) {
            waitingForSlot = false;
            if (phase.terminal()) {
                // cancelled while the grant was on its way
                slots.release();
                return;
            }
            holdsSlot = true;
            check = attempt == 0 && !request.force();
            if (check) {
                phase = Phase.CHECKING;
                publish();
            }
        }
        if (check) {
            CompletableFuture<Optional<ImageInfo>> f = backend.imageStatus(request.image());
            synchronized (this) {
                inFlight = f;
            }
            f.whenComplete(
                    (info, err) -> {
                        if (err == null && info.isPresent()) {
                            succeed(info.get(), true);
                        } else {
                            if (err != null && !(unwrap(err) instanceof CancellationException)) {
                                LOG.debug(
                                        "image status of {} failed, pulling: {}",
                                        request.image(),
                                        unwrap(err).toString());
                            }
                            startAttempt();
                        }
                    });
        } else {
            startAttempt();
        }
    }

    private void startAttempt() {
        synchronized (this) {
            if (phase.terminal()) {
                return;
            }
            attempt++;
            phase = Phase.PULLING;
            message = "";
            Duration timeout = policy.attemptTimeout();
            int n = attempt;
            attemptTimer = scheduler.schedule(timeout, () -> onAttemptTimeout(n, timeout));
            publish();
        }
        LOG.debug("pulling {} attempt {} via {}", request.image(), attempt, backend.name());
        tryCredential(attempt, 0, new ArrayList<>());
    }

    private void tryCredential(int n, int index, List<Throwable> errors) {
        Optional<RegistryCredential> cred =
                index < credentials.size() ? Optional.of(credentials.get(index)) : Optional.empty();
        CompletableFuture<ImageInfo> f;
        synchronized (this) {
            if (phase.terminal() || attempt != n || phase != Phase.PULLING) {
                return;
            }
            try {
                f = backend.pull(request.image(), cred, sink(n));
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            inFlight = f;
        }
        f.whenComplete(
                (info, err) -> {
                    if (err == null) {
                        succeed(info, false);
                        return;
                    }
                    Throwable cause = unwrap(err);
                    if (cause instanceof CancellationException) {
                        return; // timeout, deadline or cancel already handled the transition
                    }
                    errors.add(
                            cred.isPresent()
                                    ? new RuntimeException(
                                            "with credential for "
                                                    + cred.get().registry()
                                                    + (cred.get().username().isEmpty()
                                                            ? ""
                                                            : " (user "
                                                                    + cred.get().username()
                                                                    + ")")
                                                    + (cred.get().source().isEmpty()
                                                            ? ""
                                                            : " from " + cred.get().source())
                                                    + ": "
                                                    + describe(cause),
                                            cause)
                                    : cause);
                    if (cred.isPresent()) {
                        tryCredential(n, index + 1, errors);
                    } else {
                        attemptFailed(n, errors);
                    }
                });
    }

    private ImagePullBackend.ProgressSink sink(int n) {
        return new ImagePullBackend.ProgressSink() {
            @Override
            public void layer(String id, String status, long done, long total) {
                synchronized (PullJobImpl.this) {
                    if (attempt == n
                            && phase == Phase.PULLING
                            && tracker.layer(id, status, done, total, scheduler.now())) {
                        publish();
                    }
                }
            }

            @Override
            public void layersResolved(java.util.LinkedHashMap<String, Long> layerSizes) {
                synchronized (PullJobImpl.this) {
                    if (attempt == n && phase == Phase.PULLING) {
                        tracker.resolved(layerSizes, scheduler.now());
                        publish();
                    }
                }
            }

            @Override
            public void unknown(String reason) {
                synchronized (PullJobImpl.this) {
                    if (attempt == n && phase == Phase.PULLING) {
                        tracker.unknown();
                        message = reason;
                        publish();
                    }
                }
            }

            @Override
            public void message(String m) {
                synchronized (PullJobImpl.this) {
                    if (attempt == n && phase == Phase.PULLING) {
                        message = m;
                        publish();
                    }
                }
            }
        };
    }

    private void onAttemptTimeout(int n, Duration timeout) {
        CompletableFuture<?> f;
        synchronized (this) {
            if (attempt != n || phase != Phase.PULLING) {
                return;
            }
            f = inFlight;
        }
        attemptFailed(
                n,
                List.of(
                        new java.util.concurrent.TimeoutException(
                                "attempt " + n + " timed out after " + human(timeout))));
        if (f != null) {
            f.cancel(true);
        }
    }

    private void attemptFailed(int n, List<Throwable> errors) {
        Throwable last = errors.get(errors.size() - 1);
        String why =
                errors.size() == 1
                        ? describe(last)
                        : String.join("; ", errors.stream().map(PullJobImpl::describe).toList());
        synchronized (this) {
            if (attempt != n || phase != Phase.PULLING) {
                return;
            }
            cancelTimer(attemptTimer);
            attemptTimer = null;
            inFlight = null;
            if (n > policy.backoffLimit()) {
                // fall through to failure below, outside the lock
            } else {
                Duration wait = policy.backoffAfter(n);
                backoffs.add(wait);
                phase = Phase.BACKING_OFF;
                message = "attempt " + n + " failed: " + why + "; retrying in " + human(wait);
                LOG.info("pulling {}: {}", request.image(), message);
                releaseSlot();
                backoffTimer = scheduler.schedule(wait, this::afterBackoff);
                publish();
                return;
            }
        }
        RuntimeException cause = new RuntimeException(why, last);
        for (int i = 0; i < errors.size() - 1; i++) {
            cause.addSuppressed(errors.get(i));
        }
        finish(
                Phase.FAILED,
                "pulling "
                        + request.image()
                        + " failed after "
                        + n
                        + (n == 1 ? " attempt: " : " attempts: ")
                        + why,
                cause,
                null);
    }

    private void afterBackoff() {
        synchronized (this) {
            if (phase != Phase.BACKING_OFF) {
                return;
            }
            backoffTimer = null;
            phase = Phase.QUEUED;
            waitingForSlot = true;
            publish();
        }
        slots.acquire(onSlot);
    }

    private void onDeadline() {
        Duration d = policy.activeDeadline().orElseThrow();
        String why;
        synchronized (this) {
            why = message.isEmpty() ? "" : " (last: " + message + ")";
        }
        finish(
                Phase.FAILED,
                "pulling "
                        + request.image()
                        + " exceeded its active deadline of "
                        + human(d)
                        + " after "
                        + attempt
                        + (attempt == 1 ? " attempt" : " attempts")
                        + why,
                null,
                null);
    }

    private void succeed(ImageInfo info, boolean present) {
        PullResult r;
        synchronized (this) {
            Duration elapsed = Duration.between(submitted, scheduler.now());
            r =
                    new PullResult(
                            request.image(),
                            info.id(),
                            info.digestFor(request.image()),
                            info.size(),
                            elapsed,
                            attempt,
                            present);
        }
        finish(Phase.SUCCEEDED, present ? "already present" : "pulled " + info.id(), null, r);
    }

    /** The only way to a terminal phase; idempotent. */
    private boolean finish(Phase terminal, String why, Throwable cause, PullResult success) {
        CompletableFuture<?> abort;
        PullProgress finalSnapshot;
        synchronized (this) {
            if (phase.terminal()) {
                return false;
            }
            phase = terminal;
            message = why;
            abort = inFlight;
            inFlight = null;
            cancelTimer(attemptTimer);
            cancelTimer(deadlineTimer);
            cancelTimer(backoffTimer);
            if (waitingForSlot && slots.withdraw(onSlot)) {
                waitingForSlot = false;
            }
            releaseSlot();
            publish();
            finalSnapshot = last;
        }
        if (abort != null && !abort.isDone()) {
            abort.cancel(true);
        }
        // the terminal snapshot is never dropped: wait up to a few seconds for a slow subscriber
        try {
            publisher.offer(finalSnapshot, 5, TimeUnit.SECONDS, null);
            publisher.close();
        } catch (RuntimeException e) {
            LOG.debug("progress of {} not delivered: {}", request.image(), e.toString());
        }
        // no longer active once anyone can see the result
        onDone.accept(this);
        switch (terminal) {
            case SUCCEEDED -> {
                LOG.info(
                        "pulled {} ({} attempt(s), {} ms)",
                        request.image(),
                        success.attempts(),
                        success.elapsed().toMillis());
                result.complete(success);
            }
            case CANCELLED ->
                    result.completeExceptionally(
                            new CancellationException(
                                    "pull of " + request.image() + " was cancelled"));
            default -> {
                // the caller gets the failure from the result; logged at info so a CLI shows it
                // once
                LOG.info("{}", why);
                result.completeExceptionally(
                        new ImagePullException(request.image(), attempt, why, cause));
            }
        }
        return true;
    }

    // ---- helpers (callers hold the lock where state is touched) -------------------------------

    private void releaseSlot() {
        if (holdsSlot) {
            holdsSlot = false;
            slots.release();
        }
    }

    private void publish() {
        last = tracker.snapshot(request.image(), phase, attempt, message, scheduler.now());
        if (!phase.terminal()) {
            // intermediate snapshots may be dropped for a subscriber that lags far behind
            publisher.offer(last, (s, item) -> false);
        }
    }

    private static void cancelTimer(PullScheduler.Cancellable c) {
        if (c != null) {
            c.cancel();
        }
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException
                        || t instanceof java.util.concurrent.ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** The message, plus the transport's root cause when the message does not already say it. */
    static String describe(Throwable t) {
        String m = io.cri4j.cri.internal.IoErrors.reason(t);
        Throwable root = t;
        int depth = 0;
        while (root.getCause() != null && root.getCause() != root && depth++ < 10) {
            root = root.getCause();
        }
        String rm = root == t ? null : io.cri4j.cri.internal.IoErrors.reason(root);
        if (rm != null && !rm.isBlank() && !m.contains(rm)) {
            m = m + ": " + rm;
        }
        return m;
    }

    /** @param d a duration @return it as people write it: 1.5s, 2m, 10m30s */
    public static String human(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + "ms";
        }
        if (ms < 60_000) {
            return ms % 1000 == 0
                    ? ms / 1000 + "s"
                    : String.format(java.util.Locale.ROOT, "%.1fs", ms / 1000.0);
        }
        long s = ms / 1000;
        return s / 60 + "m" + (s % 60 == 0 ? "" : s % 60 + "s");
    }
}
