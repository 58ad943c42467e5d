package io.cri4j.proxy.internal;

import io.cri4j.cri.internal.UnaryCalls;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest;
import io.cri4j.hook.AsyncCriInterceptor;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.DeviceNodes;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookStatuses;
import io.cri4j.hook.host.NriFromCri;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.host.UnsupportedAdjustment;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.ContainerEviction;
import io.cri4j.nri.api.ContainerUpdate;
import io.cri4j.nri.api.PodSandbox;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy as an NRI host: runs a {@link HookChain} around the CRI RuntimeService calls that
 * are pod and container lifecycle operations, the way containerd's CRI plugin runs NRI plugins.
 * It builds NRI's pod and container from the CRI request and the {@link CheckpointStore}
 * ({@link NriFromCri}), applies the merged adjustments to the request ({@link CriAdjuster}; what
 * CRI cannot carry fails the call or is logged as dropped, per the asking hook's policy), sends
 * the updates and evictions hooks ask for to the backend as {@code UpdateContainerResources} and
 * {@code StopContainer}, and records every successful call in the store.
 *
 * <p>Pre-events ({@code AdjustPodSandbox}, {@code CreateContainer}, {@code StartContainer},
 * {@code UpdateContainer}, {@code UpdatePodSandbox}) come before the backend call and a failure
 * under a hook's {@code Fail} fails the CRI call before the runtime sees it; {@code RunPodSandbox}
 * comes once the runtime made the pod (whose id it then has), and a failure removes the pod
 * again; the others come after the backend call and their failures are logged. Never blocks:
 * a link of the proxy's asynchronous interceptor chain; hooks that may block run on the chain's
 * workers.
 */
public final class ProxyHooks implements AsyncCriInterceptor, HookHost, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ProxyHooks.class);

    /** Pods with this label set to {@code "true"} are never hooked (Koordinator's label). */
    public static final String SKIP_LABEL = "runtimeproxy.koordinator.sh/skip-hookserver";

    /** The runtime name hooks see. */
    public static final String RUNTIME_NAME = "cri4j-proxy";

    private static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
    private static final long BACKEND_DEADLINE_SECONDS = 30;
    private static final Set<String> METHODS =
            Set.of(
                    "RunPodSandbox",
                    "StopPodSandbox",
                    "RemovePodSandbox",
                    "UpdatePodSandboxResources",
                    "CreateContainer",
                    "StartContainer",
                    "StopContainer",
                    "RemoveContainer",
                    "UpdateContainerResources");

    private final HookChain chain;
    private final CheckpointStore store;
    private final Channel backend;
    private final Function<MethodDescriptor<?, ?>, CompletionStage<Boolean>> applies;
    private final String runtimeVersion;
    private final DeviceNodes devices;
    private final CriAdjuster adjuster;
    private final AtomicLong pending = new AtomicLong();
    private final Map<String, NriPod> nriPods = new ConcurrentHashMap<>();

    /**
     * @param chain the hooks
     * @param store the proxy's record of pods and containers
     * @param backend where updates and evictions go
     * @param applies whether the hooks apply to a call of a method now (false: relayed unhooked;
     *     a failed stage fails the call with its status)
     * @param runtimeVersion the version hooks are told
     * @param devices where device nodes are found
     */
    public ProxyHooks(
            HookChain chain,
            CheckpointStore store,
            Channel backend,
            Function<MethodDescriptor<?, ?>, CompletionStage<Boolean>> applies,
            String runtimeVersion,
            DeviceNodes devices) {
        this.chain = chain;
        this.store = store;
        this.backend = backend;
        this.applies = applies;
        this.runtimeVersion = runtimeVersion;
        this.devices = devices;
        this.adjuster = CriAdjuster.create(devices);
    }

    /**
     * Configures the chain's own hooks and synchronizes them with the store, applying the updates
     * they answer with; waits up to the registration timeout.
     *
     * @throws IllegalStateException when a hook under {@code Fail} cannot be configured or
     *     synchronized
     */
    public void start() {
        HookConfiguration config =
                new HookConfiguration(
                        "",
                        RUNTIME_NAME,
                        runtimeVersion,
                        REGISTRATION_TIMEOUT,
                        REQUEST_TIMEOUT,
                        runtime());
        try {
            chain.configure(config)
                    .toCompletableFuture()
                    .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
            RuntimeSnapshot s = snapshotNow();
            List<ContainerUpdate> updates =
                    chain.synchronize(s.pods(), s.containers())
                            .toCompletableFuture()
                            .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
            apply(updates, List.of(), "Synchronize")
                    .toCompletableFuture()
                    .get(BACKEND_DEADLINE_SECONDS * 2, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(
                    "proxy hooks: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(
                    "proxy hooks did not register within " + REGISTRATION_TIMEOUT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while registering the proxy's hooks", e);
        }
    }

    /** The chain the hooks run in. */
    public HookChain chain() {
        return chain;
    }

    // ---------------------------------------------------------------- HookHost

    @Override
    public String runtimeName() {
        return RUNTIME_NAME;
    }

    @Override
    public String runtimeVersion() {
        return runtimeVersion;
    }

    @Override
    public CompletionStage<RuntimeSnapshot> snapshot() {
        try {
            return CompletableFuture.completedFuture(snapshotNow());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private RuntimeSnapshot snapshotNow() {
        List<PodSandbox> pods = new ArrayList<>();
        store.pods().forEach(p -> pods.add(nriPod(p)));
        List<Container> containers = new ArrayList<>();
        store.containers().forEach(c -> containers.add(nriContainer(c)));
        return new RuntimeSnapshot(pods, containers);
    }

    @Override
    public RuntimeHandle runtime() {
        return (updates, evictions) -> apply(updates, evictions, "UpdateContainers");
    }

    // ---------------------------------------------------------------- NRI views

    /** NRI's view of a stored pod, made once per version of the pod the store holds. */
    private PodSandbox nriPod(CheckpointStore.Pod p) {
        NriPod known = nriPods.get(p.id());
        if (known != null && known.source == p) {
            return known.pod;
        }
        PodSandbox pod = NriFromCri.pod(p.id(), p.config(), p.runtimeHandler());
        if (nriPods.size() > 2 * store.podCount() + 64) {
            // pods the store dropped without a RemovePodSandbox here (e.g. a rebuild)
            nriPods.keySet().removeIf(id -> store.pod(id).isEmpty());
        }
        nriPods.put(p.id(), new NriPod(p, pod));
        return pod;
    }

    /** A stored pod and NRI's view of it. */
    private record NriPod(CheckpointStore.Pod source, PodSandbox pod) {}

    private PodSandbox nriPod(String podId) {
        return store.pod(podId)
                .map(this::nriPod)
                .orElseGet(() -> PodSandbox.newBuilder().setId(podId).build());
    }

    private Container nriContainer(CheckpointStore.Ctr c) {
        NamespaceOption ns =
                store.pod(c.podId())
                        .map(p -> p.config().getLinux().getSecurityContext().getNamespaceOptions())
                        .orElse(NamespaceOption.getDefaultInstance());
        return NriFromCri.container(c.id(), c.podId(), c.config(), ns, devices).toBuilder()
                .setState(
                        switch (c.state()) {
                            case CONTAINER_CREATED ->
                                    io.cri4j.nri.api.ContainerState.CONTAINER_CREATED;
                            case CONTAINER_RUNNING ->
                                    io.cri4j.nri.api.ContainerState.CONTAINER_RUNNING;
                            case CONTAINER_EXITED ->
                                    io.cri4j.nri.api.ContainerState.CONTAINER_STOPPED;
                            default -> io.cri4j.nri.api.ContainerState.CONTAINER_UNKNOWN;
                        })
                .build();
    }

    /** NRI's view of the pod of container {@code id}. */
    private PodSandbox nriPodOf(String containerId) {
        return nriPod(store.container(containerId).map(CheckpointStore.Ctr::podId).orElse(""));
    }

    private Container nriContainer(String id) {
        return store.container(id)
                .map(this::nriContainer)
                .orElseGet(() -> Container.newBuilder().setId(id).build());
    }

    private boolean skipped(PodSandboxConfig config) {
        return "true".equals(config.getLabelsMap().get(SKIP_LABEL));
    }

    private boolean skippedPod(String podId) {
        return store.pod(podId).map(p -> skipped(p.config())).orElse(false);
    }

    private boolean skippedContainer(String id) {
        return store.container(id).map(c -> skippedPod(c.podId())).orElse(false);
    }

    // ---------------------------------------------------------------- the interceptor

    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        String svc = method.getServiceName();
        return svc != null
                && svc.endsWith(".RuntimeService")
                && METHODS.contains(method.getBareMethodName());
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> call) {
        Function<Object, CompletableFuture<Object>> proceed =
                r -> call.proceed((Q) r).toCompletableFuture().thenApply(x -> (Object) x);
        return applies.apply(call.method())
                .thenCompose(
                        hooked -> {
                            if (!hooked) {
                                return (CompletionStage<Object>) call.proceed(call.request());
                            }
                            Object req = call.request();
                            CompletableFuture<Object> out =
                                    switch (call.method().getBareMethodName()) {
                                        case "RunPodSandbox" ->
                                                runPodSandbox((RunPodSandboxRequest) req, proceed);
                                        case "StopPodSandbox" ->
                                                stopPodSandbox(
                                                        (StopPodSandboxRequest) req, proceed);
                                        case "RemovePodSandbox" ->
                                                removePodSandbox(
                                                        (RemovePodSandboxRequest) req, proceed);
                                        case "UpdatePodSandboxResources" ->
                                                updatePodSandbox(
                                                        (UpdatePodSandboxResourcesRequest) req,
                                                        proceed);
                                        case "CreateContainer" ->
                                                createContainer(
                                                        (CreateContainerRequest) req, proceed);
                                        case "StartContainer" ->
                                                startContainer(
                                                        (StartContainerRequest) req, proceed);
                                        case "StopContainer" ->
                                                stopContainer((StopContainerRequest) req, proceed);
                                        case "RemoveContainer" ->
                                                removeContainer(
                                                        (RemoveContainerRequest) req, proceed);
                                        case "UpdateContainerResources" ->
                                                updateContainer(
                                                        (UpdateContainerResourcesRequest) req,
                                                        proceed);
                                        default -> proceed.apply(req);
                                    };
                            return out;
                        })
                .thenApply(r -> (R) r);
    }

    /** A pre-event: its failure becomes the status the call fails with. */
    private static <T> CompletableFuture<T> pre(CompletionStage<T> event) {
        return event.toCompletableFuture()
                .handle(
                        (v, t) -> {
                            if (t != null) {
                                throw new CompletionException(HookStatuses.of(t).asException());
                            }
                            return v;
                        });
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

    /**
     * A post-event, when a hook is subscribed to it: its failure is logged, not passed on (the
     * operation has happened).
     */
    private CompletableFuture<Void> post(HookEvent e, Supplier<CompletionStage<?>> event) {
        if (!wanted(e)) {
            return CompletableFuture.completedFuture(null);
        }
        return event.get()
                .toCompletableFuture()
                .handle(
                        (v, t) -> {
                            if (t != null) {
                                Throwable c =
                                        t instanceof CompletionException && t.getCause() != null
                                                ? t.getCause()
                                                : t;
                                LOG.warn(
                                        "{} (after the runtime's call; the call is not failed): {}",
                                        e.displayName(),
                                        c.getMessage());
                            }
                            return null;
                        });
    }

    /** Runs {@code body}, turning what it throws into a failed stage. */
    private static <T> CompletableFuture<T> guard(
            java.util.function.Supplier<CompletableFuture<T>> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** What CRI cannot carry, decided per hook: throws the status under Fail. */
    private <T> T enforce(Adjusted<T> adjusted, HookEvent event) {
        try {
            return CriAdjuster.enforce(adjusted, event, chain::policyOf);
        } catch (RuntimeException e) {
            throw new CompletionException(HookStatuses.of(e).asException());
        }
    }

    // ---------------------------------------------------------------- pods

    private CompletableFuture<Object> runPodSandbox(
            RunPodSandboxRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        if (skipped(req.getConfig())) {
            return proceed.apply(req)
                    .thenApply(
                            resp -> {
                                RunPodSandboxResponse r = (RunPodSandboxResponse) resp;
                                store.putPod(
                                        new CheckpointStore.Pod(
                                                r.getPodSandboxId(),
                                                req.getConfig(),
                                                req.getRuntimeHandler()));
                                return resp;
                            });
        }
        return guard(
                () ->
                        pre(chain.adjustPodSandbox(NriFromCri.pod("", req)))
                                .thenApply(
                                        a ->
                                                enforce(
                                                        adjuster.apply(req, a),
                                                        HookEvent.ADJUST_POD_SANDBOX))
                                .thenCompose(
                                        sending ->
                                                proceed.apply(sending)
                                                        .thenCompose(
                                                                resp -> {
                                                                    String id =
                                                                            ((RunPodSandboxResponse)
                                                                                            resp)
                                                                                    .getPodSandboxId();
                                                                    store.putPod(
                                                                            new CheckpointStore.Pod(
                                                                                    id,
                                                                                    sending
                                                                                            .getConfig(),
                                                                                    sending
                                                                                            .getRuntimeHandler()));
                                                                    return chain.runPodSandbox(
                                                                                    nriPod(id))
                                                                            .toCompletableFuture()
                                                                            .handle((v, t) -> t)
                                                                            .thenCompose(
                                                                                    failure ->
                                                                                            failure
                                                                                                            == null
                                                                                                    ? CompletableFuture
                                                                                                            .completedFuture(
                                                                                                                    resp)
                                                                                                    : undoPod(
                                                                                                            id,
                                                                                                            failure));
                                                                })));
    }

    /** A pod its hooks refused at RunPodSandbox is stopped and removed, as containerd does. */
    private CompletableFuture<Object> undoPod(String id, Throwable failure) {
        LOG.warn(
                "RunPodSandbox of {} failed in its hooks, removing the pod: {}",
                id,
                HookStatuses.of(failure).getDescription());
        store.removePod(id);
        nriPods.remove(id);
        return backendCall(
                        RuntimeServiceGrpc.getStopPodSandboxMethod(),
                        StopPodSandboxRequest.newBuilder().setPodSandboxId(id).build())
                .handle((v, t) -> null)
                .thenCompose(
                        x ->
                                backendCall(
                                        RuntimeServiceGrpc.getRemovePodSandboxMethod(),
                                        RemovePodSandboxRequest.newBuilder()
                                                .setPodSandboxId(id)
                                                .build()))
                .handle(
                        (v, t) -> {
                            if (t != null) {
                                LOG.warn(
                                        "could not remove pod {} its hooks refused: {}",
                                        id,
                                        t.getMessage());
                            }
                            throw new CompletionException(HookStatuses.of(failure).asException());
                        });
    }

    private CompletableFuture<Object> stopPodSandbox(
            StopPodSandboxRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getPodSandboxId();
        return proceed.apply(req)
                .thenCompose(
                        resp -> {
                            for (CheckpointStore.Ctr c : store.containers()) {
                                if (c.podId().equals(id)) {
                                    store.putContainer(
                                            c.withState(ContainerState.CONTAINER_EXITED));
                                }
                            }
                            if (skippedPod(id)) {
                                return CompletableFuture.completedFuture(resp);
                            }
                            return post(
                                            HookEvent.STOP_POD_SANDBOX,
                                            () -> chain.stopPodSandbox(nriPod(id)))
                                    .thenApply(v -> resp);
                        });
    }

    private CompletableFuture<Object> removePodSandbox(
            RemovePodSandboxRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getPodSandboxId();
        return proceed.apply(req)
                .thenCompose(
                        resp -> {
                            boolean skip = skippedPod(id);
                            PodSandbox pod = nriPod(id);
                            store.removePod(id);
                            nriPods.remove(id);
                            return skip
                                    ? CompletableFuture.completedFuture(resp)
                                    : post(
                                                    HookEvent.REMOVE_POD_SANDBOX,
                                                    () -> chain.removePodSandbox(pod))
                                            .thenApply(v -> resp);
                        });
    }

    private CompletableFuture<Object> updatePodSandbox(
            UpdatePodSandboxResourcesRequest req,
            Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getPodSandboxId();
        if (skippedPod(id)) {
            return proceed.apply(req);
        }
        return guard(
                () ->
                        pre(chain.updatePodSandbox(
                                        nriPod(id),
                                        NriFromCri.resources(req.getOverhead()),
                                        NriFromCri.resources(req.getResources())))
                                .thenCompose(v -> proceed.apply(req))
                                .thenCompose(
                                        resp -> {
                                            store.pod(id)
                                                    .ifPresent(
                                                            p -> {
                                                                PodSandboxConfig.Builder c =
                                                                        p.config().toBuilder();
                                                                if (req.hasResources()) {
                                                                    c.getLinuxBuilder()
                                                                            .setResources(
                                                                                    req
                                                                                            .getResources());
                                                                }
                                                                if (req.hasOverhead()) {
                                                                    c.getLinuxBuilder()
                                                                            .setOverhead(
                                                                                    req
                                                                                            .getOverhead());
                                                                }
                                                                store.putPod(
                                                                        new CheckpointStore.Pod(
                                                                                id,
                                                                                c.build(),
                                                                                p
                                                                                        .runtimeHandler()));
                                                            });
                                            return post(
                                                            HookEvent.POST_UPDATE_POD_SANDBOX,
                                                            () ->
                                                                    chain.postUpdatePodSandbox(
                                                                            nriPod(id)))
                                                    .thenApply(x -> resp);
                                        }));
    }

    // ---------------------------------------------------------------- containers

    private CompletableFuture<Object> createContainer(
            CreateContainerRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String podId = req.getPodSandboxId();
        Optional<CheckpointStore.Pod> stored = store.pod(podId);
        PodSandboxConfig podConfig =
                stored.map(CheckpointStore.Pod::config).orElse(req.getSandboxConfig());
        if (skipped(podConfig)) {
            return proceed.apply(req).thenApply(resp -> created(req.getConfig(), podId, resp));
        }
        PodSandbox pod =
                stored.map(this::nriPod).orElseGet(() -> NriFromCri.pod(podId, podConfig, ""));
        Container draft =
                NriFromCri.container(
                        "cri4j-creating-" + pending.incrementAndGet(),
                        podId,
                        req.getConfig(),
                        podConfig.getLinux().getSecurityContext().getNamespaceOptions(),
                        devices);
        return guard(
                () ->
                        pre(chain.createContainerDetailed(pod, draft))
                                .thenCompose(
                                        creation -> {
                                            ContainerConfig config =
                                                    enforce(
                                                            adjuster.apply(
                                                                    req.getConfig(), creation),
                                                            HookEvent.CREATE_CONTAINER);
                                            // the runtime takes the pod's cgroup parent from the
                                            // request: the pod as its hooks made it
                                            PodSandboxConfig sandbox =
                                                    stored.isPresent()
                                                            ? podConfig
                                                            : req.getSandboxConfig();
                                            CreateContainerRequest sending =
                                                    config == req.getConfig()
                                                                    && sandbox
                                                                            == req
                                                                                    .getSandboxConfig()
                                                            ? req
                                                            : req.toBuilder()
                                                                    .setConfig(config)
                                                                    .setSandboxConfig(sandbox)
                                                                    .build();
                                            return proceed.apply(sending)
                                                    .handle(
                                                            (resp, t) -> {
                                                                if (t != null) {
                                                                    // as containerd's undo of a
                                                                    // failed creation: the hooks
                                                                    // hear the container go
                                                                    post(
                                                                            HookEvent
                                                                                    .STOP_CONTAINER,
                                                                            () ->
                                                                                    chain
                                                                                            .stopContainer(
                                                                                                    pod,
                                                                                                    draft));
                                                                    post(
                                                                            HookEvent
                                                                                    .REMOVE_CONTAINER,
                                                                            () ->
                                                                                    chain
                                                                                            .removeContainer(
                                                                                                    pod,
                                                                                                    draft));
                                                                    throw t
                                                                                    instanceof
                                                                                    CompletionException
                                                                                            c
                                                                            ? c
                                                                            : new CompletionException(
                                                                                    t);
                                                                }
                                                                return resp;
                                                            })
                                                    .thenCompose(
                                                            resp -> {
                                                                Object out =
                                                                        created(
                                                                                config, podId,
                                                                                resp);
                                                                String id =
                                                                        ((CreateContainerResponse)
                                                                                        resp)
                                                                                .getContainerId();
                                                                HookResult r = creation.result();
                                                                return apply(
                                                                                r.updates(),
                                                                                r.evictions(),
                                                                                "CreateContainer")
                                                                        .toCompletableFuture()
                                                                        .thenCompose(
                                                                                failed ->
                                                                                        post(
                                                                                                HookEvent
                                                                                                        .POST_CREATE_CONTAINER,
                                                                                                () ->
                                                                                                        chain
                                                                                                                .postCreateContainer(
                                                                                                                        pod,
                                                                                                                        nriContainer(
                                                                                                                                id))))
                                                                        .thenApply(v -> out);
                                                            });
                                        }));
    }

    private Object created(ContainerConfig config, String podId, Object resp) {
        String id = ((CreateContainerResponse) resp).getContainerId();
        store.putContainer(
                new CheckpointStore.Ctr(id, podId, config, ContainerState.CONTAINER_CREATED));
        return resp;
    }

    private CompletableFuture<Object> startContainer(
            StartContainerRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getContainerId();
        if (!wanted(HookEvent.START_CONTAINER, HookEvent.POST_START_CONTAINER)
                || skippedContainer(id)) {
            return proceed.apply(req)
                    .thenApply(resp -> state(id, ContainerState.CONTAINER_RUNNING, resp));
        }
        PodSandbox pod = nriPodOf(id);
        return guard(
                () ->
                        pre(chain.startContainer(pod, nriContainer(id)))
                                .thenCompose(v -> proceed.apply(req))
                                .thenCompose(
                                        resp -> {
                                            state(id, ContainerState.CONTAINER_RUNNING, resp);
                                            return post(
                                                            HookEvent.POST_START_CONTAINER,
                                                            () ->
                                                                    chain.postStartContainer(
                                                                            pod, nriContainer(id)))
                                                    .thenApply(v -> resp);
                                        }));
    }

    private Object state(String id, ContainerState s, Object resp) {
        store.container(id).ifPresent(c -> store.putContainer(c.withState(s)));
        return resp;
    }

    private CompletableFuture<Object> stopContainer(
            StopContainerRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getContainerId();
        return proceed.apply(req)
                .thenCompose(
                        resp -> {
                            state(id, ContainerState.CONTAINER_EXITED, resp);
                            if (skippedContainer(id)) {
                                return CompletableFuture.completedFuture(resp);
                            }
                            return post(
                                            HookEvent.STOP_CONTAINER,
                                            () ->
                                                    chain.stopContainer(
                                                                    nriPodOf(id), nriContainer(id))
                                                            .thenCompose(
                                                                    r ->
                                                                            apply(
                                                                                    r.updates(),
                                                                                    r.evictions(),
                                                                                    "StopContainer")))
                                    .thenApply(v -> resp);
                        });
    }

    private CompletableFuture<Object> removeContainer(
            RemoveContainerRequest req, Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getContainerId();
        return proceed.apply(req)
                .thenCompose(
                        resp -> {
                            Optional<CheckpointStore.Ctr> c = store.container(id);
                            if (c.isEmpty() || skippedContainer(id)) {
                                store.removeContainer(id);
                                return CompletableFuture.completedFuture(resp);
                            }
                            store.removeContainer(id);
                            return post(
                                            HookEvent.REMOVE_CONTAINER,
                                            () ->
                                                    chain.removeContainer(
                                                            nriPod(c.get().podId()),
                                                            nriContainer(c.get())))
                                    .thenApply(v -> resp);
                        });
    }

    private CompletableFuture<Object> updateContainer(
            UpdateContainerResourcesRequest req,
            Function<Object, CompletableFuture<Object>> proceed) {
        String id = req.getContainerId();
        Optional<CheckpointStore.Ctr> c = store.container(id);
        if (!wanted(HookEvent.UPDATE_CONTAINER, HookEvent.POST_UPDATE_CONTAINER)
                || skippedContainer(id)) {
            return proceed.apply(req).thenApply(resp -> updated(id, req, resp));
        }
        PodSandbox pod = nriPod(c.map(CheckpointStore.Ctr::podId).orElse(""));
        // as containerd applies an update: the recorded resources with the request's set fields
        LinuxContainerResources requested =
                c.map(x -> set(x.config().getLinux().getResources(), req.getLinux()))
                        .orElse(req.getLinux());
        return guard(
                () ->
                        pre(chain.updateContainer(
                                        pod, nriContainer(id), NriFromCri.resources(requested)))
                                .thenCompose(
                                        result -> {
                                            UpdateContainerResourcesRequest sending = req;
                                            List<ContainerUpdate> others = new ArrayList<>();
                                            for (ContainerUpdate u : result.updates()) {
                                                if (u.getContainerId().equals(id)) {
                                                    // the resources the hooks saw, with their
                                                    // changes
                                                    sending =
                                                            enforce(
                                                                    adjuster.apply(
                                                                            req.toBuilder()
                                                                                    .setLinux(
                                                                                            requested)
                                                                                    .build(),
                                                                            u),
                                                                    HookEvent.UPDATE_CONTAINER);
                                                } else {
                                                    others.add(u);
                                                }
                                            }
                                            UpdateContainerResourcesRequest send = sending;
                                            return apply(
                                                            others,
                                                            result.evictions(),
                                                            "UpdateContainer")
                                                    .toCompletableFuture()
                                                    .thenCompose(failed -> proceed.apply(send))
                                                    .thenCompose(
                                                            resp -> {
                                                                updated(id, send, resp);
                                                                return post(
                                                                                HookEvent
                                                                                        .POST_UPDATE_CONTAINER,
                                                                                () ->
                                                                                        chain
                                                                                                .postUpdateContainer(
                                                                                                        pod,
                                                                                                        nriContainer(
                                                                                                                id)))
                                                                        .thenApply(v -> resp);
                                                            });
                                        }));
    }

    private Object updated(String id, UpdateContainerResourcesRequest sent, Object resp) {
        store.container(id)
                .ifPresent(
                        c ->
                                store.putContainer(
                                        c.withResources(
                                                set(
                                                        c.config().getLinux().getResources(),
                                                        sent.getLinux()))));
        return resp;
    }

    /**
     * {@code base} with the fields {@code update} sets (non-zero, non-empty), as containerd
     * applies an UpdateContainerResources request.
     */
    static LinuxContainerResources set(
            LinuxContainerResources base, LinuxContainerResources update) {
        LinuxContainerResources.Builder b = base.toBuilder();
        if (update.getCpuPeriod() != 0) {
            b.setCpuPeriod(update.getCpuPeriod());
        }
        if (update.getCpuQuota() != 0) {
            b.setCpuQuota(update.getCpuQuota());
        }
        if (update.getCpuShares() != 0) {
            b.setCpuShares(update.getCpuShares());
        }
        if (update.getMemoryLimitInBytes() != 0) {
            b.setMemoryLimitInBytes(update.getMemoryLimitInBytes());
        }
        if (update.getOomScoreAdj() != 0) {
            b.setOomScoreAdj(update.getOomScoreAdj());
        }
        if (!update.getCpusetCpus().isEmpty()) {
            b.setCpusetCpus(update.getCpusetCpus());
        }
        if (!update.getCpusetMems().isEmpty()) {
            b.setCpusetMems(update.getCpusetMems());
        }
        if (update.getMemorySwapLimitInBytes() != 0) {
            b.setMemorySwapLimitInBytes(update.getMemorySwapLimitInBytes());
        }
        b.putAllUnified(update.getUnifiedMap());
        if (update.getHugepageLimitsCount() > 0) {
            java.util.Map<String, io.cri4j.cri.v1.HugepageLimit> pages =
                    new java.util.LinkedHashMap<>();
            base.getHugepageLimitsList().forEach(h -> pages.put(h.getPageSize(), h));
            update.getHugepageLimitsList().forEach(h -> pages.put(h.getPageSize(), h));
            b.clearHugepageLimits().addAllHugepageLimits(pages.values());
        }
        return b.build();
    }

    // ---------------------------------------------------------------- updates and evictions

    /**
     * Sends hooks' updates ({@code UpdateContainerResources}, the recorded resources with the
     * update's fields) and evictions ({@code StopContainer}, timeout 0) to the backend, all at
     * once. What CRI cannot carry of an update is logged; an update of an unknown container is
     * skipped. Completes with the updates that failed; never fails.
     */
    private CompletionStage<List<ContainerUpdate>> apply(
            List<ContainerUpdate> updates, List<ContainerEviction> evictions, String what) {
        if (updates.isEmpty() && evictions.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        List<ContainerUpdate> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (ContainerUpdate u : updates) {
            Optional<CheckpointStore.Ctr> c = store.container(u.getContainerId());
            if (c.isEmpty()) {
                LOG.warn(
                        "{}: update of container {} skipped: the proxy does not know it",
                        what,
                        u.getContainerId());
                failed.add(u);
                continue;
            }
            Adjusted<UpdateContainerResourcesRequest> a =
                    adjuster.apply(
                            UpdateContainerResourcesRequest.newBuilder()
                                    .setContainerId(u.getContainerId())
                                    .setLinux(c.get().config().getLinux().getResources())
                                    .build(),
                            u);
            if (!a.unsupported().isEmpty()) {
                LOG.warn(
                        "{}: update of container {}: dropped what CRI cannot carry: {}",
                        what,
                        u.getContainerId(),
                        String.join(
                                ", ",
                                a.unsupported().stream()
                                        .map(UnsupportedAdjustment::describe)
                                        .toList()));
            }
            all.add(
                    backendCall(RuntimeServiceGrpc.getUpdateContainerResourcesMethod(), a.value())
                            .handle(
                                    (v, t) -> {
                                        if (t == null) {
                                            updated(u.getContainerId(), a.value(), v);
                                        } else {
                                            failed.add(u);
                                            if (!u.getIgnoreFailure()) {
                                                LOG.warn(
                                                        "{}: update of container {} failed: {}",
                                                        what,
                                                        u.getContainerId(),
                                                        HookStatuses.of(t).getDescription());
                                            }
                                        }
                                        return null;
                                    }));
        }
        for (ContainerEviction e : evictions) {
            LOG.info("{}: evicting container {}: {}", what, e.getContainerId(), e.getReason());
            all.add(
                    backendCall(
                                    RuntimeServiceGrpc.getStopContainerMethod(),
                                    StopContainerRequest.newBuilder()
                                            .setContainerId(e.getContainerId())
                                            .setTimeout(0)
                                            .build())
                            .handle(
                                    (v, t) -> {
                                        if (t == null) {
                                            state(
                                                    e.getContainerId(),
                                                    ContainerState.CONTAINER_EXITED,
                                                    v);
                                        } else {
                                            LOG.warn(
                                                    "{}: eviction of container {} failed: {}",
                                                    what,
                                                    e.getContainerId(),
                                                    HookStatuses.of(t).getDescription());
                                        }
                                        return null;
                                    }));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> List.copyOf(failed));
    }

    /** One call on the backend channel, not through the proxy's chain. */
    private <Q, R> CompletableFuture<R> backendCall(MethodDescriptor<Q, R> method, Q request) {
        return UnaryCalls.start(
                backend.newCall(
                        method,
                        CallOptions.DEFAULT.withDeadlineAfter(
                                BACKEND_DEADLINE_SECONDS, TimeUnit.SECONDS)),
                request,
                "the runtime",
                method.getFullMethodName());
    }

    /** Shuts the hooks down and stops the chain's threads. */
    @Override
    public void close() {
        chain.close();
    }
}
