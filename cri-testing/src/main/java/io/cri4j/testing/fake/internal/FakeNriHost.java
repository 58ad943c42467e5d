package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.RemoveContainerResponse;
import io.cri4j.cri.v1.RemovePodSandboxResponse;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.StartContainerResponse;
import io.cri4j.cri.v1.StopContainerResponse;
import io.cri4j.cri.v1.StopPodSandboxResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesResponse;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest;
import io.cri4j.cri.v1.UpdatePodSandboxResourcesResponse;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.DeviceNodes;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.host.NriFromCri;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.ContainerEviction;
import io.cri4j.nri.api.ContainerState;
import io.cri4j.nri.api.ContainerUpdate;
import io.cri4j.nri.api.OptionalInt;
import io.cri4j.nri.api.PodSandbox;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.cri4j.testing.fake.internal.FakeState.SandboxRecord;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fake runtime as an NRI host for in-process hooks: runs a {@link HookChain} around the CRI
 * calls, as containerd's CRI plugin runs NRI plugins, and applies the hooks' adjustments to the
 * fake's pods and containers (so they show in {@code ContainerStatus}, {@code ExecSync}'s env and
 * the stored config), their updates and evictions to other fake containers. Pre-events
 * (AdjustPodSandbox, RunPodSandbox, CreateContainer, StartContainer, UpdateContainer,
 * UpdatePodSandbox) come before the state change, the others after it; post-events' failures are
 * logged. Hooks of {@link HookProvider}s (external NRI plugins) run in the same chain as the
 * in-process hooks; the providers are started with a {@link HookHost} backed by the fake's state.
 */
