package io.cri4j.hook;

import io.cri4j.hook.internal.ContainerMerge;
import io.cri4j.hook.internal.HookMetrics;
import io.cri4j.hook.internal.PodMerge;
import io.cri4j.hook.internal.Tracing;
import io.cri4j.hook.koordinator.RemoteRuntimeHook;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PluginInstance;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Many hooks served as one {@link AsyncHook}, the way an NRI runtime serves its plugins: so any
 * host (the NRI plugin stub, the CRI proxy, the fake runtime) runs a whole set of hooks through
 * the one interface.
 *
 * <ul>
 *   <li><b>Order.</b> Each event goes to the hooks subscribed to it ({@link AsyncHook#events()}),
 *       one after the other, by {@link HookPolicy#index()} and then name (NRI's plugin order).</li>
 *   <li><b>Blocking hooks</b> ({@link Hook}) run on a worker pool the chain owns; {@link
 *       AsyncHook}s are called directly. The chain itself never blocks the calling thread: it
 *       composes stages and bounds each with a timer.</li>
 *   <li><b>Timeouts and failures.</b> A hook that does not answer within {@link
 *       HookPolicy#timeout()} has its stage cancelled (which interrupts a blocking hook's worker).
 *       Under {@link FailurePolicy#FAIL} a failure or timeout fails the event with a {@link
 *       HookFailedException} / {@link HookTimeoutException} naming the hook; under {@link
 *       FailurePolicy#IGNORE} it is logged once and the event goes on without that hook's
 *       answer.</li>
 *   <li><b>Merging</b> follows NRI's adaptation: at {@code CreateContainer} each hook sees the
 *       container as earlier hooks adjusted it; every field set is owned by the hook that set it,
 *       and a second hook setting it fails the event with a {@link HookConflictException} naming
 *       both. Container updates ({@code CreateContainer}, {@code UpdateContainer}, {@code
 *       StopContainer}, {@code Synchronize}) merge per container and field the same way;
 *       evictions are collected. {@code AdjustPodSandbox} adjustments merge likewise.</li>
 *   <li><b>Validation.</b> After the {@code CreateContainer} answers are merged, the hooks
 *       subscribed to {@link HookEvent#VALIDATE_CONTAINER_ADJUSTMENT} see the merged adjustment
 *       (in parallel, as in NRI); an exception from one is a {@link HookRejectedException} that
 *       fails the event. A chain hosted as one NRI plugin turns this off ({@link
 *       Builder#validateAdjustments}), since the runtime runs the validation of all plugins.</li>
 *   <li>{@code configure}, {@code synchronize} and {@code shutdown} go to every hook. A hook
 *       whose {@code configure} fails gets no events under {@code IGNORE} and fails every event
 *       it is subscribed to under {@code FAIL}.</li>
 * </ul>
 *
 * <p>Built from a fixed list of hooks, or from a {@link Supplier} of the current list for hosts
 * that reload their hooks: the supplier is asked at every event (and may hold what it gave until
 * the event ends, {@link Builder#source(Supplier, java.util.function.Consumer)}); a hook seen for
 * the first time after {@link #configure} is configured before its first event, a hook that
 * disappeared gets {@link AsyncHook#shutdown()}. Hooks that come and go under someone else's
 * care (a {@link io.cri4j.hook.host.HookProvider}'s) join the order through {@link
 * Builder#provided}. Thread-safe. {@link #close()} shuts the hooks down and stops the chain's
 * threads.
 */
public final class HookChain implements AsyncHook, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HookChain.class);
    private static final AtomicInteger CHAINS = new AtomicInteger();

    private final String name;
    private final HookPolicy policy;
    private final Set<HookEvent> pinnedEvents;
    private final boolean validateAdjustments;

    /** Takes the hooks of one event; {@link #release} gives them back when it ends. */
    private final Supplier<?> source;

    private final Consumer<Object> release;

    /** Hooks a provider registers (never configured, synchronized or shut down here). */
    private final Supplier<? extends Collection<? extends AsyncHook>> provided;

    private final ThreadPoolExecutor workers;
    private final ScheduledThreadPoolExecutor timer;

    /** Calls waiting for a hook, each with how to fail it when the chain closes. */
    private final Map<CompletableFuture<?>, Runnable> inflight = new ConcurrentHashMap<>();

    private final HookMetrics metrics;
    private final Tracing tracing;

    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean shutDown = new AtomicBoolean();
    private final Object snapshotLock = new Object();
    private volatile Snapshot snapshot;
    private volatile HookConfiguration configuration;

    private HookChain(Builder b) {
        this.name = b.name;
        this.policy = b.policy;
        this.pinnedEvents = b.events == null ? null : Set.copyOf(b.events);
        this.validateAdjustments = b.validateAdjustments;
        this.metrics = HookMetrics.of(b.meterRegistry);
        this.tracing = Tracing.of(b.openTelemetry, "io.cri4j.hook");
        int n = CHAINS.incrementAndGet();
        this.workers =
                new ThreadPoolExecutor(
                        b.workerThreads,
                        b.workerThreads,
                        30,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(),
                        threads("cri4j-hook-worker-" + n + "-"));
        this.workers.allowCoreThreadTimeOut(true);
        this.timer = new ScheduledThreadPoolExecutor(1, threads("cri4j-hook-timer-" + n + "-"));
        this.timer.setRemoveOnCancelPolicy(true);
        if (b.source != null) {
            this.source = b.source;
            this.release = b.release;
        } else {
            List<Object> fixed = List.copyOf(b.hooks);
            this.source = () -> fixed;
            this.release = x -> {};
        }
        this.provided = b.provided;
        entriesNow();
    }

    /** A builder of an empty chain. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link HookChain}. */
    public static final class Builder {
        private final List<Object> hooks = new ArrayList<>();
        private Supplier<?> source;
        private Consumer<Object> release = x -> {};
        private Supplier<? extends Collection<? extends AsyncHook>> provided;
        private String name = "hook-chain";
        private HookPolicy policy = new HookPolicy(50, HookPolicy.MAX_TIMEOUT, FailurePolicy.FAIL);
        private int workerThreads = 4;
        private boolean validateAdjustments = true;
        private Set<HookEvent> events;
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional
        private Object openTelemetry; // an OpenTelemetry; typed Object so the API stays optional

        private Builder() {}

        /** Adds a blocking hook; its calls run on the chain's workers. */
        public Builder add(Hook hook) {
            requireNoSource();
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /** Adds a hook that never blocks. */
        public Builder add(AsyncHook hook) {
            requireNoSource();
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /** Adds {@link Hook}s and {@link AsyncHook}s (as {@link Hooks#loadBlocking} finds them). */
        public Builder addAll(Collection<?> list) {
            for (Object h : list) {
                requireHook(h);
                requireNoSource();
                hooks.add(h);
            }
            return this;
        }

        /**
         * Takes the hooks from {@code current} at every event instead of a fixed list (for hosts
         * that reload their hooks); the collection holds {@link Hook}s and {@link AsyncHook}s.
         */
        public Builder source(Supplier<? extends Collection<?>> current) {
            return source(current, held -> {});
        }

        /**
         * Like {@link #source(Supplier)}, for a source that must keep an event's hooks usable until
         * the event is done (a reloaded configuration whose connections close once unused, say):
         * each event takes its hooks from {@code current} once and hands that same collection to
         * {@code release} when it has ended, however it ended. Uses that are not events (such as
         * {@link HookChain#policyOf}) take and release at once.
         */
        @SuppressWarnings("unchecked")
        public <T extends Collection<?>> Builder source(
                Supplier<T> current, Consumer<? super T> release) {
            if (!hooks.isEmpty()) {
                throw new IllegalStateException("a chain takes either added hooks or a source");
            }
            source = Objects.requireNonNull(current, "current");
            this.release = (Consumer<Object>) Objects.requireNonNull(release, "release");
            return this;
        }

        /**
         * Also calls the hooks {@code current} lists at each event (a {@link
         * io.cri4j.hook.host.HookProvider}'s, for example), ordered with the others by index and
         * name and merged under the same rules; the chain never configures, synchronizes or shuts
         * them down, as whoever provides them does that before listing them.
         */
        public Builder provided(Supplier<? extends Collection<? extends AsyncHook>> current) {
            provided = Objects.requireNonNull(current, "current");
            return this;
        }

        /** The chain's name as a hook (default {@code hook-chain}). */
        public Builder name(String value) {
            if (value == null || value.isBlank()) {
                throw new IllegalArgumentException("name must not be blank");
            }
            name = value;
            return this;
        }

        /**
         * The chain's own policy, for a host serving the chain as one hook. Default: index 50, the
         * longest timeout ({@link HookPolicy#MAX_TIMEOUT}) because the chain bounds every hook with
         * the hook's own timeout, and {@link FailurePolicy#FAIL} because the chain fails an event only
         * when a hook's own policy says so.
         */
        public Builder policy(HookPolicy value) {
            policy = Objects.requireNonNull(value, "policy");
            return this;
        }

        /** Worker threads for blocking hooks (default 4); idle workers end after 30 s. */
        public Builder workerThreads(int count) {
            if (count < 1 || count > 256) {
                throw new IllegalArgumentException("workerThreads must be 1..256, got " + count);
            }
            workerThreads = count;
            return this;
        }

        /**
         * Whether {@code createContainer} ends with the validation phase (default true). A host
         * that runs the validation itself and calls {@link HookChain#validateContainerAdjustment}
         * (an NRI runtime calling the chain as one plugin) sets false.
         */
        public Builder validateAdjustments(boolean value) {
            validateAdjustments = value;
            return this;
        }

        /**
         * The events the chain reports as its subscription; default: the union of its hooks'
         * events at the time {@link HookChain#events()} is called.
         */
        public Builder events(Set<HookEvent> value) {
            events = EnumSet.copyOf(Objects.requireNonNull(value, "events"));
            return this;
        }

        /**
         * Records each hook's latency and outcome per event ({@code cri4j_hook_duration_seconds})
         * and each event's time through the chain ({@code cri4j_hook_chain_duration_seconds}),
         * tagged with the chain's {@linkplain #name name}; without a registry nothing is recorded
         * and Micrometer need not be on the class path.
         *
         * @param registry where to record
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Records a span of each event through the chain ({@code hooks CreateContainer}, ...,
         * attributes {@code cri4j.hook.chain}, {@code cri4j.hook.event}, {@code
         * cri4j.hook.outcome}) with a child span per hook called ({@code hook CreateContainer},
         * attributes {@code cri4j.hook.name}, the event, the outcome as in the metrics, and {@code
         * cri4j.hook.ignored} for a failure its Ignore policy let pass). The event's span is a
         * child of the context current when the chain is called (a host's span of the call). While
         * a hook runs its span is current, for OpenTelemetry and for the gRPC calls of a {@link
         * RemoteRuntimeHook}, which send it as W3C trace context ({@code traceparent}); a blocking
         * hook's worker runs in it too. Without one nothing is recorded and the OpenTelemetry API
         * need not be on the class path.
         *
         * @param openTelemetry where the tracer comes from (scope {@code io.cri4j.hook})
         */
        // the OpenTelemetry API is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
            return this;
        }

        /** The chain; owns its worker and timer threads until {@link HookChain#close()}. */
        public HookChain build() {
            return new HookChain(this);
        }

        private void requireNoSource() {
            if (source != null) {
                throw new IllegalStateException("a chain takes either added hooks or a source");
            }
        }
    }

    // ---------------------------------------------------------------- hooks of the chain

    /** One hook as the chain runs it; policy and events are read once. */
    private static final class Entry {
        final Object source;
        final AsyncHook hook;
        final String name;
        final HookPolicy policy;
        final Set<HookEvent> events;
        final boolean provided;
        volatile CompletableFuture<Boolean> ready = CompletableFuture.completedFuture(true);

        Entry(
                Object source,
                AsyncHook hook,
                String name,
                HookPolicy policy,
                Set<HookEvent> events,
                boolean provided) {
            this.source = source;
            this.hook = hook;
            this.name = name;
            this.policy = policy;
            this.events = events;
            this.provided = provided;
        }
    }

    private record Snapshot(Collection<?> source, Collection<?> provided, List<Entry> entries) {}

    /** The hooks of one event, held until {@link #release()}. */
    private final class Held {
        final Object taken;
        final List<Entry> entries;
        private final AtomicBoolean released = new AtomicBoolean();

        Held(Object taken, List<Entry> entries) {
            this.taken = taken;
            this.entries = entries;
        }

        void release() {
            if (released.compareAndSet(false, true)) {
                try {
                    HookChain.this.release.accept(taken);
                } catch (RuntimeException e) {
                    LOG.warn("hook chain {}: releasing an event's hooks failed", name, e);
                }
            }
        }
    }

    private static void requireHook(Object h) {
        if (!(h instanceof Hook) && !(h instanceof AsyncHook)) {
            throw new IllegalArgumentException("not a Hook or AsyncHook: " + h);
        }
    }

    /** The hooks now, for uses that are not events. */
    private List<Entry> entriesNow() {
        Held h = hold();
        h.release();
        return h.entries;
    }

    /** Takes the hooks of one event from the source; the caller releases them. */
    private Held hold() {
        Object taken = source.get();
        try {
            return new Held(
                    taken,
                    entries(
                            (Collection<?>)
                                    Objects.requireNonNull(taken, "the hook source gave null")));
        } catch (RuntimeException e) {
            try {
                release.accept(taken);
            } catch (RuntimeException ignored) {
                // the original problem is the one to report
            }
            throw e;
        }
    }

    private List<Entry> entries(Collection<?> now) {
        Collection<? extends AsyncHook> extra = provided == null ? List.of() : provided.get();
        Snapshot s = snapshot;
        if (s != null && now == s.source && extra == s.provided) {
            return s.entries;
        }
        synchronized (snapshotLock) {
            s = snapshot;
            if (s != null && now == s.source && extra == s.provided) {
                return s.entries;
            }
            IdentityHashMap<Object, Entry> known = new IdentityHashMap<>();
            if (s != null) {
                s.entries.forEach(e -> known.put(e.source, e));
            }
            List<Entry> list = new ArrayList<>();
            Set<String> names = new HashSet<>();
            for (Object h : now) {
                requireHook(h);
                list.add(entry(known, h, false, names));
            }
            for (AsyncHook h : Objects.requireNonNull(extra, "the provided hooks are null")) {
                list.add(
                        entry(
                                known,
                                Objects.requireNonNull(h, "a provided hook is null"),
                                true,
                                names));
            }
            list.sort(
                    Comparator.<Entry>comparingInt(e -> e.policy.index())
                            .thenComparing(e -> e.name));
            snapshot = new Snapshot(now, extra, List.copyOf(list));
            for (Entry gone : known.values()) {
                LOG.info("hook {} left chain {}", gone.name, name);
                if (!gone.provided) {
                    shutdownQuietly(gone);
                }
            }
            return snapshot.entries;
        }
    }

    private Entry entry(
            IdentityHashMap<Object, Entry> known, Object h, boolean isProvided, Set<String> names) {
        Entry e = known.remove(h);
        if (e == null || e.provided != isProvided) {
            e = newEntry(h, isProvided);
        }
        if (!names.add(e.name)) {
            throw new IllegalStateException(
                    "two hooks are named \"" + e.name + "\"; names must be unique in a chain");
        }
        return e;
    }

    private Entry newEntry(Object h, boolean isProvided) {
        AsyncHook hook =
                h instanceof AsyncHook a ? a : Hooks.async((Hook) h, tracing.wrap(workers));
        String n = Objects.requireNonNull(hook.name(), "hook name");
        if (n.isBlank()) {
            throw new IllegalArgumentException("hook " + h + " has a blank name");
        }
        Entry e =
                new Entry(
                        h,
                        hook,
                        n,
                        Objects.requireNonNull(hook.policy(), "policy of " + n),
                        Set.copyOf(Objects.requireNonNull(hook.events(), "events of " + n)),
                        isProvided);
        HookConfiguration c = configuration;
        if (c != null && !isProvided) {
            e.ready = configureEntry(e, c);
        }
        LOG.debug(
                "hook {} (index {}, timeout {}, {}) in chain {} for {}",
                n,
                e.policy.index(),
                e.policy.timeout(),
                e.policy.failurePolicy(),
                name,
                e.events);
        return e;
    }

    /** The names of the chain's hooks, in the order they are called. */
    public List<String> hookNames() {
        List<String> out = new ArrayList<>();
        entriesNow().forEach(e -> out.add(e.name));
        return out;
    }

    /** The policy of the hook named {@code hookName}, as the chain read it, or empty. */
    public Optional<HookPolicy> policyOf(String hookName) {
        for (Entry e : entriesNow()) {
            if (e.name.equals(hookName)) {
                return Optional.of(e.policy);
            }
        }
        return Optional.empty();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public HookPolicy policy() {
        return policy;
    }

    @Override
    public Set<HookEvent> events() {
        if (pinnedEvents != null) {
            return pinnedEvents;
        }
        List<Entry> now = entriesNow();
        EventsOf known = eventsOf;
        if (known != null && known.entries == now) {
            return known.events;
        }
        Set<HookEvent> out = EnumSet.noneOf(HookEvent.class);
        now.forEach(e -> out.addAll(e.events));
        Set<HookEvent> events = Collections.unmodifiableSet(out);
        eventsOf = new EventsOf(now, events);
        return events;
    }

    /** The events of a list of hooks (the last one {@link #events()} was asked for). */
    private record EventsOf(List<Entry> entries, Set<HookEvent> events) {}

    private volatile EventsOf eventsOf;

    // ---------------------------------------------------------------- calling one hook

    /**
     * Calls one hook, bounded by its timeout: completes with the answer or with a {@link
     * HookFailedException} / {@link HookTimeoutException}; never blocks.
     */
    @SuppressWarnings(
            "CollectionUndefinedEquality") // inflight's keys: each call's own future, by identity
    private <T> CompletableFuture<T> call(
            Entry e, String operation, HookEvent event, Supplier<CompletionStage<T>> invoke) {
        CompletableFuture<T> out = new CompletableFuture<>();
        if (closed.get()) {
            out.completeExceptionally(
                    new HookFailedException(
                            e.name,
                            event,
                            operation,
                            new IllegalStateException("the hook chain is closed")));
            return out;
        }
        CompletionStage<T> stage;
        try {
            stage = invoke.get();
            if (stage == null) {
                throw new NullPointerException("the hook returned no stage");
            }
        } catch (Throwable t) {
            out.completeExceptionally(failed(e, event, operation, t));
            return out;
        }
        if (stage instanceof CompletableFuture<T> cf && cf.isDone()) {
            finish(cf, out, e, event, operation);
            return out;
        }
        // Whoever settles the call first (the answer, the timer, close) decides it; a timer or
        // close cancels the hook's stage before completing the call, so the next hook never
        // runs beside a hook that is still going.
        AtomicBoolean settled = new AtomicBoolean();
        inflight.put(
                out,
                () ->
                        abandon(
                                settled,
                                stage,
                                out,
                                new HookFailedException(
                                        e.name,
                                        event,
                                        operation,
                                        new IllegalStateException(
                                                "the hook chain " + name + " was closed"))));
        out.whenComplete((v, t) -> inflight.remove(out));
        ScheduledFuture<?> late;
        try {
            late =
                    timer.schedule(
                            () ->
                                    abandon(
                                            settled,
                                            stage,
                                            out,
                                            new HookTimeoutException(
                                                    e.name, event, operation, e.policy.timeout())),
                            e.policy.timeout().toNanos(),
                            TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException ex) {
            abandon(
                    settled,
                    stage,
                    out,
                    new HookFailedException(
                            e.name,
                            event,
                            operation,
                            new IllegalStateException("the hook chain is closed")));
            return out;
        }
        stage.whenComplete(
                (v, t) -> {
                    late.cancel(false);
                    if (!settled.compareAndSet(false, true)) {
                        return;
                    }
                    if (t == null) {
                        out.complete(v);
                    } else {
                        out.completeExceptionally(failed(e, event, operation, unwrap(t)));
                    }
                });
        return out;
    }

    /**
     * Gives up on a hook's stage: cancels it (interrupting a blocking hook's worker) and only then
     * fails {@code out} with {@code why}, which runs what waits for the call; nothing when the call
     * was settled already.
     */
    private static <T> void abandon(
            AtomicBoolean settled,
            CompletionStage<T> stage,
            CompletableFuture<T> out,
            Throwable why) {
        if (settled.compareAndSet(false, true)) {
            cancel(stage);
            out.completeExceptionally(why);
        }
    }

    private static <T> void finish(
            CompletableFuture<T> cf,
            CompletableFuture<T> out,
            Entry e,
            HookEvent event,
            String operation) {
        try {
            out.complete(cf.join());
        } catch (CompletionException | CancellationException t) {
            out.completeExceptionally(failed(e, event, operation, unwrap(t)));
        }
    }

    private static void cancel(CompletionStage<?> stage) {
        try {
            stage.toCompletableFuture().cancel(true);
        } catch (UnsupportedOperationException ignored) {
            // a stage that cannot be cancelled is left to finish; its answer is dropped
        }
    }

    private static HookFailedException failed(
            Entry e, HookEvent event, String operation, Throwable t) {
        if (t instanceof HookFailedException f && f.hookName().equals(e.name)) {
            return f;
        }
        return new HookFailedException(e.name, event, operation, t);
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /**
     * Calls one hook under its failure policy: completes with its answer, with empty when the
     * hook failed under {@code IGNORE} (logged), or exceptionally under {@code FAIL}. An answer
     * {@code check} finds fault with (a message) is a failure of the hook.
     */
    private <T> CompletableFuture<Optional<T>> guarded(
            Entry e,
            String operation,
            HookEvent event,
            Supplier<CompletionStage<T>> invoke,
            Function<T, String> check,
            Object parentSpan) {
        return e.ready.thenCompose(
                ok -> {
                    if (!ok) {
                        return CompletableFuture.completedFuture(Optional.<T>empty());
                    }
                    Object span =
                            parentSpan == null
                                    ? null
                                    : tracing.start(
                                            parentSpan,
                                            "hook " + operation,
                                            Tracing.Kind.INTERNAL,
                                            "cri4j.hook.chain",
                                            name,
                                            "cri4j.hook.name",
                                            e.name,
                                            "cri4j.hook.event",
                                            operation);
                    Supplier<CompletionStage<T>> traced =
                            span == null
                                    ? invoke
                                    : () -> {
                                        Tracing.Scope scope = tracing.open(span);
                                        try {
                                            return invoke.get();
                                        } finally {
                                            scope.close();
                                        }
                                    };
                    long t0 = metrics.enabled() ? System.nanoTime() : 0;
                    return call(e, operation, event, traced)
                            .handle(
                                    (v, t) -> {
                                        Throwable failure = t == null ? null : unwrap(t);
                                        if (failure == null && check != null) {
                                            String bad =
                                                    v == null
                                                            ? "answered with null"
                                                            : check.apply(v);
                                            if (bad != null) {
                                                failure =
                                                        new HookFailedException(
                                                                e.name,
                                                                event,
                                                                operation,
                                                                new IllegalArgumentException(bad));
                                            }
                                        }
                                        if (metrics.enabled()) {
                                            recordHook(e, event, t0, v, failure);
                                        }
                                        if (span != null) {
                                            endHookSpan(span, e, v, failure);
                                        }
                                        if (failure == null) {
                                            return Optional.ofNullable(v);
                                        }
                                        return ignoreOrThrow(e, failure);
                                    });
                });
    }

    private void recordHook(Entry e, HookEvent event, long t0, Object v, Throwable failure) {
        String outcome = failure == null ? HookMetrics.answered(v) : HookMetrics.failure(failure);
        String ev = HookMetrics.event(event);
        metrics.hook(name, e.name, ev, System.nanoTime() - t0, outcome);
        if (failure != null && e.policy.failurePolicy() == FailurePolicy.IGNORE && !closed.get()) {
            metrics.ignored(name, e.name, ev, outcome);
        }
    }

    private void endHookSpan(Object span, Entry e, Object v, Throwable failure) {
        String outcome = failure == null ? HookMetrics.answered(v) : HookMetrics.failure(failure);
        if (failure != null && e.policy.failurePolicy() == FailurePolicy.IGNORE && !closed.get()) {
            tracing.end(span, failure, "cri4j.hook.outcome", outcome, "cri4j.hook.ignored", "true");
        } else {
            tracing.end(span, failure, "cri4j.hook.outcome", outcome);
        }
    }

    private <T> Optional<T> ignoreOrThrow(Entry e, Throwable failure) {
        if (e.policy.failurePolicy() == FailurePolicy.FAIL || closed.get()) {
            throw new CompletionException(failure);
        }
        LOG.warn("{} (ignored: failure policy Ignore)", failure.getMessage());
        return Optional.empty();
    }

    private static List<Entry> subscribed(List<Entry> all, HookEvent event) {
        List<Entry> out = new ArrayList<>();
        for (Entry e : all) {
            if (e.events.contains(event)) {
                out.add(e);
            }
        }
        return out;
    }

    /**
     * The stage a host sees: completes with the value or the unwrapped {@link HookException}. The
     * body runs with the event's hooks, held until the stage completes.
     */
    private <T> CompletionStage<T> outcome(Function<List<Entry>, CompletableFuture<T>> body) {
        CompletableFuture<T> out = new CompletableFuture<>();
        if (closed.get()) {
            out.completeExceptionally(
                    new IllegalStateException("the hook chain " + name + " is closed"));
            return out;
        }
        Held held;
        CompletableFuture<T> inner;
        try {
            held = hold();
        } catch (Throwable t) {
            out.completeExceptionally(t);
            return out;
        }
        try {
            inner = body.apply(held.entries);
        } catch (Throwable t) {
            held.release();
            out.completeExceptionally(t);
            return out;
        }
        inner.whenComplete(
                (v, t) -> {
                    held.release();
                    if (t == null) {
                        out.complete(v);
                    } else {
                        out.completeExceptionally(unwrap(t));
                    }
                });
        return out;
    }

    /**
     * Calls the hooks of {@code entries} subscribed to {@code event} (all of them for {@code
     * Synchronize}, {@code event} null) one after the other, each once the one before answered,
     * under its policy ({@link #guarded}); {@code take} gets each answer (none from a hook that
     * failed under {@code IGNORE}).
     */
    private <T> CompletableFuture<Void> inOrder(
            List<Entry> entries,
            HookEvent event,
            Function<Entry, CompletionStage<T>> invoke,
            Function<T, String> check,
            BiConsumer<Entry, T> take) {
        String operation = event == null ? "Synchronize" : event.displayName();
        CompletableFuture<Void> seq = CompletableFuture.completedFuture(null);
        List<Entry> called = event == null ? entries : subscribed(entries, event);
        if ((!metrics.enabled() && !tracing.enabled()) || called.isEmpty()) {
            return inOrderBody(called, event, operation, invoke, check, take, seq, null);
        }
        Object span =
                tracing.enabled()
                        ? tracing.start(
                                null,
                                "hooks " + operation,
                                Tracing.Kind.INTERNAL,
                                "cri4j.hook.chain",
                                name,
                                "cri4j.hook.event",
                                operation)
                        : null;
        long t0 = System.nanoTime();
        return inOrderBody(called, event, operation, invoke, check, take, seq, span)
                .whenComplete(
                        (x, t) -> {
                            String outcome = t == null ? HookMetrics.OK : HookMetrics.failure(t);
                            if (metrics.enabled()) {
                                metrics.chain(name, operation, System.nanoTime() - t0, outcome);
                            }
                            if (span != null) {
                                tracing.end(
                                        span,
                                        t == null ? null : unwrap(t),
                                        "cri4j.hook.outcome",
                                        outcome);
                            }
                        });
    }

    private <T> CompletableFuture<Void> inOrderBody(
            List<Entry> entries,
            HookEvent event,
            String operation,
            Function<Entry, CompletionStage<T>> invoke,
            Function<T, String> check,
            BiConsumer<Entry, T> take,
            CompletableFuture<Void> seq,
            Object span) {
        for (Entry e : entries) {
            seq =
                    seq.thenCompose(
                                    x ->
                                            guarded(
                                                    e,
                                                    operation,
                                                    event,
                                                    () -> invoke.apply(e),
                                                    check,
                                                    span))
                            .thenAccept(answer -> answer.ifPresent(v -> take.accept(e, v)));
        }
        return seq;
    }

    /** Calls {@code call} for each subscribed hook in order; answers are dropped. */
    private CompletionStage<Void> notifyAll(
            HookEvent event, Function<AsyncHook, CompletionStage<Void>> call) {
        return outcome(all -> inOrder(all, event, e -> call.apply(e.hook), null, (e, v) -> {}));
    }

    // ---------------------------------------------------------------- registration

    @Override
    public CompletionStage<Void> configure(HookConfiguration c) {
        Objects.requireNonNull(c, "configuration");
        return outcome(
                all -> {
                    configuration = c;
                    List<CompletableFuture<Boolean>> readies = new ArrayList<>();
                    for (Entry e : all) {
                        if (e.provided) {
                            continue;
                        }
                        e.ready = configureEntry(e, c);
                        readies.add(e.ready);
                    }
                    return CompletableFuture.allOf(readies.toArray(CompletableFuture[]::new))
                            .handle(
                                    (v, t) -> {
                                        firstFailure(readies);
                                        return null;
                                    });
                });
    }

    /** Completes true when configured, false when disabled (IGNORE), or fails (FAIL). */
    private CompletableFuture<Boolean> configureEntry(Entry e, HookConfiguration c) {
        return call(e, "Configure", null, () -> e.hook.configure(c))
                .handle(
                        (v, t) -> {
                            if (t == null) {
                                return true;
                            }
                            Throwable failure = unwrap(t);
                            if (e.policy.failurePolicy() == FailurePolicy.FAIL) {
                                throw new CompletionException(failure);
                            }
                            LOG.warn(
                                    "{} (hook disabled: failure policy Ignore)",
                                    failure.getMessage());
                            return false;
                        });
    }

    /** Throws the first failure among {@code done} (in order), the others suppressed. */
    private static void firstFailure(List<? extends CompletableFuture<?>> done) {
        Throwable first = null;
        for (CompletableFuture<?> f : done) {
            if (f.isCompletedExceptionally()) {
                Throwable t;
                try {
                    f.join();
                    continue;
                } catch (CompletionException | CancellationException ex) {
                    t = unwrap(ex);
                }
                if (first == null) {
                    first = t;
                } else if (first != t) {
                    first.addSuppressed(t);
                }
            }
        }
        if (first != null) {
            throw new CompletionException(first);
        }
    }

    @Override
    public CompletionStage<List<ContainerUpdate>> synchronize(
            List<PodSandbox> pods, List<Container> containers) {
        return outcome(
                all -> {
                    ContainerMerge merge = ContainerMerge.forUpdatesOnly(null);
                    List<Entry> own = new ArrayList<>();
                    for (Entry e : all) {
                        if (!e.provided) {
                            own.add(e);
                        }
                    }
                    CompletableFuture<Void> seq =
                            inOrder(
                                    own,
                                    null,
                                    e -> e.hook.synchronize(pods, containers),
                                    updates -> null,
                                    (e, u) -> merge.applyUpdates(e.name, u));
                    return seq.thenApply(x -> merge.result().updates());
                });
    }

    /** Tells every hook the host is shutting down (once); does not block. */
    @Override
    public void shutdown() {
        if (!shutDown.compareAndSet(false, true)) {
            return;
        }
        Snapshot s = snapshot;
        if (s != null) {
            s.entries.stream().filter(e -> !e.provided).forEach(this::shutdownQuietly);
        }
    }

    private void shutdownQuietly(Entry e) {
        try {
            e.hook.shutdown();
        } catch (RuntimeException ex) {
            LOG.warn("Shutdown: hook {} failed: {}", e.name, HookFailedException.describe(ex));
        }
    }

    /**
     * Shuts the hooks down (if {@link #shutdown()} was not called), fails the calls still waiting
     * for a hook, interrupts blocking hooks still running and stops the chain's threads, waiting
     * up to 5 s for them. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        shutdown();
        List.copyOf(inflight.values()).forEach(Runnable::run);
        workers.shutdown();
        timer.shutdownNow();
        try {
            if (!workers.awaitTermination(2, TimeUnit.SECONDS)) {
                workers.shutdownNow();
                if (!workers.awaitTermination(3, TimeUnit.SECONDS)) {
                    LOG.warn(
                            "hook chain {}: a blocking hook ignores interruption; its worker still runs",
                            name);
                }
            }
            timer.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            workers.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- pod events

    @Override
    public CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox pod) {
        return outcome(
                all -> {
                    PodMerge merge = new PodMerge(pod);
                    CompletableFuture<Void> seq =
                            inOrder(
                                    all,
                                    HookEvent.ADJUST_POD_SANDBOX,
                                    e -> e.hook.adjustPodSandbox(merge.pod()),
                                    a -> null,
                                    (e, a) -> merge.apply(e.name, a));
                    return seq.thenApply(x -> merge.result());
                });
    }

    @Override
    public CompletionStage<Void> runPodSandbox(PodSandbox pod) {
        return notifyAll(HookEvent.RUN_POD_SANDBOX, h -> h.runPodSandbox(pod));
    }

    @Override
    public CompletionStage<Void> updatePodSandbox(
            PodSandbox pod, LinuxResources overhead, LinuxResources resources) {
        return notifyAll(
                HookEvent.UPDATE_POD_SANDBOX, h -> h.updatePodSandbox(pod, overhead, resources));
    }

    @Override
    public CompletionStage<Void> postUpdatePodSandbox(PodSandbox pod) {
        return notifyAll(HookEvent.POST_UPDATE_POD_SANDBOX, h -> h.postUpdatePodSandbox(pod));
    }

    @Override
    public CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
        return notifyAll(HookEvent.STOP_POD_SANDBOX, h -> h.stopPodSandbox(pod));
    }

    @Override
    public CompletionStage<Void> removePodSandbox(PodSandbox pod) {
        return notifyAll(HookEvent.REMOVE_POD_SANDBOX, h -> h.removePodSandbox(pod));
    }

    // ---------------------------------------------------------------- container events

    @Override
    public CompletionStage<HookResult> createContainer(PodSandbox pod, Container container) {
        return createContainerDetailed(pod, container).thenApply(ContainerCreation::result);
    }

    /**
     * {@link #createContainer} with what a host needs beyond the merged answer: the container as
     * the hooks adjusted it and which hook set which field.
     */
    public CompletionStage<ContainerCreation> createContainerDetailed(
            PodSandbox pod, Container container) {
        return outcome(
                all -> {
                    ContainerMerge merge = ContainerMerge.forCreate(container);
                    CompletableFuture<Void> seq =
                            inOrder(
                                    all,
                                    HookEvent.CREATE_CONTAINER,
                                    e -> e.hook.createContainer(pod, merge.container()),
                                    merge::invalid,
                                    (e, r) -> merge.apply(e.name, r));
                    return seq.thenCompose(x -> validate(all, pod, container, merge))
                            .thenApply(x -> new ContainerCreation(merge.result(), merge));
                });
    }

    /** The validation phase: every subscribed validator in parallel; any rejection fails. */
    private CompletableFuture<Void> validate(
            List<Entry> all, PodSandbox pod, Container original, ContainerMerge merge) {
        List<Entry> validators = subscribed(all, HookEvent.VALIDATE_CONTAINER_ADJUSTMENT);
        if (!validateAdjustments || validators.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        HookResult merged = merge.result();
        ValidateContainerAdjustmentRequest.Builder req =
                ValidateContainerAdjustmentRequest.newBuilder()
                        .setPod(pod)
                        .setContainer(original)
                        .setAdjust(merged.adjustment())
                        .addAllUpdate(merged.updates())
                        .setOwners(merge.owners().toProto());
        for (Entry e : all) {
            req.addPlugins(
                    PluginInstance.newBuilder()
                            .setName(e.name)
                            .setIndex(String.format("%02d", e.policy.index())));
        }
        return validateAll(validators, req.build());
    }

    /** Asks {@code validators} in parallel; any rejection fails, naming the first. */
    private CompletableFuture<Void> validateAll(
            List<Entry> validators, ValidateContainerAdjustmentRequest request) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Entry v : validators) {
            all.add(
                    v.ready.thenCompose(
                            ok ->
                                    !ok
                                            ? CompletableFuture.<Void>completedFuture(null)
                                            : call(
                                                            v,
                                                            "ValidateContainerAdjustment",
                                                            HookEvent.VALIDATE_CONTAINER_ADJUSTMENT,
                                                            () ->
                                                                    v.hook
                                                                            .validateContainerAdjustment(
                                                                                    request))
                                                    .handle(
                                                            (x, t) ->
                                                                    t == null
                                                                            ? null
                                                                            : rejection(
                                                                                    v,
                                                                                    unwrap(t)))));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .handle(
                        (x, t) -> {
                            firstFailure(all);
                            return null;
                        });
    }

    /** A validator's failure: a timeout is a failure under its policy, anything else rejects. */
    private Void rejection(Entry v, Throwable t) {
        if (t instanceof HookTimeoutException) {
            ignoreOrThrow(v, t);
            return null;
        }
        Throwable cause =
                t instanceof HookFailedException && t.getCause() != null ? t.getCause() : t;
        if (cause instanceof HookRejectedException r) {
            throw new CompletionException(r);
        }
        throw new CompletionException(
                new HookRejectedException(v.name, HookFailedException.describe(cause), cause));
    }

    @Override
    public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container container) {
        return notifyAll(
                HookEvent.POST_CREATE_CONTAINER, h -> h.postCreateContainer(pod, container));
    }

    @Override
    public CompletionStage<Void> startContainer(PodSandbox pod, Container container) {
        return notifyAll(HookEvent.START_CONTAINER, h -> h.startContainer(pod, container));
    }

    @Override
    public CompletionStage<Void> postStartContainer(PodSandbox pod, Container container) {
        return notifyAll(HookEvent.POST_START_CONTAINER, h -> h.postStartContainer(pod, container));
    }

    /**
     * Each hook sees {@code resources} as earlier hooks updated them; the merged answer carries,
     * last, the update of this container with its complete resources when a hook changed them
     * (the host applies it instead of the requested resources), then other containers' updates,
     * and the evictions.
     */
    @Override
    public CompletionStage<HookResult> updateContainer(
            PodSandbox pod, Container container, LinuxResources resources) {
        return outcome(
                all -> {
                    ContainerMerge merge = ContainerMerge.forUpdate(container, resources);
                    CompletableFuture<Void> seq =
                            inOrder(
                                    all,
                                    HookEvent.UPDATE_CONTAINER,
                                    e ->
                                            e.hook.updateContainer(
                                                    pod, container, merge.requestedResources()),
                                    merge::invalid,
                                    (e, r) -> merge.apply(e.name, r));
                    return seq.thenApply(x -> merge.result());
                });
    }

    @Override
    public CompletionStage<Void> postUpdateContainer(PodSandbox pod, Container container) {
        return notifyAll(
                HookEvent.POST_UPDATE_CONTAINER, h -> h.postUpdateContainer(pod, container));
    }

    @Override
    public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container container) {
        return outcome(
                all -> {
                    ContainerMerge merge = ContainerMerge.forUpdatesOnly(HookEvent.STOP_CONTAINER);
                    CompletableFuture<Void> seq =
                            inOrder(
                                    all,
                                    HookEvent.STOP_CONTAINER,
                                    e -> e.hook.stopContainer(pod, container),
                                    merge::invalid,
                                    (e, r) -> merge.apply(e.name, r));
                    return seq.thenApply(x -> merge.result());
                });
    }

    @Override
    public CompletionStage<Void> removeContainer(PodSandbox pod, Container container) {
        return notifyAll(HookEvent.REMOVE_CONTAINER, h -> h.removeContainer(pod, container));
    }

    /**
     * Asks every subscribed validator, in parallel (for a host that runs the validation phase
     * itself); any rejection fails with a {@link HookRejectedException}.
     */
    @Override
    public CompletionStage<Void> validateContainerAdjustment(
            ValidateContainerAdjustmentRequest request) {
        return outcome(
                entries ->
                        validateAll(
                                subscribed(entries, HookEvent.VALIDATE_CONTAINER_ADJUSTMENT),
                                request));
    }

    @Override
    public String toString() {
        return "HookChain[" + name + ": " + hookNames() + "]";
    }

    private static ThreadFactory threads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
