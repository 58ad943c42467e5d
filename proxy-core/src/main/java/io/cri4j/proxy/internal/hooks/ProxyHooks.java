package io.cri4j.proxy.internal.hooks;

import io.cri4j.cri.internal.UnaryCalls;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListPodSandboxResponse;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
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
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.DeviceNodes;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookStatuses;
import io.cri4j.hook.host.LifecycleHost;
import io.cri4j.hook.host.NriFromCri;
import io.cri4j.hook.host.RuntimeFeatures;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.host.UnsupportedAdjustment;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.proxy.internal.interception.CriMethods;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy as an NRI host: an adapter of {@link LifecycleHost} (NRI's runtime side) for the CRI
 * RuntimeService calls that are pod and container lifecycle operations. Each call goes to the
 * host with the proxy's step for it (the relayed backend call, then the record in the {@link
 * CheckpointStore}); the host runs the hooks in NRI's order and keeps the lifecycle state. The
 * proxy builds NRI's pod and container from the store ({@link NriFromCri}), hides a pod whose
 * {@code RunPodSandbox} hooks still run from {@code ListPodSandbox} and {@code PodSandboxStatus},
 * sends the updates and evictions hooks ask for to the backend ({@code UpdateContainerResources},
 * {@code StopContainer}), and reports the exits the backend reports ({@link ContainerExits}). It
 * names each container it creates itself before the hooks run ({@link ContainerIds}) and
 * translates container ids between its own and the runtime's in every RuntimeService call that
 * carries one ({@link #CARRYING_IDS}); hooks, the store and the host know only the proxy's.
 * Never blocks: a link of the proxy's asynchronous interceptor chain.
 */
public final class ProxyHooks implements AsyncCriInterceptor, HookHost, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ProxyHooks.class);

    /** Pods with this label set to {@code "true"} are never hooked (Koordinator's label). */
    public static final String SKIP_LABEL = "runtimeproxy.koordinator.sh/skip-hookserver";

    /** The runtime name hooks see. */
    public static final String RUNTIME_NAME = "cri4j-proxy";

    private static final long BACKEND_DEADLINE_SECONDS = 30;
    private static final String V1 = "runtime.v1.RuntimeService";
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

    /**
     * The RuntimeService methods whose request or response can carry a container's id (any
     * depth), by bare name: their ids are translated between the proxy's and the runtime's.
     */
    static final Set<String> CARRYING_IDS = carryingIds();

    private final LifecycleHost host;
    private final CheckpointStore store;
    private final Channel backend;
    private final Function<MethodDescriptor<?, ?>, CompletionStage<Boolean>> applies;
    private final DeviceNodes devices;
    private volatile CriAdjuster adjuster;
    private final Map<String, NriPod> nriPods = new ConcurrentHashMap<>();
    private final ContainerExits exits;
    private final ContainerIds ids;

    /**
     * @param chain the hooks
     * @param store the proxy's record of pods and containers
     * @param backend where updates and evictions go
     * @param applies whether the hooks apply to a call of a method now (false: relayed unhooked;
     *     a failed stage fails the call with its status)
     * @param features what the backend honours (named in hooks' {@code Configure} as the
     *     runtime version); what it would drop is reported like what CRI cannot carry
     * @param devices where device nodes are found
     */
    public ProxyHooks(
            HookChain chain,
            CheckpointStore store,
            Channel backend,
            Function<MethodDescriptor<?, ?>, CompletionStage<Boolean>> applies,
            RuntimeFeatures features,
            DeviceNodes devices) {
        this.store = store;
        this.ids = store.ids();
        this.backend = backend;
        this.applies = applies;
        this.devices = devices;
        this.adjuster = CriAdjuster.create(devices, features);
        this.host =
                LifecycleHost.builder()
                        .chain(chain)
                        .runtime(new BackendRuntime())
                        .runtimeName(RUNTIME_NAME, features.runtime())
                        .devices(devices)
                        .features(features)
                        .unhooked(p -> "true".equals(p.getLabelsMap().get(SKIP_LABEL)))
                        .build();
        this.exits = new ContainerExits(backend, host, this::exited, ids);
    }

    /**
     * The backend changed (it came back after an outage as another version, or another runtime
     * now answers on its socket): what it honours is read again, for the requests from now on.
     */
    public void backendChanged(RuntimeFeatures features) {
        this.adjuster = CriAdjuster.create(devices, features);
        host.runtimeChanged(features.runtime(), features);
    }

    /**
     * Configures the chain's own hooks and synchronizes them with the store, applying the updates
     * they answer with; then follows the exits the backend reports.
     *
     * @throws IllegalStateException when a hook under {@code Fail} cannot be configured or
     *     synchronized
     */
    public void start() {
        host.start();
        exits.start();
    }

    /** The chain the hooks run in. */
    public HookChain chain() {
        return host.chain();
    }

    /** The lifecycle host the proxy adapts. */
    public LifecycleHost host() {
        return host;
    }

    // ---------------------------------------------------------------- HookHost

    @Override
    public String runtimeName() {
        return host.runtimeName();
    }

    @Override
    public String runtimeVersion() {
        return host.runtimeVersion();
    }

    @Override
    public CompletionStage<RuntimeSnapshot> snapshot() {
        return host.snapshot();
    }

    @Override
    public RuntimeHandle runtime() {
        return host.runtime();
    }

    @Override
    public <T> CompletionStage<T> register(Function<RuntimeSnapshot, CompletionStage<T>> register) {
        return host.register(register);
    }

    // ---------------------------------------------------------------- the runtime behind the host

    /** The backend and the store, as the lifecycle host sees them. */
    private final class BackendRuntime implements LifecycleHost.Runtime {
        @Override
        public Optional<PodSandbox> pod(String id) {
            return store.pod(id).map(ProxyHooks.this::nriPod);
        }

        @Override
        public Optional<Container> container(String id) {
            return store.container(id).map(ProxyHooks.this::nriContainer);
        }

        @Override
        public RuntimeSnapshot snapshot() {
            List<PodSandbox> pods = new ArrayList<>();
            store.pods().forEach(p -> pods.add(nriPod(p)));
            List<Container> containers = new ArrayList<>();
            store.containers().forEach(c -> containers.add(nriContainer(c)));
            return new RuntimeSnapshot(pods, containers);
        }

        @Override
        public CompletionStage<?> undoPodSandbox(String id) {
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
                                                    .build()));
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> apply(
                List<ContainerUpdate> updates, List<ContainerEviction> evictions, String what) {
            return ProxyHooks.this.apply(updates, evictions, what);
        }
    }

    // ---------------------------------------------------------------- NRI views

    /** NRI's view of a stored pod, made once per version of the pod the store holds. */
    @SuppressWarnings(
            "ReferenceEquality") // a version of the pod is the very object the store holds
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

    private Container nriContainer(CheckpointStore.Ctr c) {
        NamespaceOption ns =
                store.pod(c.podId())
                        .map(p -> p.config().getLinux().getSecurityContext().getNamespaceOptions())
                        .orElse(NamespaceOption.getDefaultInstance());
        return NriFromCri.container(c.id(), c.podId(), c.config(), ns, devices).toBuilder()
                .setState(
                        switch (c.state()) {
                            case CONTAINER_CREATED ->
                                    io.cri4j.hook.nri.v1alpha1.ContainerState.CONTAINER_CREATED;
                            case CONTAINER_RUNNING ->
                                    io.cri4j.hook.nri.v1alpha1.ContainerState.CONTAINER_RUNNING;
                            case CONTAINER_EXITED ->
                                    io.cri4j.hook.nri.v1alpha1.ContainerState.CONTAINER_STOPPED;
                            default -> io.cri4j.hook.nri.v1alpha1.ContainerState.CONTAINER_UNKNOWN;
                        })
                .build();
    }

    // ---------------------------------------------------------------- the interceptor

    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        String svc = method.getServiceName();
        if (svc == null || !svc.endsWith(".RuntimeService")) {
            return false;
        }
        String name = method.getBareMethodName();
        return METHODS.contains(name)
                || CARRYING_IDS.contains(name)
                || (svc.equals(V1)
                        && (name.equals("ListPodSandbox") || name.equals("PodSandboxStatus")));
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> call) {
        String name = call.method().getBareMethodName();
        // the runtime sees its container ids, the client and the hooks the proxy's
        Function<Object, CompletionStage<Object>> proceed =
                r -> call.proceed(ids.requestToBackend((Q) r)).thenApply(ids::responseToClient);
        if (call.method().getServiceName().equals(V1)
                && (name.equals("ListPodSandbox") || name.equals("PodSandboxStatus"))) {
            return (CompletionStage<R>) visibleOnly(name, call, proceed);
        }
        if (!METHODS.contains(name)) {
            return proceed.apply(call.request()).thenApply(r -> (R) r);
        }
        return applies.apply(call.method())
                .thenCompose(
                        hooked -> {
                            if (!hooked) {
                                return proceed.apply(call.request());
                            }
                            return guard(() -> lifecycle(name, call.request(), proceed));
                        })
                .thenApply(r -> (R) r);
    }

    /**
     * A server-streaming call ({@code GetContainerEvents}, {@code StreamContainers}, ...): the
     * request's container ids as the runtime knows them, every response's as the client does.
     */
    @Override
    public <Q, R> void interceptServerStreaming(StreamingChain<Q, R> call) {
        StreamObserver<R> client = call.responses();
        call.proceed(
                ids.requestToBackend(call.request()),
                new StreamObserver<>() {
                    @Override
                    public void onNext(R r) {
                        client.onNext(ids.responseToClient(r));
                    }

                    @Override
                    public void onError(Throwable t) {
                        client.onError(t);
                    }

                    @Override
                    public void onCompleted() {
                        client.onCompleted();
                    }
                });
    }

    /** The RuntimeService methods whose messages can carry a container's id. */
    private static Set<String> carryingIds() {
        Set<String> names = new java.util.TreeSet<>();
        for (CriMethods.Method m : CriMethods.V1) {
            if (m.service().equals(V1)
                    && (ContainerIdFields.carries(m.request())
                            || ContainerIdFields.carries(m.response()))) {
                names.add(m.name());
            }
        }
        return Set.copyOf(names);
    }

    /** One lifecycle call: the host's method for it, with the proxy's step. */
    private CompletionStage<Object> lifecycle(
            String name, Object req, Function<Object, CompletionStage<Object>> proceed) {
        return switch (name) {
            case "RunPodSandbox" -> runPodSandbox((RunPodSandboxRequest) req, proceed);
            case "StopPodSandbox" -> stopPodSandbox((StopPodSandboxRequest) req, proceed);
            case "RemovePodSandbox" -> removePodSandbox((RemovePodSandboxRequest) req, proceed);
            case "UpdatePodSandboxResources" ->
                    updatePodSandbox((UpdatePodSandboxResourcesRequest) req, proceed);
            case "CreateContainer" -> createContainer((CreateContainerRequest) req, proceed);
            case "StartContainer" -> {
                String id = canonical(((StartContainerRequest) req).getContainerId());
                yield host.startContainer(
                        id, recorded(proceed, req, id, ContainerState.CONTAINER_RUNNING));
            }
            case "StopContainer" -> {
                String id = canonical(((StopContainerRequest) req).getContainerId());
                yield host.stopContainer(
                        id, recorded(proceed, req, id, ContainerState.CONTAINER_EXITED));
            }
            case "RemoveContainer" -> {
                String id = canonical(((RemoveContainerRequest) req).getContainerId());
                yield host.removeContainer(
                        id,
                        () ->
                                proceed.apply(req)
                                        .thenApply(
                                                r -> {
                                                    store.removeContainer(id);
                                                    return r;
                                                }));
            }
            case "UpdateContainerResources" ->
                    updateContainer((UpdateContainerResourcesRequest) req, proceed);
            default -> proceed.apply(req);
        };
    }

    /**
     * The proxy's full id of the container a request names: by the proxy's id, a unique prefix of
     * it, or the runtime's id.
     */
    private String canonical(String id) {
        return ids.toClient(ids.toBackend(id));
    }

    /** The relayed call, then container {@code id} recorded in state {@code s}. */
    private Supplier<CompletionStage<Object>> recorded(
            Function<Object, CompletionStage<Object>> proceed,
            Object req,
            String id,
            ContainerState s) {
        return () -> proceed.apply(req).thenApply(r -> state(id, s, r));
    }

    /**
     * {@code ListPodSandbox} and {@code PodSandboxStatus} without the pods whose {@code
     * RunPodSandbox} hooks still run (NotFound for the status of one).
     */
    @SuppressWarnings("unchecked")
    private <Q, R> CompletionStage<?> visibleOnly(
            String name,
            AsyncUnaryChain<Q, R> call,
            Function<Object, CompletionStage<Object>> proceed) {
        if (!host.anyPending()) {
            return proceed.apply(call.request());
        }
        if (name.equals("PodSandboxStatus")) {
            String id = ((PodSandboxStatusRequest) call.request()).getPodSandboxId();
            if (host.isPending(id)) {
                return CompletableFuture.failedFuture(
                        io.grpc.Status.NOT_FOUND
                                .withDescription(
                                        "pod sandbox "
                                                + id
                                                + " not found: its RunPodSandbox hooks are still"
                                                + " running")
                                .asException());
            }
            return proceed.apply(call.request());
        }
        return proceed.apply(call.request())
                .thenApply(
                        r -> {
                            ListPodSandboxResponse list = (ListPodSandboxResponse) r;
                            return (R)
                                    ListPodSandboxResponse.newBuilder()
                                            .addAllItems(
                                                    list.getItemsList().stream()
                                                            .filter(p -> !host.isPending(p.getId()))
                                                            .toList())
                                            .build();
                        });
    }

    /** Runs {@code body}, turning what it throws into a failed stage. */
    private static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    // ---------------------------------------------------------------- pods

    private CompletionStage<Object> runPodSandbox(
            RunPodSandboxRequest req, Function<Object, CompletionStage<Object>> proceed) {
        return host.runPodSandbox(
                req,
                sending ->
                        proceed.apply(sending)
                                .thenApply(
                                        resp -> {
                                            store.putPod(
                                                    new CheckpointStore.Pod(
                                                            ((RunPodSandboxResponse) resp)
                                                                    .getPodSandboxId(),
                                                            sending.getConfig(),
                                                            sending.getRuntimeHandler()));
                                            return resp;
                                        }),
                resp -> ((RunPodSandboxResponse) resp).getPodSandboxId());
    }

    private CompletionStage<Object> stopPodSandbox(
            StopPodSandboxRequest req, Function<Object, CompletionStage<Object>> proceed) {
        String id = req.getPodSandboxId();
        return host.stopPodSandbox(
                id,
                () ->
                        proceed.apply(req)
                                .thenApply(
                                        resp -> {
                                            for (CheckpointStore.Ctr c : store.containers()) {
                                                if (c.podId().equals(id)) {
                                                    store.putContainer(
                                                            c.withState(
                                                                    ContainerState
                                                                            .CONTAINER_EXITED));
                                                }
                                            }
                                            return resp;
                                        }));
    }

    private CompletionStage<Object> removePodSandbox(
            RemovePodSandboxRequest req, Function<Object, CompletionStage<Object>> proceed) {
        String id = req.getPodSandboxId();
        return host.removePodSandbox(
                id,
                () ->
                        proceed.apply(req)
                                .thenApply(
                                        resp -> {
                                            store.removePod(id);
                                            nriPods.remove(id);
                                            for (CheckpointStore.Ctr c : store.containers()) {
                                                if (c.podId().equals(id)) {
                                                    store.removeContainer(c.id());
                                                }
                                            }
                                            return resp;
                                        }));
    }

    private CompletionStage<Object> updatePodSandbox(
            UpdatePodSandboxResourcesRequest req,
            Function<Object, CompletionStage<Object>> proceed) {
        String id = req.getPodSandboxId();
        return host.updatePodSandbox(
                req,
                () ->
                        proceed.apply(req)
                                .thenApply(
                                        resp -> {
                                            store.pod(id).ifPresent(p -> podUpdated(p, req));
                                            return resp;
                                        }));
    }

    private void podUpdated(CheckpointStore.Pod p, UpdatePodSandboxResourcesRequest req) {
        PodSandboxConfig.Builder c = p.config().toBuilder();
        if (req.hasResources()) {
            c.getLinuxBuilder().setResources(req.getResources());
        }
        if (req.hasOverhead()) {
            c.getLinuxBuilder().setOverhead(req.getOverhead());
        }
        store.putPod(new CheckpointStore.Pod(p.id(), c.build(), p.runtimeHandler()));
    }

    // ---------------------------------------------------------------- containers

    private CompletionStage<Object> createContainer(
            CreateContainerRequest req, Function<Object, CompletionStage<Object>> proceed) {
        String podId = req.getPodSandboxId();
        Optional<CheckpointStore.Pod> stored = store.pod(podId);
        // the runtime takes the pod's cgroup parent from the request: the pod as its hooks made it
        PodSandboxConfig podConfig =
                stored.map(CheckpointStore.Pod::config).orElse(req.getSandboxConfig());
        // the proxy names the container before its hooks run: hooks and client see this id from
        // CreateContainer on, the runtime its own (kept in the container's annotation)
        String id = ContainerIds.newId();
        return host.createContainer(
                podId,
                podConfig,
                req.getConfig(),
                id,
                config -> {
                    CreateContainerRequest.Builder sending =
                            req.toBuilder().setConfig(config).setSandboxConfig(podConfig);
                    sending.getConfigBuilder().putAnnotations(ContainerIds.ANNOTATION, id);
                    ids.creating(id);
                    return proceed.apply(sending.build())
                            .thenApply(resp -> created(id, podId, config, resp))
                            .whenComplete((r, t) -> ids.createdOrFailed(id));
                },
                resp -> ((CreateContainerResponse) resp).getContainerId());
    }

    /**
     * The runtime created container {@code id} under the id in {@code resp}: both recorded, the
     * answer with the proxy's id.
     */
    private Object created(String id, String podId, ContainerConfig config, Object resp) {
        String backendId = ((CreateContainerResponse) resp).getContainerId();
        ids.put(id, backendId);
        store.putContainer(
                new CheckpointStore.Ctr(id, podId, config, ContainerState.CONTAINER_CREATED));
        return CreateContainerResponse.newBuilder().setContainerId(id).build();
    }

    private Object state(String id, ContainerState s, Object resp) {
        store.container(id).ifPresent(c -> store.putContainer(c.withState(s)));
        return resp;
    }

    /** A container the backend reports exited: recorded, and announced by the host once. */
    private CompletionStage<Void> exited(String id) {
        state(id, ContainerState.CONTAINER_EXITED, null);
        return host.containerExited(id);
    }

    private CompletionStage<Object> updateContainer(
            UpdateContainerResourcesRequest asked,
            Function<Object, CompletionStage<Object>> proceed) {
        String id = canonical(asked.getContainerId());
        UpdateContainerResourcesRequest req =
                id.equals(asked.getContainerId())
                        ? asked
                        : asked.toBuilder().setContainerId(id).build();
        // as containerd applies an update: the recorded resources with the request's set fields
        LinuxContainerResources requested =
                store.container(id)
                        .map(x -> set(x.config().getLinux().getResources(), req.getLinux()))
                        .orElse(req.getLinux());
        boolean hooked =
                chain().events().contains(HookEvent.UPDATE_CONTAINER)
                        || chain().events().contains(HookEvent.POST_UPDATE_CONTAINER);
        UpdateContainerResourcesRequest seen =
                hooked ? req.toBuilder().setLinux(requested).build() : req;
        return host.updateContainer(
                seen,
                sending -> proceed.apply(sending).thenApply(resp -> updated(id, sending, resp)));
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
                    backendCall(
                                    RuntimeServiceGrpc.getUpdateContainerResourcesMethod(),
                                    a.value().toBuilder()
                                            .setContainerId(ids.toBackend(u.getContainerId()))
                                            .build())
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
                                            .setContainerId(ids.toBackend(e.getContainerId()))
                                            .setTimeout(0)
                                            .build())
                            .handle(
                                    (v, t) -> {
                                        if (t == null) {
                                            exited(e.getContainerId());
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

    /** Stops following exits, shuts the hooks down and stops the chain's threads. */
    @Override
    public void close() {
        exits.close();
        host.close();
    }
}