public final class FakeNriHost implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FakeNriHost.class);
    private static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);

    private final FakeState state;
    private final HookChain chain;
    private final CriAdjuster adjuster = CriAdjuster.create();
    private final DeviceNodes devices = DeviceNodes.system();
    private final String runtimeName;
    private final String runtimeVersion;

    private final List<Object> inProcess;
    private final Set<String> inProcessNames = new HashSet<>();
    private final List<HookProvider> providers;
    private final List<HookProvider> started = new ArrayList<>();
    private final Set<Object> collisionsLogged = Collections.newSetFromMap(new IdentityHashMap<>());
    private volatile Combined combined;

    /** The chain's hooks for one set of provider lists (compared by identity). */
    private record Combined(List<List<AsyncHook>> parts, List<Object> all) {}

    public FakeNriHost(
            FakeState state,
            List<Object> hooks,
            List<HookProvider> providers,
            String runtimeName,
            String runtimeVersion) {
        this.state = state;
        this.inProcess = List.copyOf(hooks);
        for (Object h : inProcess) {
            inProcessNames.add(h instanceof AsyncHook a ? a.name() : ((Hook) h).name());
        }
        this.providers = List.copyOf(providers);
        this.chain =
                HookChain.builder().name("fake-runtime-hooks").source(this::currentHooks).build();
        this.runtimeName = runtimeName;
        this.runtimeVersion = runtimeVersion;
    }

    /**
     * The in-process hooks, then the providers' hooks whose names no other hook has; the same list
     * instance while no provider's list changed.
     */
    private Collection<?> currentHooks() {
        List<List<AsyncHook>> now = new ArrayList<>(providers.size());
        for (HookProvider p : providers) {
            now.add(p.hooks());
        }
        Combined c = combined;
        if (c != null && sameLists(c.parts, now)) {
            return c.all;
        }
        synchronized (this) {
            List<Object> all = new ArrayList<>(inProcess);
            Set<String> names = new HashSet<>(inProcessNames);
            for (List<AsyncHook> part : now) {
                for (AsyncHook h : part) {
                    if (names.add(h.name())) {
                        all.add(h);
                    } else if (collisionsLogged.add(h)) {
                        log.warn(
                                "hook {} of a hook provider is not run: another hook of the fake runtime has its "
                                        + "name",
                                h.name());
                    }
                }
            }
            combined = new Combined(now, List.copyOf(all));
            return combined.all;
        }
    }

    private static boolean sameLists(List<List<AsyncHook>> a, List<List<AsyncHook>> b) {
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i) != b.get(i)) {
                return false;
            }
        }
        return true;
    }

    /** What a provider sees of the fake: its name, its pods and containers, its update path. */
    private final HookHost hookHost =
            new HookHost() {
                @Override
                public String runtimeName() {
                    return runtimeName;
                }

                @Override
                public String runtimeVersion() {
                    return runtimeVersion;
                }

                @Override
                public CompletionStage<RuntimeSnapshot> snapshot() {
                    try {
                        List<PodSandbox> pods = new ArrayList<>();
                        state.sandboxes().forEach(s -> pods.add(pod(s)));
                        List<Container> containers = new ArrayList<>();
                        state.containers().forEach(c -> containers.add(container(c)));
                        return CompletableFuture.completedFuture(
                                new RuntimeSnapshot(pods, containers));
                    } catch (RuntimeException e) {
                        return CompletableFuture.failedFuture(e);
                    }
                }

                @Override
                public RuntimeHandle runtime() {
                    return FakeNriHost.this::updateContainers;
                }
            };

    /**
     * Configures and synchronizes the in-process hooks, waiting up to the registration timeout, then
     * starts the hook providers.
     *
     * @throws IllegalStateException when a hook under the Fail policy cannot be configured
     * @throws IOException when a provider cannot start (its socket cannot be bound, for one); the providers
     *     started so far are closed
     */
    public void start() throws IOException {
        HookConfiguration config =
                new HookConfiguration(
                        "",
                        runtimeName,
                        runtimeVersion,
                        REGISTRATION_TIMEOUT,
                        REQUEST_TIMEOUT,
                        this::updateContainers);
        try {
            chain.configure(config)
                    .toCompletableFuture()
                    .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
            List<PodSandbox> pods = new ArrayList<>();
            state.sandboxes().forEach(s -> pods.add(pod(s)));
            List<Container> containers = new ArrayList<>();
            state.containers().forEach(c -> containers.add(container(c)));
            List<ContainerUpdate> updates =
                    chain.synchronize(pods, containers)
                            .toCompletableFuture()
                            .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
            applyUpdates(updates, null, false);
            for (HookProvider p : providers) {
                try {
                    p.start(hookHost);
                } catch (IOException | RuntimeException e) {
                    closeProviders();
                    throw e;
                }
                started.add(p);
            }
        } catch (ExecutionException e) {
            throw new IllegalStateException(
                    "fake runtime hooks: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "fake runtime hooks did not register within " + REGISTRATION_TIMEOUT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(
                    "interrupted while registering the fake runtime's hooks", e);
        }
    }

    /** Closes the hook providers, shuts the hooks down and stops the chain's threads. */
    @Override
    public void close() {
        closeProviders();
        chain.close();
    }

    private void closeProviders() {
        for (HookProvider p : started) {
            try {
                p.close();
            } catch (RuntimeException e) {
                log.warn("closing hook provider {}: {}", p, e.toString());
            }
        }
        started.clear();
    }

    // ---------------------------------------------------------------- NRI views of the fake's
    // state

    PodSandbox pod(SandboxRecord s) {
        PodSandbox.Builder b =
                NriFromCri.pod(s.id, s.config, s.runtimeHandler).toBuilder().setPid(s.pid);
        if (!s.ip.isEmpty()) {
            b.addIps(s.ip);
        }
        if (s.resources != null) {
            b.getLinuxBuilder().setPodResources(NriFromCri.resources(s.resources));
        }
        return b.build();
    }

    private PodSandbox podOf(String sandboxId) {
        try {
            return pod(state.sandbox(sandboxId));
        } catch (StatusRuntimeException e) {
            return PodSandbox.newBuilder().setId(sandboxId).build();
        }
    }

    Container container(ContainerRecord c) {
        NamespaceOption ns = NamespaceOption.getDefaultInstance();
        try {
            ns =
                    state.sandbox(c.sandboxId)
                            .config
                            .getLinux()
                            .getSecurityContext()
                            .getNamespaceOptions();
        } catch (StatusRuntimeException e) {
            // the pod is gone (removing its containers): no namespaces to tell
        }
        Container.Builder b =
                NriFromCri.container(c.id, c.sandboxId, c.config, ns, devices).toBuilder()
                        .setState(
                                switch (c.state) {
                                    case CONTAINER_CREATED -> ContainerState.CONTAINER_CREATED;
                                    case CONTAINER_RUNNING -> ContainerState.CONTAINER_RUNNING;
                                    case CONTAINER_EXITED -> ContainerState.CONTAINER_STOPPED;
                                    default -> ContainerState.CONTAINER_UNKNOWN;
                                })
                        .setPid(c.pid)
                        .setCreatedAt(c.createdAt)
                        .setStartedAt(c.startedAt)
                        .setFinishedAt(c.finishedAt)
                        .setExitCode(c.exitCode)
                        .setStatusReason(c.reason)
                        .setStatusMessage(c.message)
                        .clearAnnotations()
                        .putAllAnnotations(c.annotations);
        if (c.resources != null) {
            b.getLinuxBuilder()
                    .setResources(NriFromCri.resources(c.resources))
                    .setOomScoreAdj(
                            OptionalInt.newBuilder().setValue(c.resources.getOomScoreAdj()));
        }
        return b.build();
    }

    // ---------------------------------------------------------------- pods

    public CompletionStage<RunPodSandboxResponse> runPodSandbox(RunPodSandboxRequest request) {
        return async(
                () -> {
                    String id = state.newObjectId();
                    PodSandbox draft = NriFromCri.pod(id, request);
                    return chain.adjustPodSandbox(draft)
                            .thenCompose(
                                    adjustment -> {
                                        RunPodSandboxRequest adjusted =
                                                CriAdjuster.enforce(
                                                        adjuster.apply(request, adjustment),
                                                        HookEvent.ADJUST_POD_SANDBOX,
                                                        chain::policyOf);
                                        state.runPodSandbox(
                                                adjusted.getConfig(),
                                                adjusted.getRuntimeHandler(),
                                                id);
                                        return chain.runPodSandbox(pod(state.sandbox(id)))
                                                .handle(
                                                        (v, t) -> {
                                                            if (t != null) {
                                                                state.removePodSandbox(
                                                                        id); // as containerd: a pod
                                                                // its hooks refused is
                                                                // not left behind
                                                                throw new CompletionException(t);
                                                            }
                                                            return RunPodSandboxResponse
                                                                    .newBuilder()
                                                                    .setPodSandboxId(id)
                                                                    .build();
                                                        });
                                    });
                });
    }

    public CompletionStage<StopPodSandboxResponse> stopPodSandbox(String id) {
        return async(
                () -> {
                    state.stopPodSandbox(id);
                    return chain.stopPodSandbox(pod(state.sandbox(id)))
                            .thenApply(v -> StopPodSandboxResponse.getDefaultInstance());
                });
    }

    public CompletionStage<RemovePodSandboxResponse> removePodSandbox(String id) {
        return async(
                () -> {
                    PodSandbox pod;
                    try {
                        pod = pod(state.sandbox(id));
                    } catch (StatusRuntimeException e) {
                        state.removePodSandbox(id); // unknown: succeeds, no event
                        return CompletableFuture.completedFuture(
                                RemovePodSandboxResponse.getDefaultInstance());
                    }
                    state.removePodSandbox(id);
                    return chain.removePodSandbox(pod)
                            .thenApply(v -> RemovePodSandboxResponse.getDefaultInstance());
                });
    }

    public CompletionStage<UpdatePodSandboxResourcesResponse> updatePodSandboxResources(
            UpdatePodSandboxResourcesRequest request) {
        return async(
                () -> {
                    SandboxRecord s = state.sandbox(request.getPodSandboxId());
                    return chain.updatePodSandbox(
                                    pod(s),
                                    NriFromCri.resources(request.getOverhead()),
                                    NriFromCri.resources(request.getResources()))
                            .thenCompose(
                                    v -> {
                                        state.updatePodSandboxResources(
                                                s.id, request.getResources());
                                        return logged(
                                                chain.postUpdatePodSandbox(pod(s)),
                                                HookEvent.POST_UPDATE_POD_SANDBOX);
                                    })
                            .thenApply(v -> UpdatePodSandboxResourcesResponse.getDefaultInstance());
                });
    }

    // ---------------------------------------------------------------- containers

    public CompletionStage<CreateContainerResponse> createContainer(
            CreateContainerRequest request) {
        return async(
                () -> {
                    SandboxRecord s = state.sandbox(request.getPodSandboxId());
                    PodSandbox pod = pod(s);
                    String id = state.newObjectId();
                    Container draft =
                            NriFromCri.container(
                                    id,
                                    s.id,
                                    request.getConfig(),
                                    s.config.getLinux().getSecurityContext().getNamespaceOptions(),
                                    devices);
                    return chain.createContainerDetailed(pod, draft)
                            .thenCompose(
                                    creation -> {
                                        ContainerConfig config =
                                                CriAdjuster.enforce(
                                                        adjuster.apply(
                                                                request.getConfig(), creation),
                                                        HookEvent.CREATE_CONTAINER,
                                                        chain::policyOf);
                                        try {
                                            state.createContainer(
                                                    s.id, config, request.getSandboxConfig(), id);
                                        } catch (RuntimeException e) {
                                            // as containerd's undo of a failed creation: the hooks
                                            // hear the container go
                                            logged(
                                                    chain.stopContainer(pod, draft)
                                                            .thenApply(r -> null),
                                                    HookEvent.STOP_CONTAINER);
                                            logged(
                                                    chain.removeContainer(pod, draft),
                                                    HookEvent.REMOVE_CONTAINER);
                                            throw e;
                                        }
                                        apply(creation.result(), HookEvent.CREATE_CONTAINER);
                                        return logged(
                                                chain.postCreateContainer(
                                                        pod, container(state.container(id))),
                                                HookEvent.POST_CREATE_CONTAINER);
                                    })
                            .thenApply(
                                    v ->
                                            CreateContainerResponse.newBuilder()
                                                    .setContainerId(id)
                                                    .build());
                });
    }

    public CompletionStage<StartContainerResponse> startContainer(String id) {
        return async(
                () -> {
                    ContainerRecord c = state.container(id);
                    PodSandbox pod = podOf(c.sandboxId);
                    return chain.startContainer(pod, container(c))
                            .thenCompose(
                                    v -> {
                                        state.startContainer(id);
                                        return logged(
                                                chain.postStartContainer(
                                                        pod, container(state.container(id))),
                                                HookEvent.POST_START_CONTAINER);
                                    })
                            .thenApply(v -> StartContainerResponse.getDefaultInstance());
                });
    }

    public CompletionStage<StopContainerResponse> stopContainer(String id, long timeout) {
        return async(
                () -> {
                    state.stopContainer(id, timeout);
                    ContainerRecord c = state.container(id);
                    return chain.stopContainer(podOf(c.sandboxId), container(c))
                            .thenApply(
                                    result -> {
                                        apply(result, HookEvent.STOP_CONTAINER);
                                        return StopContainerResponse.getDefaultInstance();
                                    });
                });
    }

    public CompletionStage<RemoveContainerResponse> removeContainer(String id) {
        return async(
                () -> {
                    ContainerRecord c;
                    try {
                        c = state.container(id);
                    } catch (StatusRuntimeException e) {
                        return CompletableFuture.completedFuture(
                                RemoveContainerResponse.getDefaultInstance());
                    }
                    PodSandbox pod = podOf(c.sandboxId);
                    Container before = container(c);
                    state.removeContainer(id);
                    return chain.removeContainer(pod, before)
                            .thenApply(v -> RemoveContainerResponse.getDefaultInstance());
                });
    }

    public CompletionStage<UpdateContainerResourcesResponse> updateContainerResources(
            UpdateContainerResourcesRequest request) {
        return async(
                () -> {
                    ContainerRecord c = state.container(request.getContainerId());
                    PodSandbox pod = podOf(c.sandboxId);
                    return chain.updateContainer(
                                    pod, container(c), NriFromCri.resources(request.getLinux()))
                            .thenCompose(
                                    result -> {
                                        UpdateContainerResourcesRequest effective = request;
                                        List<ContainerUpdate> others = new ArrayList<>();
                                        for (ContainerUpdate u : result.updates()) {
                                            if (u.getContainerId().equals(c.id)) {
                                                effective =
                                                        CriAdjuster.enforce(
                                                                adjuster.apply(request, u),
                                                                HookEvent.UPDATE_CONTAINER,
                                                                chain::policyOf);
                                            } else {
                                                others.add(u);
                                            }
                                        }
                                        applyUpdates(others, HookEvent.UPDATE_CONTAINER, false);
                                        evict(result.evictions());
                                        state.updateContainerResources(
                                                c.id,
                                                effective.getLinux(),
                                                effective.getAnnotationsMap());
                                        return logged(
                                                chain.postUpdateContainer(
                                                        pod, container(state.container(c.id))),
                                                HookEvent.POST_UPDATE_CONTAINER);
                                    })
                            .thenApply(v -> UpdateContainerResourcesResponse.getDefaultInstance());
                });
    }

    // ---------------------------------------------------------------- updates and evictions

    private void apply(HookResult result, HookEvent event) {
        applyUpdates(result.updates(), event, false);
        evict(result.evictions());
    }

    /**
     * Applies updates to fake containers; an update of an unknown container is skipped, as containerd does.
     *
     * @param collect true to return the failed updates instead of failing with the first
     */
    private List<ContainerUpdate> applyUpdates(
            List<ContainerUpdate> updates, HookEvent event, boolean collect) {
        List<ContainerUpdate> failed = new ArrayList<>();
        for (ContainerUpdate u : updates) {
            ContainerRecord c;
            try {
                c = state.container(u.getContainerId());
            } catch (StatusRuntimeException e) {
                continue;
            }
            LinuxContainerResources base =
                    c.resources == null
                            ? LinuxContainerResources.getDefaultInstance()
                            : c.resources;
            Adjusted<UpdateContainerResourcesRequest> a =
                    adjuster.apply(
                            UpdateContainerResourcesRequest.newBuilder()
                                    .setContainerId(c.id)
                                    .setLinux(base)
                                    .build(),
                            u);
            try {
                UpdateContainerResourcesRequest r =
                        u.getIgnoreFailure()
                                ? a.value()
                                : CriAdjuster.enforce(a, event, chain::policyOf);
                if (!a.unsupported().isEmpty()) {
                    log.warn(
                            "update of container {} (ignore_failure): CRI cannot carry {}",
                            c.id,
                            a.unsupported());
                }
                state.updateContainerResources(c.id, r.getLinux(), Map.of());
            } catch (RuntimeException e) {
                if (!collect) {
                    throw e;
                }
                failed.add(u);
            }
        }
        return failed;
    }

    private void evict(List<ContainerEviction> evictions) {
        for (ContainerEviction e : evictions) {
            try {
                log.info("evicting container {}: {}", e.getContainerId(), e.getReason());
                state.stopContainer(e.getContainerId(), 0);
            } catch (StatusRuntimeException ex) {
                log.debug("eviction of unknown container {} skipped", e.getContainerId());
            }
        }
    }

    /** The hooks' own requests ({@code RuntimeHandle.updateContainers}). */
    private CompletionStage<List<ContainerUpdate>> updateContainers(
            List<ContainerUpdate> updates, List<ContainerEviction> evictions) {
        try {
            List<ContainerUpdate> failed = applyUpdates(updates, null, true);
            evict(evictions);
            return CompletableFuture.completedFuture(failed);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    // ---------------------------------------------------------------- helpers

    /** Runs {@code body}, turning what it throws into a failed stage. */
    private static <T> CompletionStage<T> async(Supplier<CompletionStage<T>> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** A post-event's stage whose failure is logged, not passed on: the operation has happened. */
    private static CompletionStage<Void> logged(CompletionStage<?> stage, HookEvent event) {
        return stage.handle(
                (v, t) -> {
                    if (t != null) {
                        log.warn(
                                "{}: {}",
                                event.displayName(),
                                t instanceof CompletionException && t.getCause() != null
                                        ? t.getCause().getMessage()
                                        : t.getMessage());
                    }
                    return null;
                });
    }

    /** The status a call fails with. */
    public static Status status(Throwable t) {
        return io.cri4j.hook.host.HookStatuses.of(t);
    }
}
