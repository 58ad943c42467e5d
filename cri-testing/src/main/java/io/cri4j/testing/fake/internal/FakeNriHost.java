package io.cri4j.testing.fake.internal;

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
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.DeviceNodes;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.host.LifecycleHost;
import io.cri4j.hook.host.NriFromCri;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.OptionalInt;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
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
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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

    private final List<Object> inProcess;
    private final Set<String> inProcessNames = new HashSet<>();
    private final List<HookProvider> providers;
    private final List<HookProvider> started = new ArrayList<>();
    private final Set<Object> collisionsLogged = Collections.newSetFromMap(new IdentityHashMap<>());
    private volatile Combined combined;
    private final LifecycleHost host;
    private AutoCloseable exits;

    /** The chain's hooks for one set of provider lists (compared by identity). */
    private record Combined(List<List<AsyncHook>> parts, List<Object> all) {}

    public FakeNriHost(
            FakeState state,
            List<Object> hooks,
            List<HookProvider> providers,
            String runtimeName,
            String runtimeVersion) {
        this(state, hooks, providers, runtimeName, runtimeVersion, null);
    }

    /**
     * @param meterRegistry a {@code MeterRegistry} the hook chain records into ({@code chain}
     *     {@code fake-runtime-hooks}), or null
     */
    public FakeNriHost(
            FakeState state,
            List<Object> hooks,
            List<HookProvider> providers,
            String runtimeName,
            String runtimeVersion,
            Object meterRegistry) {
        this.state = state;
        this.inProcess = List.copyOf(hooks);
        for (Object h : inProcess) {
            inProcessNames.add(h instanceof AsyncHook a ? a.name() : ((Hook) h).name());
        }
        this.providers = List.copyOf(providers);
        HookChain.Builder cb =
                HookChain.builder().name("fake-runtime-hooks").source(this::currentHooks);
        if (meterRegistry != null) {
            Meters.bind(cb, meterRegistry);
        }
        this.chain = cb.build();
        this.host =
                LifecycleHost.builder()
                        .chain(chain)
                        .runtime(new StateRuntime())
                        .runtimeName(runtimeName, runtimeVersion)
                        .devices(devices)
                        .registrationTimeout(REGISTRATION_TIMEOUT)
                        .requestTimeout(REQUEST_TIMEOUT)
                        .build();
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

    /** The fake's state as the lifecycle host sees it. */
    private final class StateRuntime implements LifecycleHost.Runtime {
        @Override
        public Optional<PodSandbox> pod(String id) {
            try {
                return Optional.of(FakeNriHost.this.pod(state.sandbox(id)));
            } catch (StatusRuntimeException e) {
                return Optional.empty();
            }
        }

        @Override
        public Optional<Container> container(String id) {
            try {
                return Optional.of(FakeNriHost.this.container(state.container(id)));
            } catch (StatusRuntimeException e) {
                return Optional.empty();
            }
        }

        @Override
        public RuntimeSnapshot snapshot() {
            List<PodSandbox> pods = new ArrayList<>();
            state.sandboxes().forEach(s -> pods.add(FakeNriHost.this.pod(s)));
            List<Container> containers = new ArrayList<>();
            state.containers().forEach(c -> containers.add(FakeNriHost.this.container(c)));
            return new RuntimeSnapshot(pods, containers);
        }

        @Override
        public CompletionStage<?> undoPodSandbox(String id) {
            state.removePodSandbox(id);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> apply(
                List<ContainerUpdate> updates, List<ContainerEviction> evictions, String what) {
            return updateContainers(updates, evictions);
        }
    }

    /** The lifecycle host the fake adapts: what hook providers see of the fake. */
    public LifecycleHost host() {
        return host;
    }

    /** Whether pod {@code id} is hidden while its RunPodSandbox hooks run. */
    public boolean isPending(String podId) {
        return host.isPending(podId);
    }

    /**
     * Configures and synchronizes the in-process hooks, waiting up to the registration timeout, then
     * starts the hook providers.
     *
     * @throws IllegalStateException when a hook under the Fail policy cannot be configured
     * @throws IOException when a provider cannot start (its socket cannot be bound, for one); the providers
     *     started so far are closed
     */
    public void start() throws IOException {
        host.start();
        // exits the fake reports (its containers exiting by themselves, evictions, stops) reach
        // the hooks once each as StopContainer
        exits =
                state.subscribe(
                        e -> {
                            if (e.getContainerEventType()
                                    == io.cri4j.cri.v1.ContainerEventType.CONTAINER_STOPPED_EVENT) {
                                host.containerExited(e.getContainerId());
                            }
                        });
        for (HookProvider p : providers) {
            try {
                p.start(host);
            } catch (IOException | RuntimeException e) {
                closeProviders();
                throw e;
            }
            started.add(p);
        }
    }

    /** Closes the hook providers, shuts the hooks down and stops the chain's threads. */
    @Override
    public void close() {
        closeProviders();
        if (exits != null) {
            try {
                exits.close();
            } catch (Exception e) {
                log.debug("unsubscribing from container events: {}", e.toString());
            }
        }
        host.close();
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
                        () ->
                                host.runPodSandbox(
                                        request,
                                        adjusted ->
                                                CompletableFuture.completedFuture(
                                                        state.runPodSandbox(
                                                                adjusted.getConfig(),
                                                                adjusted.getRuntimeHandler())),
                                        id -> id))
                .thenApply(id -> RunPodSandboxResponse.newBuilder().setPodSandboxId(id).build());
    }

    public CompletionStage<StopPodSandboxResponse> stopPodSandbox(String id) {
        return async(
                () ->
                        host.stopPodSandbox(
                                id,
                                () -> {
                                    state.stopPodSandbox(id);
                                    return done(StopPodSandboxResponse.getDefaultInstance());
                                }));
    }

    public CompletionStage<RemovePodSandboxResponse> removePodSandbox(String id) {
        return async(
                () ->
                        host.removePodSandbox(
                                id,
                                () -> {
                                    state.removePodSandbox(id);
                                    return done(RemovePodSandboxResponse.getDefaultInstance());
                                }));
    }

    public CompletionStage<UpdatePodSandboxResourcesResponse> updatePodSandboxResources(
            UpdatePodSandboxResourcesRequest request) {
        return async(
                () -> {
                    SandboxRecord s = state.sandbox(request.getPodSandboxId());
                    return host.updatePodSandbox(
                            request,
                            () -> {
                                state.updatePodSandboxResources(s.id, request.getResources());
                                return done(UpdatePodSandboxResourcesResponse.getDefaultInstance());
                            });
                });
    }

    // ---------------------------------------------------------------- containers

    public CompletionStage<CreateContainerResponse> createContainer(
            CreateContainerRequest request) {
        return async(
                () -> {
                    SandboxRecord s = state.sandbox(request.getPodSandboxId());
                    String id = state.newObjectId();
                    return host.createContainer(
                            s.id,
                            s.config,
                            request.getConfig(),
                            id,
                            config -> {
                                // ContainerStatus reports the config as requested, the hooks'
                                // changes are
                                // in the spec (as containerd)
                                state.createContainer(
                                        s.id,
                                        request.getConfig(),
                                        config,
                                        request.getSandboxConfig(),
                                        id);
                                return done(
                                        CreateContainerResponse.newBuilder()
                                                .setContainerId(id)
                                                .build());
                            },
                            CreateContainerResponse::getContainerId);
                });
    }

    public CompletionStage<StartContainerResponse> startContainer(String id) {
        return async(
                () -> {
                    state.container(id);
                    return host.startContainer(
                            id,
                            () -> {
                                state.startContainer(id);
                                return done(StartContainerResponse.getDefaultInstance());
                            });
                });
    }

    public CompletionStage<StopContainerResponse> stopContainer(String id, long timeout) {
        return async(
                () ->
                        host.stopContainer(
                                id,
                                () -> {
                                    state.stopContainer(id, timeout);
                                    return done(StopContainerResponse.getDefaultInstance());
                                }));
    }

    public CompletionStage<RemoveContainerResponse> removeContainer(String id) {
        return async(
                () ->
                        host.removeContainer(
                                id,
                                () -> {
                                    state.removeContainer(id);
                                    return done(RemoveContainerResponse.getDefaultInstance());
                                }));
    }

    public CompletionStage<UpdateContainerResourcesResponse> updateContainerResources(
            UpdateContainerResourcesRequest request) {
        return async(
                () -> {
                    ContainerRecord c = state.container(request.getContainerId());
                    return host.updateContainer(
                            request,
                            effective -> {
                                state.updateContainerResources(
                                        c.id, effective.getLinux(), effective.getAnnotationsMap());
                                return done(UpdateContainerResourcesResponse.getDefaultInstance());
                            });
                });
    }

    /** A completed step. */
    private static <T> CompletionStage<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }

    // ---------------------------------------------------------------- updates and evictions

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

    /** The status a call fails with. */
    public static Status status(Throwable t) {
        return io.cri4j.hook.host.HookStatuses.of(t);
    }

    /** Hands the registry to the chain; loaded only when there is one (Micrometer is optional). */
    private static final class Meters {
        static void bind(HookChain.Builder chain, Object registry) {
            chain.meterRegistry((io.micrometer.core.instrument.MeterRegistry) registry);
        }
    }
}
