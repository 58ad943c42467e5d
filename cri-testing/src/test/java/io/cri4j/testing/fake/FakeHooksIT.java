package io.cri4j.testing.fake;

import static io.cri4j.testing.fake.Cri.container;
import static io.cri4j.testing.fake.Cri.pod;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatus;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.ContainerUpdates;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.conformance.ContainerInfo;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The fake runtime as an NRI host: in-process hooks around real CRI calls over a unix socket. */
class FakeHooksIT {

    static final String IMAGE = "busybox:1.36";
    static final HookPolicy FAIL = HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL);
    static final HookPolicy IGNORE = HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.IGNORE);

    /** A hook written once, here hosted by the fake through the JUnit extension. */
    static final class InjectingHook implements Hook {
        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
            return PodSandboxAdjustment.builder().putLabel("tier", "gold").build();
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container container) {
            return HookResult.adjust(
                    Adjustments.create()
                            .addEnv(
                                    "INJECTED",
                                    pod.getLabelsOrDefault("tier", "none")
                                            + "-"
                                            + container.getName())
                            .removeEnv("GREETING")
                            .addAnnotation("example.com/hooked", "true")
                            .addMount("/cache", "bind", "/var/cache", "rbind", "ro")
                            .addDevice(Adjustments.device("/dev/injected-null", "c", 1, 3))
                            .setLinuxCpuSetCpus("0")
                            .setLinuxMemoryLimit(64L << 20)
                            .build());
        }
    }

    @RegisterExtension
    static FakeCriExtension cri = FakeCriExtension.unixSocket().addHook(new InjectingHook());

    @TempDir Path dir;

    private final List<FakeCriServer> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void close() {
        channels.forEach(ManagedChannel::shutdownNow);
        servers.forEach(FakeCriServer::close);
        channels.clear();
        servers.clear();
    }

    RuntimeServiceGrpc.RuntimeServiceBlockingStub fake(Object... hooks) throws Exception {
        FakeCriServer.Builder b =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("cri" + servers.size() + ".sock")));
        for (Object h : hooks) {
            if (h instanceof AsyncHook a) {
                b.addHook(a);
            } else {
                b.addHook((Hook) h);
            }
        }
        FakeCriServer server = b.build().start();
        servers.add(server);
        server.runtime().addImage(IMAGE);
        ManagedChannel ch = server.newChannel();
        channels.add(ch);
        return RuntimeServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS);
    }

    static String runPod(RuntimeServiceGrpc.RuntimeServiceBlockingStub rt, String name) {
        return rt.runPodSandbox(
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(pod(name, Map.of("app", name)))
                                .build())
                .getPodSandboxId();
    }

    static String create(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt,
            String pod,
            String podName,
            String name) {
        return rt.createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(pod)
                                .setConfig(container(name, IMAGE, Map.of()))
                                .setSandboxConfig(pod(podName, Map.of()))
                                .build())
                .getContainerId();
    }

    static ContainerStatus status(RuntimeServiceGrpc.RuntimeServiceBlockingStub rt, String id) {
        return rt.containerStatus(ContainerStatusRequest.newBuilder().setContainerId(id).build())
                .getStatus();
    }

    static Hook creating(
            String name, HookPolicy policy, BiFunction<PodSandbox, Container, HookResult> f) {
        return new Hook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return policy;
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container c) {
                return f.apply(pod, c);
            }
        };
    }

    // ---------------------------------------------------------------- adjustments land in the fake

    @Test
    void givenARegistryTheFakeRecordsItsHooksLatencyAndOutcome() throws Exception {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        FakeCriServer server =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("metered.sock")))
                        .addHook(new InjectingHook())
                        .meterRegistry(registry)
                        .build()
                        .start();
        servers.add(server);
        server.runtime().addImage(IMAGE);
        ManagedChannel ch = server.newChannel();
        channels.add(ch);
        var rt = RuntimeServiceGrpc.newBlockingStub(ch).withDeadlineAfter(20, TimeUnit.SECONDS);
        String pod = runPod(rt, "metered");
        create(rt, pod, "metered", "c1");
        create(rt, pod, "metered", "c2");
        io.micrometer.core.instrument.Timer t =
                registry.find("cri4j.hook.duration")
                        .tags(
                                "chain",
                                "fake-runtime-hooks",
                                "event",
                                "CreateContainer",
                                "outcome",
                                "adjusted")
                        .timer();
        assertThat(t).as("the hook's CreateContainer answers, as adjusted").isNotNull();
        assertThat(t.count()).isEqualTo(2);
    }

    @Test
    void aHookUnderTheExtensionAdjustsPodAndContainerVisiblyInStatusExecAndConfig() {
        cri.fakeRuntime().addImage(IMAGE);
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                cri.runtimeService().withDeadlineAfter(20, TimeUnit.SECONDS);
        String pod = runPod(rt, "web");
        assertThat(
                        rt.podSandboxStatus(
                                        PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(pod)
                                                .build())
                                .getStatus()
                                .getLabelsMap())
                .containsEntry("tier", "gold")
                .containsEntry("app", "web");
        String c = create(rt, pod, "web", "app");
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());

        // as on containerd: ContainerStatus reports the config as requested, the hooks' changes
        // are in the OCI spec the container runs with (verbose info's runtimeSpec)
        ContainerStatus s = status(rt, c);
        assertThat(s.getAnnotationsMap()).doesNotContainKey("example.com/hooked");
        assertThat(s.getMountsList())
                .extracting(
                        m -> m.getContainerPath() + "<-" + m.getHostPath() + ":" + m.getReadonly())
                .containsExactly("/data<-/tmp/data:false");
        assertThat(s.getResources().getLinux().getCpusetCpus()).isEmpty();
        assertThat(s.getResources().getLinux().getMemoryLimitInBytes()).isZero();
        ContainerInfo.RuntimeSpec spec = ContainerInfo.read(rt, c).runtimeSpec();
        assertThat(spec.annotations()).containsEntry("example.com/hooked", "true");
        assertThat(spec.mounts())
                .extracting(m -> m.destination() + "<-" + m.source() + ":" + m.options())
                .contains(
                        "/cache<-/var/cache:[rbind, rprivate, ro]",
                        "/data<-/tmp/data:[rbind, rprivate, rw]");
        assertThat(spec.cpusetCpus()).isEqualTo("0");
        assertThat(spec.memoryLimit()).isEqualTo(64L << 20);
        assertThat(spec.env()).containsEntry("INJECTED", "gold-app").doesNotContainKey("GREETING");
        assertThat(spec.devices())
                .extracting(ContainerInfo.SpecDevice::path, ContainerInfo.SpecDevice::major)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("/dev/injected-null", 1L));

        String env =
                rt.execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(c)
                                        .addCmd("env")
                                        .setTimeout(10)
                                        .build())
                        .getStdout()
                        .toString(StandardCharsets.UTF_8);
        assertThat(env).contains("INJECTED=gold-app").doesNotContain("GREETING=hello");

        ContainerConfig stored = cri.fakeRuntime().containerConfig(c);
        assertThat(stored.getDevicesList())
                .extracting(Device::getContainerPath, Device::getHostPath)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("/dev/injected-null", "/dev/null"));
        assertThat(cri.calls().lastRequest(CreateContainerRequest.class).toString())
                .doesNotContain("INJECTED");
    }

    @Test
    void eventsReachAHookInLifecycleOrder() throws Exception {
        List<String> events = new CopyOnWriteArrayList<>();
        Hook recorder =
                new Hook() {
                    @Override
                    public HookPolicy policy() {
                        return FAIL;
                    }

                    @Override
                    public void runPodSandbox(PodSandbox pod) {
                        events.add("RunPodSandbox " + pod.getName());
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container c) {
                        events.add("CreateContainer " + c.getName() + " in " + pod.getName());
                        return HookResult.none();
                    }

                    @Override
                    public void postCreateContainer(PodSandbox pod, Container c) {
                        events.add("PostCreateContainer " + c.getState());
                    }

                    @Override
                    public void startContainer(PodSandbox pod, Container c) {
                        events.add("StartContainer");
                    }

                    @Override
                    public void postStartContainer(PodSandbox pod, Container c) {
                        events.add("PostStartContainer " + c.getState());
                    }

                    @Override
                    public HookResult stopContainer(PodSandbox pod, Container c) {
                        events.add("StopContainer " + c.getState());
                        return HookResult.none();
                    }

                    @Override
                    public void removeContainer(PodSandbox pod, Container c) {
                        events.add("RemoveContainer");
                    }

                    @Override
                    public void stopPodSandbox(PodSandbox pod) {
                        events.add("StopPodSandbox");
                    }

                    @Override
                    public void removePodSandbox(PodSandbox pod) {
                        events.add("RemovePodSandbox");
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = fake(recorder);
        String pod = runPod(rt, "p");
        String c = create(rt, pod, "p", "app");
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
        rt.stopContainer(StopContainerRequest.newBuilder().setContainerId(c).setTimeout(1).build());
        rt.removeContainer(RemoveContainerRequest.newBuilder().setContainerId(c).build());
        rt.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(pod).build());
        rt.removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(pod).build());
        assertThat(events)
                .containsExactly(
                        "RunPodSandbox p",
                        "CreateContainer app in p",
                        "PostCreateContainer CONTAINER_CREATED",
                        "StartContainer",
                        "PostStartContainer CONTAINER_RUNNING",
                        "StopContainer CONTAINER_STOPPED",
                        "RemoveContainer",
                        "StopPodSandbox",
                        "RemovePodSandbox");
    }

    // ---------------------------------------------------------------- failures become statuses

    @Test
    void aFailingFailHookFailsCreateContainerWithAStatusNamingIt() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                fake(
                        creating(
                                "quota-check",
                                FAIL,
                                (p, c) -> {
                                    throw new IllegalStateException("team over quota");
                                }));
        String pod = runPod(rt, "p");
        assertThatThrownBy(() -> create(rt, pod, "p", "app"))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .isEqualTo(
                                            "CreateContainer: hook \"quota-check\" failed: team over quota");
                        });
        assertThat(
                        rt.listContainers(ListContainersRequest.getDefaultInstance())
                                .getContainersList())
                .isEmpty();
    }

    @Test
    void aRunPodSandboxHookFailureLeavesNoPod() throws Exception {
        Hook refusing =
                new Hook() {
                    @Override
                    public String name() {
                        return "admission";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL;
                    }

                    @Override
                    public void runPodSandbox(PodSandbox pod) {
                        throw new IllegalArgumentException("namespace not allowed");
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = fake(refusing);
        assertThatThrownBy(() -> runPod(rt, "p"))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getDescription())
                                        .contains("\"admission\"", "namespace not allowed"));
        assertThat(rt.listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList())
                .isEmpty();
    }

    @Test
    void twoHooksSettingOneFieldFailTheCallNamingBoth() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                fake(
                        creating(
                                "cpu-a",
                                IGNORE.withIndex(1),
                                (p, c) ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .setLinuxCpuSetCpus("0")
                                                        .build())),
                        creating(
                                "cpu-b",
                                IGNORE.withIndex(2),
                                (p, c) ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .setLinuxCpuSetCpus("1")
                                                        .build())));
        String pod = runPod(rt, "p");
        assertThatThrownBy(() -> create(rt, pod, "p", "app"))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .isEqualTo(
                                            "CreateContainer: hooks \"cpu-a\" and"
                                                    + " \"cpu-b\" both tried to set CPUSetCPUs of container \"app\"");
                        });
    }

    @Test
    void whatCriCannotCarryFailsAFailHookAndIsDroppedForAnIgnoreHook() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub strict =
                fake(
                        creating(
                                "limits",
                                FAIL,
                                (p, c) ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .addEnv("A", "1")
                                                        .addRlimit("RLIMIT_NOFILE", 64, 64)
                                                        .build())));
        String pod = runPod(strict, "p");
        assertThatThrownBy(() -> create(strict, pod, "p", "app"))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .isEqualTo(
                                            "CreateContainer: hook \"limits\" asked for"
                                                    + " changes the runtime interface cannot carry: Rlimits RLIMIT_NOFILE (CRI has no rlimits)");
                        });

        RuntimeServiceGrpc.RuntimeServiceBlockingStub lenient =
                fake(
                        creating(
                                "limits",
                                IGNORE,
                                (p, c) ->
                                        HookResult.adjust(
                                                Adjustments.create()
                                                        .addEnv("A", "1")
                                                        .addRlimit("RLIMIT_NOFILE", 64, 64)
                                                        .build())));
        String pod2 = runPod(lenient, "p");
        String c = create(lenient, pod2, "p", "app");
        assertThat(servers.get(1).runtime().containerConfig(c).getEnvsList())
                .anySatisfy(kv -> assertThat(kv.getKey()).isEqualTo("A"));
    }

    // ---------------------------------------------------------------- updates and evictions

    @Test
    void aHooksUpdatesAndEvictionsChangeOtherFakeContainers() throws Exception {
        AtomicReference<String> victim = new AtomicReference<>();
        AtomicReference<String> neighbour = new AtomicReference<>();
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                fake(
                        creating(
                                "rebalancer",
                                FAIL,
                                (p, c) ->
                                        c.getName().equals("big")
                                                ? HookResult.builder()
                                                        .addUpdate(
                                                                ContainerUpdates.of(neighbour.get())
                                                                        .setLinuxCpuShares(128)
                                                                        .build())
                                                        .evict(victim.get(), "make room for big")
                                                        .build()
                                                : HookResult.none()));
        String pod = runPod(rt, "p");
        neighbour.set(create(rt, pod, "p", "neighbour"));
        victim.set(create(rt, pod, "p", "victim"));
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(victim.get()).build());
        create(rt, pod, "p", "big");
        assertThat(status(rt, neighbour.get()).getResources().getLinux().getCpuShares())
                .isEqualTo(128);
        ContainerStatus evicted = status(rt, victim.get());
        assertThat(evicted.getState()).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(evicted.getExitCode()).isEqualTo(137);
    }

    @Test
    void anUpdateContainerHookReplacesTheRequestedResources() throws Exception {
        Hook capper =
                new Hook() {
                    @Override
                    public String name() {
                        return "capper";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL;
                    }

                    @Override
                    public HookResult updateContainer(
                            PodSandbox pod, Container c, LinuxResources r) {
                        long asked = r.getMemory().getLimit().getValue();
                        return asked > (256L << 20)
                                ? HookResult.update(
                                        List.of(
                                                ContainerUpdates.of(c.getId())
                                                        .setLinuxMemoryLimit(256L << 20)
                                                        .build()))
                                : HookResult.none();
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = fake(capper);
        String pod = runPod(rt, "p");
        String c = create(rt, pod, "p", "app");
        rt.updateContainerResources(
                UpdateContainerResourcesRequest.newBuilder()
                        .setContainerId(c)
                        .setLinux(
                                LinuxContainerResources.newBuilder()
                                        .setMemoryLimitInBytes(1L << 30)
                                        .setCpuShares(300))
                        .build());
        LinuxContainerResources r = status(rt, c).getResources().getLinux();
        assertThat(r.getMemoryLimitInBytes()).isEqualTo(256L << 20);
        assertThat(r.getCpuShares()).isEqualTo(300);
    }

    @Test
    void closingTheFakeStopsItsHookThreads() throws Exception {
        java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                fake(creating("blocking", FAIL, (p, c) -> HookResult.none()));
        create(rt, runPod(rt, "p"), "p", "app");
        List<Thread> started = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.getName().startsWith("cri4j-hook-")) {
                started.add(t);
            }
        }
        assertThat(started).isNotEmpty();
        close();
        for (Thread t : started) {
            t.join(TimeUnit.SECONDS.toMillis(10));
            assertThat(t.isAlive()).as(t.getName()).isFalse();
        }
    }

    @Test
    void aHookUpdatesContainersOnItsOwnThroughTheRuntimeHandle() throws Exception {
        CompletableFuture<HookConfiguration> configured = new CompletableFuture<>();
        AsyncHook background =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "background";
                    }

                    @Override
                    public CompletionStage<Void> configure(HookConfiguration c) {
                        configured.complete(c);
                        return CompletableFuture.completedFuture(null);
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = fake(background);
        HookConfiguration c = configured.get(10, TimeUnit.SECONDS);
        assertThat(c.runtimeName()).isEqualTo("cri4j-fake");
        String pod = runPod(rt, "p");
        String id = create(rt, pod, "p", "app");
        assertThat(
                        c.runtime()
                                .updateContainers(
                                        List.of(
                                                ContainerUpdates.of(id)
                                                        .setLinuxCpuSetCpus("3")
                                                        .build(),
                                                ContainerUpdates.of(id)
                                                        .setLinuxPidLimits(5)
                                                        .build()),
                                        List.of())
                                .toCompletableFuture()
                                .get(10, TimeUnit.SECONDS))
                .singleElement()
                .satisfies(u -> assertThat(u.getLinux().getResources().hasPids()).isTrue());
        assertThat(status(rt, id).getResources().getLinux().getCpusetCpus()).isEqualTo("3");
    }
}
