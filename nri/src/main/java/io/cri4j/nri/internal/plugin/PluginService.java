package io.cri4j.nri.internal.plugin;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookException;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookRejectedException;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.HookTimeoutException;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.internal.Tracing;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.ConfigureResponse;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Empty;
import io.cri4j.hook.nri.v1alpha1.Event;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.StateChangeEvent;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeResponse;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentResponse;
import io.cri4j.nri.internal.NriMeters;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.PluginEvents;
import io.cri4j.nri.internal.ttrpc.TtrpcPeer;
import io.cri4j.nri.internal.ttrpc.TtrpcStatus;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NRI's plugin service ({@code nri.pkg.api.v1alpha1.Plugin}) served by one {@link AsyncHook}:
 * {@code Configure} (the hook's event mask), {@code Synchronize} (with the {@code more}
 * continuation), every pod and container event of NRI v0.12 as its own RPC, the older
 * {@code StateChange} form NRI v0.8 (containerd 2.0/2.1) uses for the events without an answer,
 * and {@code Shutdown}.
 *
 * <p>Each hook call is bounded: by the hook's {@link HookPolicy#timeout()} and by the runtime's
 * deadline (the request's {@code timeout_nano}, else the request timeout from {@code Configure}),
 * whichever comes first. The answer goes out a little before the runtime's deadline, so that the
 * runtime, which drops a plugin that misses one, keeps this one: with {@link FailurePolicy#IGNORE}
 * the answer is the empty one (no adjustment), with {@link FailurePolicy#FAIL} an error naming the
 * hook. A hook that fails is handled by the same policy, except for a {@link HookException}: that
 * is a {@link io.cri4j.hook.HookChain}'s verdict, reached under its hooks' own policies (a
 * conflict between two hooks, a hook that failed under FAIL), and fails the event. Runs on the connection's event loop; the
 * hook is called there and must not block ({@link io.cri4j.hook.Hooks#async} moves a blocking
 * hook to a worker).
 */
public final class PluginService implements TtrpcPeer.Service {

    private static final Logger LOG = LoggerFactory.getLogger(PluginService.class);

    private static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration DEFAULT_REGISTRATION_TIMEOUT = Duration.ofSeconds(5);

    /** Events of NRI v0.8 (containerd 2.0/2.1): 1..11; newer ones are refused by such runtimes. */
    private static final int V0_8_EVENTS = (1 << 11) - 1;

    /** What the service tells the connection it belongs to. */
    public interface Session {
        /** The runtime configured the plugin. */
        void configured(ConfigureRequest request);

        /** The handle the hook gets for unsolicited updates on this connection. */
        RuntimeHandle runtimeHandle();

        /** The answer to the final {@code Synchronize} is about to go out: the plugin is registered. */
        void synchronizedWithRuntime();

        /** The runtime announced that it shuts down. */
        void shutdownRequested();

        /** Answering {@code Configure} or {@code Synchronize} failed: the runtime will drop the plugin. */
        void registrationFailed(Throwable cause);

        /**
         * Whether to log that the runtime's NRI version lacks some of the hook's events: true the
         * first time for a plugin, false after that (reconnections to the same runtime).
         */
        default boolean firstVersionSkew() {
            return true;
        }
    }

    private final AsyncHook hook;
    private final String hookName;
    private final HookPolicy policy;
    private final Set<HookEvent> events;
    private final EventExecutor loop;
    private final Session session;
    private final Tracing tracing;
    private final NriMeters meters;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private final List<PodSandbox> syncPods = new ArrayList<>();
    private final List<Container> syncContainers = new ArrayList<>();

    /**
     * @param hook the hook; its methods are called on {@code loop}
     * @param policy the hook's policy, read once
     * @param events the hook's events, read once
     * @param loop the connection's event loop
     * @param session the connection
     */
    public PluginService(
            AsyncHook hook,
            HookPolicy policy,
            Set<HookEvent> events,
            EventExecutor loop,
            Session session) {
        this(hook, policy, events, loop, session, Tracing.NONE, NriMeters.NONE);
    }

    /**
     * As {@link #PluginService(AsyncHook, HookPolicy, Set, EventExecutor, Session)}, recording a
     * {@code SERVER} span of each request (its parent: the W3C trace context in the request's
     * metadata, when the runtime sends one; the hook runs in it) and each request's time and
     * outcome.
     */
    public PluginService(
            AsyncHook hook,
            HookPolicy policy,
            Set<HookEvent> events,
            EventExecutor loop,
            Session session,
            Tracing tracing,
            NriMeters meters) {
        this.tracing = tracing;
        this.meters = meters;
        this.hook = hook;
        this.hookName = hook.name();
        this.policy = policy;
        this.events = Set.copyOf(events);
        this.loop = loop;
        this.session = session;
    }

    @Override
    public CompletionStage<byte[]> handle(TtrpcPeer.Call call) {
        if (!NriWire.PLUGIN_SERVICE.equals(call.service())) {
            return failed(Status.Code.UNIMPLEMENTED, "service " + call.service());
        }
        if (tracing.enabled() || meters.enabled()) {
            return observed(call);
        }
        try {
            return dispatch(call).thenApply(Message::toByteArray);
        } catch (InvalidProtocolBufferException e) {
            return failed(
                    Status.Code.INVALID_ARGUMENT,
                    "cannot read the " + call.method() + " request: " + e.getMessage());
        }
    }

    /** {@link #handle} with a span and the request's time and outcome recorded. */
    private CompletionStage<byte[]> observed(TtrpcPeer.Call call) {
        long t0 = System.nanoTime();
        Object span = null;
        if (tracing.enabled()) {
            Object parent = tracing.extract(k -> metadata(call, k));
            span =
                    tracing.start(
                            parent,
                            NriWire.PLUGIN_SERVICE + "/" + call.method(),
                            Tracing.Kind.SERVER,
                            "rpc.system",
                            "ttrpc",
                            "rpc.service",
                            NriWire.PLUGIN_SERVICE,
                            "rpc.method",
                            call.method(),
                            "cri4j.nri.plugin",
                            hookName);
        }
        CompletionStage<? extends Message> answer;
        Tracing.Scope scope = tracing.open(span);
        try {
            answer = dispatch(call);
        } catch (InvalidProtocolBufferException e) {
            answer =
                    failed(
                            Status.Code.INVALID_ARGUMENT,
                            "cannot read the " + call.method() + " request: " + e.getMessage());
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        } finally {
            scope.close();
        }
        Object traced = span;
        return answer.whenComplete(
                        (v, t) -> {
                            String outcome =
                                    t == null
                                            ? "ok"
                                            : Status.fromCodeValue(TtrpcStatus.toProto(t).getCode())
                                                    .getCode()
                                                    .name()
                                                    .toLowerCase(java.util.Locale.ROOT);
                            meters.request(call.method(), System.nanoTime() - t0, outcome);
                            tracing.end(traced, t, "cri4j.nri.outcome", outcome);
                        })
                .thenApply(Message::toByteArray);
    }

    /** The value of metadata {@code key} of {@code call}, or null. */
    private static String metadata(TtrpcPeer.Call call, String key) {
        for (io.cri4j.nri.internal.proto.KeyValue kv : call.metadata()) {
            if (kv.getKey().equals(key)) {
                return kv.getValue();
            }
        }
        return null;
    }

    private CompletionStage<? extends Message> dispatch(TtrpcPeer.Call c)
            throws InvalidProtocolBufferException {
        byte[] p = c.payload();
        switch (c.method()) {
            case "Configure" -> {
                return configure(c, ConfigureRequest.parseFrom(p));
            }
            case "Synchronize" -> {
                return synchronize(c, SynchronizeRequest.parseFrom(p));
            }
            case "Shutdown" -> {
                session.shutdownRequested();
                return CompletableFuture.completedFuture(Empty.getDefaultInstance());
            }
            case "StateChange" -> {
                return stateChange(c, StateChangeEvent.parseFrom(p));
            }
            case "ValidateContainerAdjustment" -> {
                return validate(c, ValidateContainerAdjustmentRequest.parseFrom(p));
            }
            default -> {
                PluginEvents.Rpc rpc = PluginEvents.ofMethod(c.method());
                if (rpc == null) {
                    return failed(
                            Status.Code.UNIMPLEMENTED,
                            NriWire.PLUGIN_SERVICE
                                    + "/"
                                    + c.method()
                                    + " is not implemented by this plugin");
                }
                Message r = rpc.parseRequest(p);
                PodSandbox pod = rpc.pod(r);
                Container ctr = rpc.container(r);
                return event(c, rpc.event(), pod, ctr, rpc.overhead(r), rpc.resources(r))
                        .thenApply(h -> answer(rpc, h, ctr));
            }
        }
    }

    // --- registration -------------------------------------------------------------------

    private CompletionStage<ConfigureResponse> configure(TtrpcPeer.Call c, ConfigureRequest r) {
        if (r.getRequestTimeout() > 0) {
            requestTimeout = Duration.ofMillis(r.getRequestTimeout());
        }
        session.configured(r);
        int mask = HookEvent.nriMask(events);
        String runtime = r.getRuntimeName() + " " + r.getRuntimeVersion();
        if (!knowsV010Events(r.getNRIVersion()) && (mask & ~V0_8_EVENTS) != 0) {
            Set<HookEvent> dropped = HookEvent.fromNriMask(mask & ~V0_8_EVENTS);
            mask &= V0_8_EVENTS;
            String nri = r.getNRIVersion().isEmpty() ? "NRI v0.8" : "NRI " + r.getNRIVersion();
            if (session.firstVersionSkew()) {
                LOG.warn(
                        "hook '{}': {} speaks {}, which has no {} events (NRI v0.10 and later "
                                + "have them): {}",
                        hookName,
                        runtime,
                        nri,
                        NriWire.names(dropped),
                        mask == 0
                                ? "the hook gets no event from this runtime; the plugin stays "
                                        + "registered and gets them once the runtime is upgraded"
                                : "those hook methods will not be called, the others will");
            }
            if (mask == 0) {
                // 0 would mean every event: subscribe to one the service answers without
                // calling the hook (it does not subscribe to it)
                mask = HookEvent.REMOVE_POD_SANDBOX.nriMaskBit();
            }
        }
        HookConfiguration cfg =
                new HookConfiguration(
                        r.getConfig(),
                        r.getRuntimeName(),
                        r.getRuntimeVersion(),
                        millis(r.getRegistrationTimeout(), DEFAULT_REGISTRATION_TIMEOUT),
                        requestTimeout,
                        session.runtimeHandle());
        int events = mask;
        return reportFailure(
                bounded(
                                c,
                                "Configure",
                                "the runtime " + runtime,
                                FailurePolicy.FAIL,
                                () -> hook.configure(cfg),
                                null)
                        .thenApply(v -> ConfigureResponse.newBuilder().setEvents(events).build()));
    }

    private CompletionStage<SynchronizeResponse> synchronize(
            TtrpcPeer.Call c, SynchronizeRequest r) {
        meters.synchronize(r.getPodsCount(), r.getContainersCount());
        syncPods.addAll(r.getPodsList());
        syncContainers.addAll(r.getContainersList());
        if (r.getMore()) {
            LOG.debug(
                    "Synchronize: {} pods and {} containers so far, more to come",
                    syncPods.size(),
                    syncContainers.size());
            return CompletableFuture.completedFuture(
                    SynchronizeResponse.newBuilder().setMore(true).build());
        }
        List<PodSandbox> pods = List.copyOf(syncPods);
        List<Container> containers = List.copyOf(syncContainers);
        syncPods.clear();
        syncContainers.clear();
        return reportFailure(
                bounded(
                                c,
                                "Synchronize",
                                pods.size() + " pods and " + containers.size() + " containers",
                                FailurePolicy.FAIL,
                                () -> hook.synchronize(pods, containers),
                                List.<ContainerUpdate>of())
                        .thenApply(
                                updates -> {
                                    session.synchronizedWithRuntime();
                                    return SynchronizeResponse.newBuilder()
                                            .addAllUpdate(updates)
                                            .build();
                                }));
    }

    private <T> CompletionStage<T> reportFailure(CompletionStage<T> stage) {
        return stage.whenComplete(
                (v, t) -> {
                    if (t != null) {
                        session.registrationFailed(TtrpcStatus.unwrap(t));
                    }
                });
    }

    // --- events ---------------------------------------------------------------------------

    /** NRI v0.8's form of the events that have no answer: the same hook call, answered empty. */
    private CompletionStage<Empty> stateChange(TtrpcPeer.Call c, StateChangeEvent e) {
        Empty empty = Empty.getDefaultInstance();
        PluginEvents.Rpc rpc = stateChangeEvent(e.getEvent());
        if (rpc == null) {
            LOG.debug(
                    "StateChange for {} has no hook method without an answer; ignored",
                    e.getEvent());
            return CompletableFuture.completedFuture(empty);
        }
        // a pod event's call has no container, a container event's call has one
        Container ctr = rpc.container(rpc.request()) == null ? null : e.getContainer();
        return event(c, rpc.event(), e.getPod(), ctr, null, null).thenApply(h -> empty);
    }

    /** The per-event call that NRI v0.8 sends as {@code StateChange} {@code ev}, or null. */
    private static PluginEvents.Rpc stateChangeEvent(Event ev) {
        for (HookEvent h : HookEvent.values()) {
            if (h.name().equals(ev.name())) {
                PluginEvents.Rpc rpc = PluginEvents.ofMethod(h.displayName());
                return rpc != null && rpc.stateChange() ? rpc : null;
            }
        }
        return null;
    }

    /**
     * Runs the hook's method for {@code event}, bounded by the runtime's deadline and the hook's
     * policy; the pod and container events that return nothing give an empty result.
     */
    private CompletionStage<HookResult> event(
            TtrpcPeer.Call c,
            HookEvent event,
            PodSandbox pod,
            Container ctr,
            LinuxResources overhead,
            LinuxResources resources) {
        if (!events.contains(event)) {
            return CompletableFuture.completedFuture(HookResult.none());
        }
        return bounded(
                        c,
                        event.displayName(),
                        ctr == null ? "pod " + describe(pod) : "container " + describe(pod, ctr),
                        policy.failurePolicy(),
                        () -> hookCall(event, pod, ctr, overhead, resources),
                        HookResult.none())
                .thenApply(h -> h == null ? HookResult.none() : h);
    }

    /** The typed hook method of {@code event}: the one place the events meet the hook's API. */
    private CompletionStage<HookResult> hookCall(
            HookEvent event,
            PodSandbox pod,
            Container ctr,
            LinuxResources overhead,
            LinuxResources resources) {
        return switch (event) {
            case RUN_POD_SANDBOX -> none(hook.runPodSandbox(pod));
            case UPDATE_POD_SANDBOX -> none(hook.updatePodSandbox(pod, overhead, resources));
            case POST_UPDATE_POD_SANDBOX -> none(hook.postUpdatePodSandbox(pod));
            case STOP_POD_SANDBOX -> none(hook.stopPodSandbox(pod));
            case REMOVE_POD_SANDBOX -> none(hook.removePodSandbox(pod));
            case CREATE_CONTAINER -> hook.createContainer(pod, ctr);
            case POST_CREATE_CONTAINER -> none(hook.postCreateContainer(pod, ctr));
            case START_CONTAINER -> none(hook.startContainer(pod, ctr));
            case POST_START_CONTAINER -> none(hook.postStartContainer(pod, ctr));
            case UPDATE_CONTAINER -> hook.updateContainer(pod, ctr, resources);
            case POST_UPDATE_CONTAINER -> none(hook.postUpdateContainer(pod, ctr));
            case STOP_CONTAINER -> hook.stopContainer(pod, ctr);
            case REMOVE_CONTAINER -> none(hook.removeContainer(pod, ctr));
            default -> throw new IllegalArgumentException(event + " has no per-event hook call");
        };
    }

    private static CompletionStage<HookResult> none(CompletionStage<Void> stage) {
        return stage == null ? null : stage.thenApply(v -> HookResult.none());
    }

    /** The result as {@code rpc}'s answer, with a warning for what the answer cannot carry. */
    private Message answer(PluginEvents.Rpc rpc, HookResult h, Container ctr) {
        String subject = ctr == null ? "" : " of " + ctr.getId();
        if (!rpc.answersEvictions() && !h.evictions().isEmpty()) {
            LOG.warn(
                    "hook '{}' asked to evict {} containers on {}{}; NRI's answer to it carries no "
                            + "evictions, they are dropped",
                    hookName,
                    h.evictions().size(),
                    rpc.method(),
                    subject);
        }
        if (!rpc.answersAdjustment()
                && !h.adjustment().equals(ContainerAdjustment.getDefaultInstance())) {
            LOG.warn(
                    "hook '{}' answered {}{} with an adjustment; only CreateContainer adjusts a "
                            + "container, it is dropped",
                    hookName,
                    rpc.method(),
                    subject);
        }
        return rpc.answer(h);
    }

    private CompletionStage<ValidateContainerAdjustmentResponse> validate(
            TtrpcPeer.Call c, ValidateContainerAdjustmentRequest r) {
        ValidateContainerAdjustmentResponse accept =
                ValidateContainerAdjustmentResponse.getDefaultInstance();
        if (!events.contains(HookEvent.VALIDATE_CONTAINER_ADJUSTMENT)) {
            return CompletableFuture.completedFuture(accept);
        }
        CompletableFuture<ValidateContainerAdjustmentResponse> out = new CompletableFuture<>();
        CompletionStage<Void> stage;
        try {
            stage = hook.validateContainerAdjustment(r);
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Void> rejected = new CompletableFuture<>();
        stage.whenComplete(
                (v, t) -> {
                    if (t != null) {
                        rejected.completeExceptionally(t);
                    } else {
                        rejected.complete(null);
                    }
                });
        // a rejection is the answer, not a failure: only a timeout goes by the failure policy
        bounded(
                        c,
                        "ValidateContainerAdjustment",
                        "container " + describe(r.getPod(), r.getContainer()),
                        policy.failurePolicy(),
                        () -> rejected.handle((v, t) -> t),
                        null)
                .whenComplete(
                        (t, timeout) -> {
                            if (timeout != null) {
                                out.complete(
                                        ValidateContainerAdjustmentResponse.newBuilder()
                                                .setReject(true)
                                                .setReason(message(timeout))
                                                .build());
                            } else if (t != null) {
                                out.complete(
                                        ValidateContainerAdjustmentResponse.newBuilder()
                                                .setReject(true)
                                                .setReason("hook '" + hookName + "': " + message(t))
                                                .build());
                            } else {
                                out.complete(accept);
                            }
                        });
        return out;
    }

    // --- bounding -------------------------------------------------------------------------

    /**
     * Calls the hook and bounds the call: see the class comment. Completes on the loop with the
     * hook's value, the fallback (IGNORE), or fails with a status naming the hook (FAIL).
     */
    private <T> CompletionStage<T> bounded(
            TtrpcPeer.Call c,
            String what,
            String subject,
            FailurePolicy failurePolicy,
            Supplier<CompletionStage<T>> call,
            T fallback) {
        long start = System.nanoTime();
        long runtimeDeadline =
                c.deadlineNanos().orElse(c.receivedNanos() + requestTimeout.toNanos());
        long runtimeBudget = runtimeDeadline - start;
        long margin = Math.min(TimeUnit.MILLISECONDS.toNanos(100), Math.max(0, runtimeBudget / 10));
        long budget = Math.max(TimeUnit.MILLISECONDS.toNanos(1), runtimeBudget - margin);
        long own = policy.timeout().toNanos();
        boolean ownFirst = own <= budget;
        long limit = Math.min(own, budget);

        CompletableFuture<T> out = new CompletableFuture<>();
        CompletionStage<T> stage;
        try {
            stage = call.get();
            if (stage == null) {
                stage =
                        CompletableFuture.failedFuture(
                                new NullPointerException("hook returned no stage"));
            }
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        CompletionStage<T> hookStage = stage;
        ScheduledFuture<?> timer =
                loop.schedule(
                        () -> {
                            if (out.isDone()) {
                                return;
                            }
                            String why =
                                    ownFirst
                                            ? String.format(
                                                    "hook '%s' did not answer %s of %s within its timeout of %s",
                                                    hookName, what, subject, human(own))
                                            : String.format(
                                                    "hook '%s' is late: no answer to %s of %s after %s, and the "
                                                            + "runtime gives up after %s",
                                                    hookName,
                                                    what,
                                                    subject,
                                                    human(limit),
                                                    human(runtimeBudget));
                            if (failurePolicy == FailurePolicy.IGNORE) {
                                LOG.warn(
                                        "{}; answering without its result (failure policy IGNORE)",
                                        why);
                                out.complete(fallback);
                            } else {
                                LOG.warn("{}; answering with an error (failure policy FAIL)", why);
                                out.completeExceptionally(
                                        TtrpcStatus.error(Status.Code.DEADLINE_EXCEEDED, why));
                            }
                            // after answering: cancelling completes the hook's stage (and
                            // interrupts a blocking hook)
                            hookStage.toCompletableFuture().cancel(true);
                        },
                        limit,
                        TimeUnit.NANOSECONDS);
        hookStage.whenComplete(
                (v, t) ->
                        onLoop(
                                () -> {
                                    if (out.isDone()) {
                                        if (!(TtrpcStatus.unwrap(t)
                                                instanceof
                                                java.util.concurrent.CancellationException)) {
                                            LOG.info(
                                                    "hook '{}' answered {} of {} after {}, too late; the answer was "
                                                            + "dropped",
                                                    hookName,
                                                    what,
                                                    subject,
                                                    human(System.nanoTime() - start));
                                        }
                                        return;
                                    }
                                    timer.cancel(false);
                                    if (t == null) {
                                        out.complete(v);
                                        return;
                                    }
                                    Throwable cause = TtrpcStatus.unwrap(t);
                                    if (cause instanceof HookException h) {
                                        // a HookChain's verdict, reached under its hooks' own
                                        // policies: it fails the event
                                        LOG.warn("{}: {} of {}", h.getMessage(), what, subject);
                                        out.completeExceptionally(
                                                TtrpcStatus.error(
                                                        code(h),
                                                        h.getMessage()
                                                                + " ("
                                                                + what
                                                                + " of "
                                                                + subject
                                                                + ")"));
                                        return;
                                    }
                                    String why =
                                            "hook '"
                                                    + hookName
                                                    + "' failed at "
                                                    + what
                                                    + " of "
                                                    + subject
                                                    + ": "
                                                    + message(t);
                                    if (failurePolicy == FailurePolicy.IGNORE) {
                                        LOG.warn(
                                                "{}; going on without its result (failure policy IGNORE)",
                                                why);
                                        out.complete(fallback);
                                    } else {
                                        LOG.warn("{} (failure policy FAIL)", why);
                                        Status.Code code =
                                                cause instanceof StatusRuntimeException s
                                                        ? s.getStatus().getCode()
                                                        : Status.Code.UNKNOWN;
                                        out.completeExceptionally(TtrpcStatus.error(code, why));
                                    }
                                }));
        return out;
    }

    private static Status.Code code(HookException e) {
        if (e instanceof HookTimeoutException) {
            return Status.Code.DEADLINE_EXCEEDED;
        }
        if (e instanceof HookConflictException) {
            return Status.Code.FAILED_PRECONDITION;
        }
        if (e instanceof HookRejectedException) {
            return Status.Code.PERMISSION_DENIED;
        }
        return Status.Code.UNKNOWN;
    }

    private void onLoop(Runnable r) {
        if (loop.inEventLoop()) {
            r.run();
        } else {
            try {
                loop.execute(r);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                LOG.debug("event loop gone; dropping a late hook answer");
            }
        }
    }

    private static String message(Throwable t) {
        Throwable c = TtrpcStatus.unwrap(t);
        if (c instanceof StatusRuntimeException s) {
            String d = s.getStatus().getDescription();
            return d == null ? s.getStatus().getCode().toString() : d;
        }
        return c.getMessage() == null ? c.getClass().getName() : c.getMessage();
    }

    private static <T> CompletionStage<T> failed(Status.Code code, String message) {
        return CompletableFuture.failedFuture(TtrpcStatus.error(code, message));
    }

    private static Duration millis(long ms, Duration dflt) {
        return ms > 0 ? Duration.ofMillis(ms) : dflt;
    }

    static String describe(PodSandbox pod) {
        return pod.getNamespace() + "/" + pod.getName();
    }

    static String describe(PodSandbox pod, Container c) {
        String id = c.getId().length() > 12 ? c.getId().substring(0, 12) : c.getId();
        return pod.getNamespace() + "/" + pod.getName() + "/" + c.getName() + " (" + id + ")";
    }

    /**
     * Whether a runtime sending this NRI version in {@code Configure} knows the events NRI v0.10
     * added ({@code UpdatePodSandbox}, {@code PostUpdatePodSandbox}, {@code
     * ValidateContainerAdjustment}). NRI v0.8 sends no version; a version that cannot be read is
     * taken as a newer one (only newer runtimes send one).
     */
    static boolean knowsV010Events(String nriVersion) {
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("v?(\\d+)\\.(\\d+)(\\D.*)?").matcher(nriVersion);
        if (nriVersion.isEmpty()) {
            return false;
        }
        if (!m.matches()) {
            return true;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        return major > 0 || minor >= 10;
    }

    static String human(long nanos) {
        if (nanos >= TimeUnit.SECONDS.toNanos(1)) {
            return String.format("%.1f s", nanos / 1e9);
        }
        return TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
    }
}
