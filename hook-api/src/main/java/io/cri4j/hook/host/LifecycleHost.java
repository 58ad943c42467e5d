package io.cri4j.hook.host;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.internal.AsyncGate;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NRI's runtime side, the role NRI's Go {@code pkg/adaptation} plays in containerd and CRI-O: the
 * state machine that turns a runtime's pod and container lifecycle into hook events in the order
 * NRI defines, with the contracts of cri-tools' NRI conformance specs. The cri4j CRI proxy and the
 * fake runtime are adapters of it: they hand each lifecycle call to the matching method here with
 * the step that reaches their runtime (the backend call, the fake's state change), and implement
 * {@link Runtime} for NRI's views of what the runtime holds and for the calls the host makes on
 * its own (undoing a refused pod, applying updates and evictions).
 *
 * <p>What it guarantees:
 *
 * <ul>
 *   <li><b>A pod is not ready until its hooks are done.</b> From the runtime's answer to {@code
 *       RunPodSandbox} until its {@code RunPodSandbox} hooks have finished the pod is pending:
 *       adapters hide it from {@code ListPodSandbox} and {@code PodSandboxStatus} ({@link
 *       #isPending}), and {@link #createContainer} into it fails with {@code FAILED_PRECONDITION}, as
 *       it does into a stopped pod (before any hook hears of it).
 *       A container is likewise pending until its {@code CreateContainer} hooks are done, and
 *       {@link #startContainer} of it fails.
 *   <li><b>Undo.</b> A pod whose {@code RunPodSandbox} hooks fail is stopped and removed in the
 *       runtime ({@link Runtime#undoPodSandbox}) and the call fails with the hook's status, so a
 *       retry starts clean; a container the runtime failed to create is announced to the hooks as
 *       stopped and removed, as containerd does.
 *   <li><b>Once each.</b> {@code StopPodSandbox}, {@code StopContainer}, {@code RemovePodSandbox}
 *       and {@code RemoveContainer} reach the hooks once per object however often the calls come;
 *       a container that exits by itself produces {@code StopContainer} once the adapter reports
 *       it ({@link #containerExited}); stopping a pod announces the stop of its running
 *       containers first, removing it the removal of its containers.
 *   <li><b>Registration without a gap.</b> A hook that connects while the host runs (an external
 *       NRI plugin of a {@link HookProvider}) registers through {@link #register}: lifecycle
 *       events in progress finish first, new ones wait until the hook is listed, so an object
 *       created meanwhile reaches it exactly once, in its {@code Synchronize} or as an event.
 * </ul>
 *
 * <p>Pre-events ({@code AdjustPodSandbox}, {@code CreateContainer}, {@code StartContainer}, {@code
 * UpdateContainer}, {@code UpdatePodSandbox}, and {@code RunPodSandbox}, which runs once the pod
 * exists) fail the call with the hook's status; the others come after the runtime's step and
 * their failures are logged. Never blocks a thread.
 */
public final class LifecycleHost implements HookHost, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LifecycleHost.class);

    /** What the host asks of the runtime behind it, besides the step of the call in progress. */
    @SuppressWarnings(
            "JavaLangClash") // named only as LifecycleHost.Runtime; renaming would break users
    public interface Runtime {
        /** NRI's view of pod {@code id} as the runtime holds it now; empty when unknown. */
        Optional<PodSandbox> pod(String id);

        /** NRI's view of container {@code id} as the runtime holds it now; empty when unknown. */
        Optional<Container> container(String id);

        /** Every pod and container the runtime holds now (pending ones included). */
        RuntimeSnapshot snapshot();

        /**
         * Stops and removes a pod whose {@code RunPodSandbox} hooks failed. The stage's failure is
         * logged; the call fails with the hook's status either way.
         */
        CompletionStage<?> undoPodSandbox(String id);

        /**
         * Applies hooks' updates (resources of other containers) and evictions (stops); an
         * evicted container's stop is reported back through {@link #containerExited}.
         *
         * @param what the event that asked, for messages
         * @return the updates that failed; never fails
         */
        CompletionStage<List<ContainerUpdate>> apply(
                List<ContainerUpdate> updates, List<ContainerEviction> evictions, String what);
    }

    /** Configures a {@link LifecycleHost}. */
    public static final class Builder {
        private HookChain chain;
        private Runtime runtime;
        private String runtimeName = "cri4j";
        private String runtimeVersion = "";
        private DeviceNodes devices = DeviceNodes.system();
        private Duration registrationTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(2);
        private Predicate<PodSandbox> unhooked = p -> false;
        private RuntimeFeatures features = RuntimeFeatures.ALL;

        private Builder() {}

        /**
         * What the runtime honours of the fields CRI carries; what it would drop is reported like
         * a field CRI cannot carry. Default {@link RuntimeFeatures#ALL}.
         */
        public Builder features(RuntimeFeatures features) {
            this.features = Objects.requireNonNull(features, "features");
            return this;
        }

        /** The hooks (required). The host closes the chain when it closes. */
        public Builder chain(HookChain chain) {
            this.chain = Objects.requireNonNull(chain, "chain");
            return this;
        }

        /** The runtime behind the host (required). */
        public Builder runtime(Runtime runtime) {
            this.runtime = Objects.requireNonNull(runtime, "runtime");
            return this;
        }

        /** The runtime's name and version as hooks see them in {@code Configure}. */
        public Builder runtimeName(String name, String version) {
            this.runtimeName = Objects.requireNonNull(name, "name");
            this.runtimeVersion = Objects.requireNonNull(version, "version");
            return this;
        }

        /** Where the device nodes of CRI devices are found; default the system's. */
        public Builder devices(DeviceNodes devices) {
            this.devices = Objects.requireNonNull(devices, "devices");
            return this;
        }

        /** How long a hook may take to register and synchronize; default 5 s (containerd's). */
        public Builder registrationTimeout(Duration timeout) {
            this.registrationTimeout = positive(timeout, "registrationTimeout");
            return this;
        }

        /** The request timeout hooks are told in {@code Configure}; default 2 s (containerd's). */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "requestTimeout");
            return this;
        }

        /**
         * Pods (and their containers) no hook is called for, e.g. Koordinator's {@code
         * runtimeproxy.koordinator.sh/skip-hookserver} label; their state is kept all the same.
         */
        public Builder unhooked(Predicate<PodSandbox> pods) {
            this.unhooked = Objects.requireNonNull(pods, "pods");
            return this;
        }

        /** The host; {@link #start()} it before the first call. */
        public LifecycleHost build() {
            Objects.requireNonNull(chain, "chain is required");
            Objects.requireNonNull(runtime, "runtime is required");
            return new LifecycleHost(this);
        }

        private static Duration positive(Duration d, String what) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive");
            }
            return d;
        }
    }

    /** Where a pod is in its lifecycle, as far as hooks are concerned. */
    private enum PodPhase {
        PENDING,
        READY,
        STOPPED
    }

    /** Where a container is in its lifecycle, as far as hooks are concerned. */
    private enum CtrPhase {
        PENDING,
        CREATED,
        RUNNING,
        STOPPED
    }

    private final HookChain chain;
    private final Runtime runtime;
    private final String runtimeName;
    private volatile String runtimeVersion;
    private final DeviceNodes devices;
    private volatile CriAdjuster adjuster;
    private final Duration registrationTimeout;
    private final Duration requestTimeout;
    private final Predicate<PodSandbox> unhooked;
    private final Map<String, PodPhase> pods = new ConcurrentHashMap<>();
    private final Map<String, CtrPhase> containers = new ConcurrentHashMap<>();
    private final AsyncGate gate = new AsyncGate();
    private final AtomicLong drafts = new AtomicLong();

    private LifecycleHost(Builder b) {
        this.chain = b.chain;
        this.runtime = b.runtime;
        this.runtimeName = b.runtimeName;
        this.runtimeVersion = b.runtimeVersion;
        this.devices = b.devices;
        this.adjuster = CriAdjuster.create(b.devices, b.features);
        this.registrationTimeout = b.registrationTimeout;
        this.requestTimeout = b.requestTimeout;
        this.unhooked = b.unhooked;
    }

    /** A new builder. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Configures the chain's hooks and synchronizes them with the runtime's state, applying the
     * updates they answer with; waits up to twice the registration timeout.
     *
     * @throws IllegalStateException when a hook under {@code Fail} cannot be configured or
     *     synchronized
     */
    public void start() {
        HookConfiguration config =
                new HookConfiguration(
                        "",
                        runtimeName,
                        runtimeVersion,
                        registrationTimeout,
                        requestTimeout,
                        runtime());
        long wait = registrationTimeout.toMillis() * 2;
        try {
            chain.configure(config).toCompletableFuture().get(wait, TimeUnit.MILLISECONDS);
            RuntimeSnapshot s = runtime.snapshot();
            List<ContainerUpdate> updates =
                    chain.synchronize(s.pods(), s.containers())
                            .toCompletableFuture()
                            .get(wait, TimeUnit.MILLISECONDS);
            runtime.apply(updates, List.of(), "Synchronize")
                    .toCompletableFuture()
                    .get(wait + 60_000, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(
                    runtimeName + " hooks: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(
                    runtimeName + " hooks did not register within " + registrationTimeout, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while registering hooks", e);
        }
    }

    /** The chain the hooks run in. */
    public HookChain chain() {
        return chain;
    }

    /** Whether pod {@code id}'s {@code RunPodSandbox} hooks are still running. */
    public boolean isPending(String podId) {
        return pods.get(podId) == PodPhase.PENDING;
    }

    /** Whether any pod is pending now (so that adapters filter lists only when needed). */
    public boolean anyPending() {
        return pods.containsValue(PodPhase.PENDING);
    }

    // ---------------------------------------------------------------- HookHost

    @Override
    public String runtimeName() {
        return runtimeName;
    }

    @Override
    public String runtimeVersion() {
        return runtimeVersion;
    }

    /**
     * The runtime behind the host changed (upgraded, or another one answers on its socket now):
     * requests from now on are adjusted for what {@code features} says it honours, and hooks that
     * register from now on are told {@code version}. Hooks registered before keep the version they
     * were configured with, as NRI plugins do when a runtime is upgraded under them.
     *
     * @param version the runtime's version, as {@link Builder#runtimeName} took it
     * @param features what it honours
     */
    public void runtimeChanged(String version, RuntimeFeatures features) {
        this.adjuster = CriAdjuster.create(devices, Objects.requireNonNull(features, "features"));
        this.runtimeVersion = Objects.requireNonNull(version, "version");
    }

    @Override
    public CompletionStage<RuntimeSnapshot> snapshot() {
        try {
            return CompletableFuture.completedFuture(visible(runtime.snapshot()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** The snapshot without pending pods and their containers. */
    private RuntimeSnapshot visible(RuntimeSnapshot s) {
        if (!anyPending()) {
            return s;
        }
        return new RuntimeSnapshot(
                s.pods().stream().filter(p -> !isPending(p.getId())).toList(),
                s.containers().stream().filter(c -> !isPending(c.getPodSandboxId())).toList());
    }

    @Override
    public RuntimeHandle runtime() {
        return (updates, evictions) -> runtime.apply(updates, evictions, "UpdateContainers");
    }

    /**
     * Runs a new hook's registration alone: events in progress finish first, new events wait until
     * {@code register}'s stage completes (at most the registration timeout), so the snapshot it is
     * given and the events after it neither miss nor repeat an object.
     */
    @Override
    public <T> CompletionStage<T> register(Function<RuntimeSnapshot, CompletionStage<T>> register) {
        return gate.exclusive(
                () ->
                        register.apply(visible(runtime.snapshot()))
                                .toCompletableFuture()
                                .orTimeout(
                                        registrationTimeout.toMillis() * 2, TimeUnit.MILLISECONDS));
    }

    // ---------------------------------------------------------------- pods

    /**
     * {@code RunPodSandbox}: {@code AdjustPodSandbox} hooks adjust the request, {@code run} makes
     * the pod in the runtime, the pod is pending while its {@code RunPodSandbox} hooks run, then
     * ready; when they fail the pod is undone and the call fails with their status.
     *
     * @param run the runtime's step, given the adjusted request
     * @param idOf the new pod's id in the runtime's answer
     */
    public <R> CompletionStage<R> runPodSandbox(
            RunPodSandboxRequest request,
            Function<RunPodSandboxRequest, CompletionStage<R>> run,
            Function<R, String> idOf) {
        return gate.shared(
                () -> {
                    PodSandbox draft = NriFromCri.pod("", request);
                    if (unhooked.test(draft)) {
                        return run.apply(request)
                                .thenApply(
                                        r -> {
                                            pods.put(idOf.apply(r), PodPhase.READY);
                                            return r;
                                        });
                    }
                    return pre(chain.adjustPodSandbox(draft))
                            .thenApply(
                                    a ->
                                            enforce(
                                                    adjuster.apply(request, a),
                                                    HookEvent.ADJUST_POD_SANDBOX))
                            .thenCompose(run)
                            .thenCompose(r -> podRunning(idOf.apply(r), r));
                });
    }

    private <R> CompletionStage<R> podRunning(String id, R answer) {
        pods.put(id, PodPhase.PENDING);
        return chain.runPodSandbox(podView(id))
                .handle((v, t) -> t)
                .thenCompose(
                        failure -> {
                            if (failure == null) {
                                pods.put(id, PodPhase.READY);
                                return CompletableFuture.completedFuture(answer);
                            }
                            return undoPod(id, failure);
                        });
    }

    private <R> CompletionStage<R> undoPod(String id, Throwable failure) {
        Status status = HookStatuses.of(failure);
        LOG.warn(
                "RunPodSandbox of {} failed in its hooks, removing the pod: {}",
                id,
                status.getDescription());
        return safely(() -> runtime.undoPodSandbox(id))
                .handle(
                        (v, t) -> {
                            pods.remove(id);
                            if (t != null) {
                                LOG.warn(
                                        "could not remove pod {} its hooks refused: {}",
                                        id,
                                        message(t));
                            }
                            throw new CompletionException(status.asException());
                        });
    }

    /**
     * {@code StopPodSandbox}: {@code stop} stops the pod in the runtime; the first stop of a pod
     * the runtime knows announces the stop of its running containers, then the pod's.
     */
    public <R> CompletionStage<R> stopPodSandbox(String id, Supplier<CompletionStage<R>> stop) {
        return gate.shared(
                () -> {
                    Optional<PodSandbox> pod = runtime.pod(id);
                    List<Container> members = pod.isPresent() ? containersOf(id) : List.of();
                    return stop.get()
                            .thenCompose(
                                    r -> {
                                        if (pod.isEmpty()
                                                || pods.put(id, PodPhase.STOPPED)
                                                        == PodPhase.STOPPED) {
                                            return CompletableFuture.completedFuture(r);
                                        }
                                        return stopAll(members, pod.get())
                                                .thenCompose(
                                                        v ->
                                                                post(
                                                                        HookEvent.STOP_POD_SANDBOX,
                                                                        pod.get(),
                                                                        () ->
                                                                                chain
                                                                                        .stopPodSandbox(
                                                                                                podView(
                                                                                                        id))))
                                                .thenApply(v -> r);
                                    });
                });
    }

    /**
     * {@code RemovePodSandbox}: {@code remove} removes the pod in the runtime; the first removal
     * of a pod the runtime knew announces its stop (if not yet announced) and the removal of its
     * containers, then its own.
     */
    public <R> CompletionStage<R> removePodSandbox(String id, Supplier<CompletionStage<R>> remove) {
        return gate.shared(
                () -> {
                    Optional<PodSandbox> pod = runtime.pod(id);
                    List<Container> members = pod.isPresent() ? containersOf(id) : List.of();
                    return remove.get()
                            .thenCompose(
                                    r -> {
                                        PodPhase was = pods.remove(id);
                                        if (pod.isEmpty()) {
                                            return CompletableFuture.completedFuture(r);
                                        }
                                        CompletionStage<Void> before =
                                                was == PodPhase.STOPPED
                                                        ? done()
                                                        : stopAll(members, pod.get())
                                                                .thenCompose(
                                                                        v ->
                                                                                post(
                                                                                        HookEvent
                                                                                                .STOP_POD_SANDBOX,
                                                                                        pod.get(),
                                                                                        () ->
                                                                                                chain
                                                                                                        .stopPodSandbox(
                                                                                                                pod
                                                                                                                        .get())));
                                        return before.thenCompose(
                                                        v -> removeAll(members, pod.get()))
                                                .thenCompose(
                                                        v ->
                                                                post(
                                                                        HookEvent
                                                                                .REMOVE_POD_SANDBOX,
                                                                        pod.get(),
                                                                        () ->
                                                                                chain
                                                                                        .removePodSandbox(
                                                                                                pod
                                                                                                        .get())))
                                                .thenApply(v -> r);
                                    });
                });
    }

    /**
     * {@code UpdatePodSandboxResources}: {@code UpdatePodSandbox} hooks (which may refuse it), the
     * runtime's step, then {@code PostUpdatePodSandbox}.
     */
    public <R> CompletionStage<R> updatePodSandbox(
            UpdatePodSandboxResourcesRequest request, Supplier<CompletionStage<R>> update) {
        String id = request.getPodSandboxId();
        return gate.shared(
                () -> {
                    PodSandbox pod = podView(id);
                    if (unhooked.test(pod)) {
                        return update.get();
                    }
                    return pre(chain.updatePodSandbox(
                                    pod,
                                    NriFromCri.resources(request.getOverhead()),
                                    NriFromCri.resources(request.getResources())))
                            .thenCompose(v -> update.get())
                            .thenCompose(
                                    r ->
                                            post(
                                                            HookEvent.POST_UPDATE_POD_SANDBOX,
                                                            pod,
                                                            () ->
                                                                    chain.postUpdatePodSandbox(
                                                                            podView(id)))
                                                    .thenApply(v -> r));
                });
    }

    // ---------------------------------------------------------------- containers

    /**
     * {@code CreateContainer}: refused while the pod is pending; {@code CreateContainer} hooks
     * adjust the config, {@code create} makes the container in the runtime with it (when the
     * runtime fails, the hooks hear the container stop and go), updates and evictions the hooks
     * asked for are applied, then {@code PostCreateContainer}; the container is pending until
     * then.
     *
     * @param podId the pod
     * @param podConfig the pod's config as the runtime has it (for a pod the runtime does not
     *     report, NRI's view of the pod is made from it)
     * @param config the container's config as requested
     * @param id the container's id as the hooks are to know it from this event on (the runtime's
     *     when it has chosen it already, or one the adapter chose, as the proxy does), else null:
     *     the {@code CreateContainer} hooks then see a provisional id
     * @param create the runtime's step, given the adjusted config
     * @param idOf the new container's id in {@code create}'s answer
     */
    public <R> CompletionStage<R> createContainer(
            String podId,
            PodSandboxConfig podConfig,
            ContainerConfig config,
            String id,
            Function<ContainerConfig, CompletionStage<R>> create,
            Function<R, String> idOf) {
        return gate.shared(
                () -> {
                    PodPhase phase = pods.get(podId);
                    if (phase == PodPhase.PENDING || phase == PodPhase.STOPPED) {
                        return CompletableFuture.failedFuture(
                                Status.FAILED_PRECONDITION
                                        .withDescription(
                                                "pod sandbox "
                                                        + podId
                                                        + " is not ready: "
                                                        + (phase == PodPhase.PENDING
                                                                ? "its RunPodSandbox hooks are"
                                                                        + " still running"
                                                                : "it is stopped"))
                                        .asException());
                    }
                    PodSandbox pod =
                            runtime.pod(podId)
                                    .orElseGet(() -> NriFromCri.pod(podId, podConfig, ""));
                    if (unhooked.test(pod)) {
                        return create.apply(config)
                                .thenApply(
                                        r -> {
                                            containers.put(idOf.apply(r), CtrPhase.CREATED);
                                            return r;
                                        });
                    }
                    NamespaceOption ns =
                            podConfig.getLinux().getSecurityContext().getNamespaceOptions();
                    Container draft =
                            NriFromCri.container(
                                    id != null ? id : "cri4j-creating-" + drafts.incrementAndGet(),
                                    podId,
                                    config,
                                    ns,
                                    devices);
                    return pre(chain.createContainerDetailed(pod, draft))
                            .thenCompose(
                                    creation -> {
                                        ContainerConfig adjusted =
                                                enforce(
                                                        adjuster.apply(config, creation),
                                                        HookEvent.CREATE_CONTAINER);
                                        return safely(() -> create.apply(adjusted))
                                                .handle(
                                                        (r, t) -> {
                                                            if (t != null) {
                                                                creationFailed(pod, draft);
                                                                throw t
                                                                                instanceof
                                                                                CompletionException
                                                                                        c
                                                                        ? c
                                                                        : new CompletionException(
                                                                                t);
                                                            }
                                                            return r;
                                                        })
                                                .thenCompose(
                                                        r ->
                                                                created(
                                                                        pod,
                                                                        idOf.apply(r),
                                                                        creation.result(),
                                                                        r));
                                    });
                });
    }

    /** As containerd's undo of a failed creation: the hooks hear the container stop and go. */
    private void creationFailed(PodSandbox pod, Container draft) {
        post(HookEvent.STOP_CONTAINER, pod, () -> chain.stopContainer(pod, draft))
                .thenCompose(
                        v ->
                                post(
                                        HookEvent.REMOVE_CONTAINER,
                                        pod,
                                        () -> chain.removeContainer(pod, draft)));
    }

    private <R> CompletionStage<R> created(PodSandbox pod, String id, HookResult result, R answer) {
        containers.put(id, CtrPhase.PENDING);
        return runtime.apply(result.updates(), result.evictions(), "CreateContainer")
                .thenCompose(
                        failed ->
                                post(
                                        HookEvent.POST_CREATE_CONTAINER,
                                        pod,
                                        () -> chain.postCreateContainer(pod, containerView(id))))
                .handle(
                        (v, t) -> {
                            containers.replace(id, CtrPhase.PENDING, CtrPhase.CREATED);
                            return answer;
                        });
    }

    /**
     * {@code StartContainer}: refused while the container is pending; {@code StartContainer}
     * hooks (which may refuse it), the runtime's step, then {@code PostStartContainer}.
     */
    public <R> CompletionStage<R> startContainer(String id, Supplier<CompletionStage<R>> start) {
        return gate.shared(
                () -> {
                    if (containers.get(id) == CtrPhase.PENDING) {
                        return CompletableFuture.failedFuture(
                                Status.FAILED_PRECONDITION
                                        .withDescription(
                                                "container "
                                                        + id
                                                        + " is not created yet: its CreateContainer"
                                                        + " hooks are still running")
                                        .asException());
                    }
                    PodSandbox pod = podOf(id);
                    if (unhooked.test(pod)
                            || !wanted(HookEvent.START_CONTAINER, HookEvent.POST_START_CONTAINER)) {
                        return start.get().thenApply(r -> running(id, r));
                    }
                    return pre(chain.startContainer(pod, containerView(id)))
                            .thenCompose(v -> start.get())
                            .thenCompose(
                                    r -> {
                                        running(id, r);
                                        return post(
                                                        HookEvent.POST_START_CONTAINER,
                                                        pod,
                                                        () ->
                                                                chain.postStartContainer(
                                                                        pod, containerView(id)))
                                                .thenApply(v -> r);
                                    });
                });
    }

    private <R> R running(String id, R answer) {
        containers.compute(id, (k, was) -> was == CtrPhase.STOPPED ? was : CtrPhase.RUNNING);
        return answer;
    }

    /**
     * {@code StopContainer}: {@code stop} stops the container in the runtime; the first stop of a
     * container the runtime knows reaches the hooks ({@code StopContainer}, whose updates and
     * evictions are applied).
     */
    public <R> CompletionStage<R> stopContainer(String id, Supplier<CompletionStage<R>> stop) {
        return gate.shared(
                () -> stop.get().thenCompose(r -> containerExited(id).thenApply(v -> r)));
    }

    /**
     * A container stopped without a {@code StopContainer} call (its process exited, it was evicted,
     * the runtime reported it): the hooks hear {@code StopContainer} unless they already did.
     * Never fails.
     */
    public CompletionStage<Void> containerExited(String id) {
        Optional<Container> c = runtime.container(id);
        if (c.isEmpty() || containers.put(id, CtrPhase.STOPPED) == CtrPhase.STOPPED) {
            return done();
        }
        PodSandbox pod = podOf(id);
        return post(
                HookEvent.STOP_CONTAINER,
                pod,
                () ->
                        chain.stopContainer(pod, c.get())
                                .thenCompose(
                                        r ->
                                                runtime.apply(
                                                        r.updates(),
                                                        r.evictions(),
                                                        "StopContainer")));
    }

    /** Whether the host has announced the stop of container {@code id} (or never knew it). */
    public boolean isStopped(String id) {
        return containers.get(id) == CtrPhase.STOPPED;
    }

    /** The containers the host believes running now: where adapters look for exits. */
    public Set<String> running() {
        Set<String> ids = new java.util.HashSet<>();
        containers.forEach(
                (id, phase) -> {
                    if (phase == CtrPhase.RUNNING) {
                        ids.add(id);
                    }
                });
        return ids;
    }

    /**
     * {@code RemoveContainer}: {@code remove} removes the container in the runtime; the first
     * removal of a container the runtime knew reaches the hooks, after its stop if that was not
     * announced yet.
     */
    public <R> CompletionStage<R> removeContainer(String id, Supplier<CompletionStage<R>> remove) {
        return gate.shared(
                () -> {
                    Optional<Container> before = runtime.container(id);
                    PodSandbox pod = podOf(id);
                    return remove.get()
                            .thenCompose(
                                    r -> {
                                        if (before.isEmpty()) {
                                            containers.remove(id);
                                            return CompletableFuture.completedFuture(r);
                                        }
                                        return removeOne(before.get(), pod).thenApply(v -> r);
                                    });
                });
    }

    private CompletionStage<Void> removeOne(Container c, PodSandbox pod) {
        CtrPhase was = containers.remove(c.getId());
        CompletionStage<Void> stop =
                was == CtrPhase.RUNNING
                        ? post(
                                HookEvent.STOP_CONTAINER,
                                pod,
                                () -> chain.stopContainer(pod, c).thenApply(r -> null))
                        : done();
        return stop.thenCompose(
                v -> post(HookEvent.REMOVE_CONTAINER, pod, () -> chain.removeContainer(pod, c)));
    }

    /**
     * {@code UpdateContainerResources}: {@code UpdateContainer} hooks see the resources as they
     * will be ({@code requested}: the container's with the request's set fields) and may change or
     * refuse them; their changes to this container go into the request {@code update} sends,
     * their updates of other containers and evictions are applied first; then {@code
     * PostUpdateContainer}.
     */
    public <R> CompletionStage<R> updateContainer(
            UpdateContainerResourcesRequest requested,
            Function<UpdateContainerResourcesRequest, CompletionStage<R>> update) {
        String id = requested.getContainerId();
        return gate.shared(
                () -> {
                    PodSandbox pod = podOf(id);
                    if (unhooked.test(pod)
                            || !wanted(
                                    HookEvent.UPDATE_CONTAINER, HookEvent.POST_UPDATE_CONTAINER)) {
                        return update.apply(requested);
                    }
                    return pre(chain.updateContainer(
                                    pod,
                                    containerView(id),
                                    NriFromCri.resources(requested.getLinux())))
                            .thenCompose(
                                    result -> {
                                        UpdateContainerResourcesRequest sending = requested;
                                        List<ContainerUpdate> others = new ArrayList<>();
                                        for (ContainerUpdate u : result.updates()) {
                                            if (u.getContainerId().equals(id)) {
                                                sending =
                                                        enforce(
                                                                adjuster.apply(sending, u),
                                                                HookEvent.UPDATE_CONTAINER);
                                            } else {
                                                others.add(u);
                                            }
                                        }
                                        UpdateContainerResourcesRequest send = sending;
                                        return runtime.apply(
                                                        others,
                                                        result.evictions(),
                                                        "UpdateContainer")
                                                .thenCompose(failed -> update.apply(send))
                                                .thenCompose(
                                                        r ->
                                                                post(
                                                                                HookEvent
                                                                                        .POST_UPDATE_CONTAINER,
                                                                                pod,
                                                                                () ->
                                                                                        chain
                                                                                                .postUpdateContainer(
                                                                                                        pod,
                                                                                                        containerView(
                                                                                                                id)))
                                                                        .thenApply(v -> r));
                                    });
                });
    }

    // ---------------------------------------------------------------- steps

    private CompletionStage<Void> stopAll(List<Container> members, PodSandbox pod) {
        CompletionStage<Void> all = done();
        for (Container c : members) {
            CtrPhase was = containers.put(c.getId(), CtrPhase.STOPPED);
            boolean announced =
                    was == CtrPhase.STOPPED
                            || (was == null && c.getState() == ContainerState.CONTAINER_STOPPED);
            if (!announced
                    && was != CtrPhase.CREATED
                    && c.getState() != ContainerState.CONTAINER_CREATED) {
                all =
                        all.thenCompose(
                                v ->
                                        post(
                                                HookEvent.STOP_CONTAINER,
                                                pod,
                                                () ->
                                                        chain.stopContainer(pod, c)
                                                                .thenApply(r -> null)));
            }
        }
        return all;
    }

    private CompletionStage<Void> removeAll(List<Container> members, PodSandbox pod) {
        CompletionStage<Void> all = done();
        for (Container c : members) {
            if (containers.containsKey(c.getId()) || runtime.container(c.getId()).isEmpty()) {
                all = all.thenCompose(v -> removeOne(c, pod));
            }
        }
        return all;
    }

    private List<Container> containersOf(String podId) {
        return runtime.snapshot().containers().stream()
                .filter(c -> c.getPodSandboxId().equals(podId))
                .toList();
    }

    private PodSandbox podView(String id) {
        return runtime.pod(id).orElseGet(() -> PodSandbox.newBuilder().setId(id).build());
    }

    private Container containerView(String id) {
        return runtime.container(id).orElseGet(() -> Container.newBuilder().setId(id).build());
    }

    private PodSandbox podOf(String containerId) {
        return podView(runtime.container(containerId).map(Container::getPodSandboxId).orElse(""));
    }

    /** Whether a hook of the chain is subscribed to one of {@code events}. */
    private boolean wanted(HookEvent... events) {
        Set<HookEvent> subscribed = chain.events();
        for (HookEvent e : events) {
            if (subscribed.contains(e)) {
                return true;
            }
        }
        return false;
    }

    /** A pre-event: its failure becomes the status the call fails with. */
    private static <T> CompletionStage<T> pre(CompletionStage<T> event) {
        return event.handle(
                (v, t) -> {
                    if (t != null) {
                        throw new CompletionException(HookStatuses.of(t).asException());
                    }
                    return v;
                });
    }

    /**
     * A post-event, when a hook is subscribed to it and the pod is hooked: its failure is logged,
     * not passed on (the operation has happened).
     */
    private CompletionStage<Void> post(
            HookEvent e, PodSandbox pod, Supplier<CompletionStage<?>> event) {
        if (!wanted(e) || unhooked.test(pod)) {
            return done();
        }
        return safely(event::get)
                .handle(
                        (v, t) -> {
                            if (t != null) {
                                LOG.warn(
                                        "{} (after the runtime's step; the call is not failed): {}",
                                        e.displayName(),
                                        message(t));
                            }
                            return null;
                        });
    }

    /** What CRI cannot carry, decided per hook: throws the status under Fail. */
    private <T> T enforce(Adjusted<T> adjusted, HookEvent event) {
        try {
            return CriAdjuster.enforce(adjusted, event, chain::policyOf);
        } catch (RuntimeException e) {
            throw new CompletionException(HookStatuses.of(e).asException());
        }
    }

    private static <T> CompletionStage<T> safely(Supplier<? extends CompletionStage<T>> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static CompletionStage<Void> done() {
        return CompletableFuture.completedFuture(null);
    }

    private static String message(Throwable t) {
        Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return c.getMessage();
    }

    /** Shuts the hooks down and stops the chain's threads. */
    @Override
    public void close() {
        chain.close();
    }

    @Override
    public String toString() {
        return "LifecycleHost[" + runtimeName + "]";
    }
}
