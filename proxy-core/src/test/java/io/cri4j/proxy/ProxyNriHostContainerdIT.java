package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy as an NRI host in front of a REAL containerd 1.6 (which has no NRI): hooks' adjustments
 * seen inside the container (env, a device found through {@code /dev/char}), two hooks in conflict,
 * an adjustment CRI cannot carry under Fail and under Ignore, a hook's eviction stopping a running
 * container, and a hook provider that gets {@code Synchronize} with the same pods and containers
 * after the proxy restarted with containers running.
 */
class ProxyNriHostContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;
    private final List<CriProxy> proxies = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final List<String> pods = new ArrayList<>();
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    private String image;

    @AfterEach
    void cleanUp() {
        ManagedChannel direct = CriChannels.newChannel(CONTAINERD.endpoint());
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub d =
                    RuntimeServiceGrpc.newBlockingStub(direct);
            for (String p : pods) {
                try {
                    d.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder().setPodSandboxId(p).build());
                    d.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(p)
                                            .build());
                } catch (StatusRuntimeException e) {
                    // the test's failure is the one to see
                }
            }
        } finally {
            direct.shutdownNow();
        }
        channels.forEach(ManagedChannel::shutdownNow);
        proxies.forEach(CriProxy::close);
    }

    /** Starts a proxy in front of containerd; {@link #runtime} then talks to it. */
    private CriProxy proxy(CriProxy.Builder b, String name) throws Exception {
        CriProxy p =
                b.listen(dir.resolve(name + ".sock"))
                        .backend(CONTAINERD.endpoint())
                        .build()
                        .start();
        proxies.add(p);
        ManagedChannel ch = CriChannels.newChannel(p.listenEndpoint());
        channels.add(ch);
        runtime = RuntimeServiceGrpc.newBlockingStub(ch);
        if (image == null) {
            image = CONTAINERD.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(ch)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
        }
        return p;
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return runtime.withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private PodSandboxConfig podConfig(String name) {
        return TestPods.hostNetwork(name, "nri-host", dir).putLabels("team", "storage").build();
    }

    private String runPod(PodSandboxConfig config) {
        String id =
                rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                        .getPodSandboxId();
        pods.add(id);
        return id;
    }

    private CreateContainerRequest container(String podId, PodSandboxConfig pod, String name) {
        return CreateContainerRequest.newBuilder()
                .setPodSandboxId(podId)
                .setSandboxConfig(pod)
                .setConfig(TestPods.sleeper(name, image))
                .build();
    }

    private String startContainer(String podId, PodSandboxConfig pod, String name) {
        String id = rt().createContainer(container(podId, pod, name)).getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        return id;
    }

    private String exec(String ctr, String... cmd) {
        var r =
                rt().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(ctr)
                                        .addAllCmd(List.of(cmd))
                                        .setTimeout(10)
                                        .build());
        assertThat(r.getExitCode())
                .as(String.join(" ", cmd) + ": " + r.getStderr().toStringUtf8())
                .isZero();
        return r.getStdout().toStringUtf8();
    }

    private ContainerState state(String ctr) {
        return rt().containerStatus(ContainerStatusRequest.newBuilder().setContainerId(ctr).build())
                .getStatus()
                .getState();
    }

    /** An asynchronous hook answering CreateContainer with {@code answer}. */
    static AsyncHook creating(
            String name, int index, FailurePolicy policy, Function<Container, HookResult> answer) {
        return new AsyncHook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return new HookPolicy(index, Duration.ofSeconds(2), policy);
            }

            @Override
            public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
                return CompletableFuture.completedFuture(answer.apply(c));
            }
        };
    }

    @Test
    void envAndADeviceFoundThroughDevCharAreSeenInsideTheContainer() throws Exception {
        proxy(
                CriProxy.builder()
                        .addHook(
                                creating(
                                        "inject",
                                        10,
                                        FailurePolicy.FAIL,
                                        c ->
                                                HookResult.adjust(
                                                        Adjustments.create()
                                                                .addEnv(
                                                                        "CRI4J_NRI_HOST",
                                                                        "java-hook")
                                                                .addDevice(
                                                                        Adjustments.device(
                                                                                "/dev/cri4j-null",
                                                                                "c",
                                                                                1,
                                                                                3))
                                                                .build()))),
                "env");
        PodSandboxConfig pod = podConfig("env-pod");
        String ctr = startContainer(runPod(pod), pod, "app");
        assertThat(exec(ctr, "env").lines()).contains("CRI4J_NRI_HOST=java-hook");
        // c 1:3 is /dev/null on the host: a character device of that number in the container
        assertThat(
                        exec(
                                ctr,
                                "sh",
                                "-c",
                                "test -c /dev/cri4j-null && echo x > /dev/cri4j-null"
                                        + " && stat -c %t:%T /dev/cri4j-null"))
                .isEqualTo("1:3\n");
    }

    @Test
    void twoHooksInConflictFailTheCreationNamingBoth() throws Exception {
        proxy(
                CriProxy.builder()
                        .addHook(
                                creating(
                                        "first",
                                        10,
                                        FailurePolicy.IGNORE,
                                        c ->
                                                HookResult.adjust(
                                                        Adjustments.create()
                                                                .addEnv("TEAM", "a")
                                                                .build())))
                        .addHook(
                                creating(
                                        "second",
                                        20,
                                        FailurePolicy.IGNORE,
                                        c ->
                                                HookResult.adjust(
                                                        Adjustments.create()
                                                                .addEnv("TEAM", "b")
                                                                .build()))),
                "conflict");
        PodSandboxConfig pod = podConfig("conflict-pod");
        String podId = runPod(pod);
        int before =
                rt().listContainers(ListContainersRequest.getDefaultInstance())
                        .getContainersCount();
        assertThatThrownBy(() -> rt().createContainer(container(podId, pod, "app")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hooks \"first\" and \"second\" both tried to set")
                                    .contains("TEAM");
                        });
        assertThat(
                        rt().listContainers(ListContainersRequest.getDefaultInstance())
                                .getContainersCount())
                .as("containerd never got the container")
                .isEqualTo(before);
    }

    @Test
    void anAdjustmentCriCannotCarryFailsUnderFailAndIsDroppedUnderIgnore() throws Exception {
        proxy(
                CriProxy.builder()
                        .addHook(
                                creating(
                                        "strict",
                                        10,
                                        FailurePolicy.FAIL,
                                        c ->
                                                c.getName().equals("strict")
                                                        ? HookResult.adjust(
                                                                Adjustments.create()
                                                                        .addRlimit(
                                                                                "RLIMIT_NOFILE",
                                                                                512,
                                                                                512)
                                                                        .build())
                                                        : HookResult.none()))
                        .addHook(
                                creating(
                                        "lenient",
                                        20,
                                        FailurePolicy.IGNORE,
                                        c ->
                                                c.getName().equals("lenient")
                                                        ? HookResult.adjust(
                                                                Adjustments.create()
                                                                        .addRlimit(
                                                                                "RLIMIT_NPROC",
                                                                                64,
                                                                                64)
                                                                        .addEnv(
                                                                                "LENIENT",
                                                                                "applied")
                                                                        .build())
                                                        : HookResult.none())),
                "limits");
        PodSandboxConfig pod = podConfig("limits-pod");
        String podId = runPod(pod);
        assertThatThrownBy(() -> rt().createContainer(container(podId, pod, "strict")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hook \"strict\"")
                                    .contains("Rlimits RLIMIT_NOFILE");
                        });
        String ctr = startContainer(podId, pod, "lenient");
        assertThat(exec(ctr, "env").lines()).contains("LENIENT=applied");
    }

    @Test
    void aHooksEvictionStopsARunningContainer() throws Exception {
        List<String> victims = new CopyOnWriteArrayList<>();
        proxy(
                CriProxy.builder()
                        .addHook(
                                creating(
                                        "evictor",
                                        10,
                                        FailurePolicy.FAIL,
                                        c ->
                                                c.getName().equals("newcomer") && !victims.isEmpty()
                                                        ? HookResult.builder()
                                                                .evict(
                                                                        victims.get(0),
                                                                        "make room for "
                                                                                + c.getName())
                                                                .build()
                                                        : HookResult.none())),
                "evict");
        PodSandboxConfig pod = podConfig("evict-pod");
        String podId = runPod(pod);
        String victim = startContainer(podId, pod, "victim");
        assertThat(state(victim)).isEqualTo(ContainerState.CONTAINER_RUNNING);
        victims.add(victim);
        String newcomer = startContainer(podId, pod, "newcomer");
        assertThat(state(victim)).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(state(newcomer)).isEqualTo(ContainerState.CONTAINER_RUNNING);
    }

    /** A provider of one asynchronous hook: what a host's Synchronize gave it, and its events. */
    static final class RecordingProvider implements HookProvider {
        final List<RuntimeSnapshot> synced = new CopyOnWriteArrayList<>();
        final List<String> events = new CopyOnWriteArrayList<>();
        volatile HookHost host;
        private volatile List<AsyncHook> hooks = List.of();
        private final AsyncHook hook =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "recorder";
                    }

                    @Override
                    public CompletionStage<List<ContainerUpdate>> synchronize(
                            List<PodSandbox> p, List<Container> c) {
                        synced.add(new RuntimeSnapshot(p, c));
                        return CompletableFuture.completedFuture(List.of());
                    }

                    @Override
                    public CompletionStage<HookResult> createContainer(
                            PodSandbox pod, Container c) {
                        events.add("CreateContainer:" + c.getName());
                        return CompletableFuture.completedFuture(HookResult.none());
                    }

                    @Override
                    public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container c) {
                        events.add("StopContainer:" + c.getId());
                        return CompletableFuture.completedFuture(HookResult.none());
                    }
                };

        @Override
        public void start(HookHost h) {
            host = h;
            hook.configure(
                            new HookConfiguration(
                                    "",
                                    h.runtimeName(),
                                    h.runtimeVersion(),
                                    Duration.ofSeconds(5),
                                    Duration.ofSeconds(2),
                                    h.runtime()))
                    .toCompletableFuture()
                    .join();
            RuntimeSnapshot s = h.snapshot().toCompletableFuture().join();
            hook.synchronize(s.pods(), s.containers()).toCompletableFuture().join();
            hooks = List.of(hook);
        }

        @Override
        public List<AsyncHook> hooks() {
            return hooks;
        }

        @Override
        public void close() {
            hooks = List.of();
            hook.shutdown();
        }
    }

    private static RuntimeSnapshot only(RuntimeSnapshot s, String podId) {
        return new RuntimeSnapshot(
                s.pods().stream().filter(p -> p.getId().equals(podId)).toList(),
                s.containers().stream().filter(c -> c.getPodSandboxId().equals(podId)).toList());
    }

    @Test
    void afterARestartWithContainersRunningAProviderIsSynchronizedWithTheSameState()
            throws Exception {
        RecordingProvider first = new RecordingProvider();
        CriProxy one = proxy(CriProxy.builder().addHookProvider(first), "sync-1");
        assertThat(first.synced).hasSize(1);
        PodSandboxConfig pod =
                podConfig("sync-pod").toBuilder().putAnnotations("note", "kept").build();
        String podId = runPod(pod);
        CreateContainerRequest req = container(podId, pod, "app");
        req =
                req.toBuilder()
                        .setConfig(
                                req.getConfig().toBuilder()
                                        .addEnvs(
                                                io.cri4j.cri.v1.KeyValue.newBuilder()
                                                        .setKey("A")
                                                        .setValue(
                                                                com.google.protobuf.ByteString
                                                                        .copyFromUtf8("1")))
                                        .putAnnotations("ctr-note", "x")
                                        .putLabels("tier", "web")
                                        .setLinux(
                                                io.cri4j.cri.v1.LinuxContainerConfig.newBuilder()
                                                        .setResources(
                                                                io.cri4j.cri.v1
                                                                        .LinuxContainerResources
                                                                        .newBuilder()
                                                                        .setCpuShares(256)
                                                                        .setMemoryLimitInBytes(
                                                                                64L << 20))))
                        .build();
        String ctr = rt().createContainer(req).getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(first.events).containsExactly("CreateContainer:app");
        RuntimeSnapshot before =
                only(first.host.snapshot().toCompletableFuture().get(10, TimeUnit.SECONDS), podId);
        assertThat(before.pods()).hasSize(1);
        assertThat(before.containers())
                .singleElement()
                .satisfies(
                        c -> {
                            assertThat(c.getId()).isEqualTo(ctr);
                            assertThat(c.getState())
                                    .isEqualTo(
                                            io.cri4j.hook.nri.v1alpha1.ContainerState
                                                    .CONTAINER_RUNNING);
                            assertThat(c.getEnvList()).contains("A=1");
                        });

        one.close(); // the proxy goes; containerd and the container stay
        RecordingProvider second = new RecordingProvider();
        proxy(CriProxy.builder().addHookProvider(second), "sync-2");
        assertThat(second.synced).hasSize(1);
        assertThat(state(ctr)).isEqualTo(ContainerState.CONTAINER_RUNNING);
        RuntimeSnapshot after = only(second.synced.get(0), podId);
        assertThat(after).isEqualTo(before);

        // and the provider's hook hears of the container the store was rebuilt with
        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(ctr)
                                .setTimeout(1)
                                .build());
        assertThat(second.events).containsExactly("StopContainer:" + ctr);
        rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(Set.copyOf(second.events)).hasSize(1);
    }
}
