package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ExecSyncResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.Hooks;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.GrpcGoClient;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy in front of a REAL containerd (the cri-testing harness): the full pod and container
 * lifecycle through the proxy with hooks that really change what runs, GetContainerEvents,
 * v1alpha2, and containerd killed and restarted while calls run.
 */
class ContainerdProxyIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;
    private CriProxy proxy;
    private ManagedChannel channel;
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    private final List<String> points = new CopyOnWriteArrayList<>();
    private final List<String> threads = new CopyOnWriteArrayList<>();

    /** Records every event; at AdjustPodSandbox labels the pod, at CreateContainer adds an env
     * var and an annotation. */
    final class InjectingHook implements Hook {
        @Override
        public String name() {
            return "inject";
        }

        @Override
        public Set<HookEvent> events() {
            return java.util.EnumSet.complementOf(
                    java.util.EnumSet.of(
                            HookEvent.UPDATE_POD_SANDBOX,
                            HookEvent.POST_UPDATE_POD_SANDBOX,
                            HookEvent.UPDATE_CONTAINER,
                            HookEvent.POST_UPDATE_CONTAINER,
                            HookEvent.VALIDATE_CONTAINER_ADJUSTMENT));
        }

        @Override
        public HookPolicy policy() {
            return HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL);
        }

        private void saw(HookEvent e) {
            points.add(e.displayName());
            threads.add(Thread.currentThread().getName());
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
            saw(HookEvent.ADJUST_POD_SANDBOX);
            return PodSandboxAdjustment.builder().putLabel("cri4j.io/hooked", "true").build();
        }

        @Override
        public void runPodSandbox(PodSandbox pod) {
            saw(HookEvent.RUN_POD_SANDBOX);
        }

        @Override
        public void stopPodSandbox(PodSandbox pod) {
            saw(HookEvent.STOP_POD_SANDBOX);
        }

        @Override
        public void removePodSandbox(PodSandbox pod) {
            saw(HookEvent.REMOVE_POD_SANDBOX);
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container c) {
            saw(HookEvent.CREATE_CONTAINER);
            return HookResult.adjust(
                    Adjustments.create()
                            .addAnnotation("cri4j.io/injected", pod.getName())
                            .addEnv("CRI4J_INJECTED", "hello-from-hook")
                            .build());
        }

        @Override
        public void postCreateContainer(PodSandbox pod, Container c) {
            saw(HookEvent.POST_CREATE_CONTAINER);
        }

        @Override
        public void startContainer(PodSandbox pod, Container c) {
            saw(HookEvent.START_CONTAINER);
        }

        @Override
        public void postStartContainer(PodSandbox pod, Container c) {
            saw(HookEvent.POST_START_CONTAINER);
        }

        @Override
        public HookResult stopContainer(PodSandbox pod, Container c) {
            saw(HookEvent.STOP_CONTAINER);
            return HookResult.none();
        }

        @Override
        public void removeContainer(PodSandbox pod, Container c) {
            saw(HookEvent.REMOVE_CONTAINER);
        }
    }

    @BeforeEach
    void startProxy() throws Exception {
        startProxy(false);
    }

    private void startProxy(boolean inlineHook) throws Exception {
        CriProxy.Builder b =
                CriProxy.builder().listen(dir.resolve("proxy.sock")).backend(CONTAINERD.endpoint());
        if (inlineHook) {
            // the same hook called on the thread at hand: the proxy's I/O thread
            b.addHook(Hooks.async(new InjectingHook(), Runnable::run));
        } else {
            b.addHook(new InjectingHook());
        }
        proxy = b.build().start();
        channel = CriChannels.newChannel(proxy.listenEndpoint());
        runtime = RuntimeServiceGrpc.newBlockingStub(channel);
    }

    @AfterEach
    void stopProxy() {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return runtime.withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private PodSandboxConfig podConfig(String name) {
        return TestPods.hostNetwork(name, "cri4j", dir).build();
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "hook never blocks: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void fullLifecycleThroughTheProxyAndTheContainerSeesTheInjectedEnv(boolean inline)
            throws Exception {
        if (inline) {
            stopProxy();
            startProxy(true);
        }
        String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build());
        PodSandboxConfig pod = podConfig("hooked-web");
        String podId =
                rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        assertThat(rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList())
                .filteredOn(p -> p.getId().equals(podId))
                .singleElement()
                .satisfies(
                        p -> assertThat(p.getLabelsMap()).containsEntry("cri4j.io/hooked", "true"));

        String ctr =
                rt().createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(
                                                TestPods.sleeper("app", image)
                                                        .addEnvs(
                                                                KeyValue.newBuilder()
                                                                        .setKey("FIRST")
                                                                        .setValue(
                                                                                ByteString
                                                                                        .copyFromUtf8(
                                                                                                "1"))))
                                        .build())
                        .getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());

        ExecSyncResponse env =
                rt().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(ctr)
                                        .addCmd("env")
                                        .setTimeout(10)
                                        .build());
        assertThat(env.getExitCode()).isZero();
        assertThat(env.getStdout().toStringUtf8())
                .contains("CRI4J_INJECTED=hello-from-hook")
                .contains("FIRST=1");
        var status =
                rt().containerStatus(
                                ContainerStatusRequest.newBuilder().setContainerId(ctr).build())
                        .getStatus();
        assertThat(status.getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        assertThat(status.getAnnotationsMap()).containsEntry("cri4j.io/injected", "hooked-web");

        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(ctr)
                                .setTimeout(1)
                                .build());
        rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(ctr).build());
        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        rt().removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        assertThat(points)
                .containsExactly(
                        "AdjustPodSandbox",
                        "RunPodSandbox",
                        "CreateContainer",
                        "PostCreateContainer",
                        "StartContainer",
                        "PostStartContainer",
                        "StopContainer",
                        "RemoveContainer",
                        "StopPodSandbox",
                        "RemovePodSandbox");
        assertThat(proxy.checkpointCounts()).containsExactly(0, 0);
        // a hook that never blocks ran on the proxy's I/O thread, without any hand-off
        assertThat(threads)
                .allSatisfy(
                        t ->
                                assertThat(t)
                                        .startsWith(
                                                inline ? "cri4j-proxy-io" : "cri4j-hook-worker"));
    }

    @Test
    void kubeletsGrpcGoClientReachesContainerdThroughTheProxy() {
        GrpcGoClient go = GrpcGoClient.build(Path.of("target/grpcgo"));
        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        100,
                        new GrpcGoClient.Call(
                                "/runtime.v1.RuntimeService/Version",
                                VersionRequest.newBuilder().setVersion("v1").build().toByteArray()),
                        new GrpcGoClient.Call(
                                "/runtime.v1.RuntimeService/ListPodSandbox", new byte[0]),
                        new GrpcGoClient.Call(
                                "/runtime.v1alpha2.RuntimeService/Version", new byte[0]),
                        new GrpcGoClient.Call("/runtime.v1.ImageService/ListImages", new byte[0]));
        assertThat(run.ok()).as(run.output()).isTrue();

        GrpcGoClient.Run missing =
                go.call(
                        proxy.listenEndpoint(),
                        "/runtime.v1.RuntimeService/ContainerStatus",
                        ContainerStatusRequest.newBuilder()
                                .setContainerId("no-such-container")
                                .build()
                                .toByteArray(),
                        1);
        assertThat(missing.ok()).isFalse();
        assertThat(missing.output()).contains("code = NotFound").contains("no-such-container");
    }

    @Test
    void aGoGrpcClientReachesContainerdsOwnServicesThroughTheRelay() throws Exception {
        // ctr is containerd's own CLI: a grpc-go client, calling services the proxy does not know
        String viaProxy = ctr("--address", dir.resolve("proxy.sock").toString(), "version");
        String direct = ctr("--address", CONTAINERD.endpoint().path().toString(), "version");
        assertThat(viaProxy).contains("Server:").contains("UUID:");
        assertThat(viaProxy.substring(viaProxy.indexOf("Server:")))
                .isEqualTo(direct.substring(direct.indexOf("Server:")));
        assertThat(ctr("--address", dir.resolve("proxy.sock").toString(), "namespaces", "ls", "-q"))
                .isEqualTo(
                        ctr(
                                "--address",
                                CONTAINERD.endpoint().path().toString(),
                                "namespaces",
                                "ls",
                                "-q"))
                .contains("k8s.io");
    }

    private static String ctr(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("ctr"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out =
                new String(
                        p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("ctr %s finished", cmd).isTrue();
        assertThat(p.exitValue()).as("ctr %s: %s", cmd, out).isZero();
        return out;
    }

    @Test
    void getContainerEventsAndV1alpha2PassThrough() throws InterruptedException {
        // GetContainerEvents: the proxy's answer equals containerd's own (1.6 answers
        // UNIMPLEMENTED;
        // newer versions stream events)
        ManagedChannel direct = CriChannels.newChannel(CONTAINERD.endpoint());
        try {
            Status.Code directCode = firstEventOrStatus(direct);
            Status.Code proxiedCode = firstEventOrStatus(channel);
            assertThat(proxiedCode).isEqualTo(directCode);
        } finally {
            direct.shutdownNow();
        }
        // probed a second after the proxy served
        ProxyContainerIdsContainerdIT.poll(
                proxy::backendServesV1alpha2, "the proxy's v1alpha2 probe of containerd");
        var v =
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance());
        assertThat(v.getRuntimeName()).isEqualTo("containerd");
        assertThat(v.getRuntimeApiVersion()).isEqualTo("v1alpha2");
        // a hooked v1alpha2 pod really runs with the hook's label
        var alpha =
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(60, TimeUnit.SECONDS);
        String podId =
                alpha.runPodSandbox(
                                io.cri4j.cri.v1alpha2.RunPodSandboxRequest.newBuilder()
                                        .setConfig(
                                                io.cri4j.cri.v1alpha2.PodSandboxConfig.newBuilder()
                                                        .setMetadata(
                                                                io.cri4j.cri.v1alpha2
                                                                        .PodSandboxMetadata
                                                                        .newBuilder()
                                                                        .setName("alpha")
                                                                        .setNamespace("cri4j")
                                                                        .setUid(
                                                                                UUID.randomUUID()
                                                                                        .toString()))
                                                        .setLogDirectory(dir.toString())
                                                        .setLinux(
                                                                io.cri4j.cri.v1alpha2
                                                                        .LinuxPodSandboxConfig
                                                                        .newBuilder()
                                                                        .setSecurityContext(
                                                                                io.cri4j.cri
                                                                                        .v1alpha2
                                                                                        .LinuxSandboxSecurityContext
                                                                                        .newBuilder()
                                                                                        .setNamespaceOptions(
                                                                                                io
                                                                                                        .cri4j
                                                                                                        .cri
                                                                                                        .v1alpha2
                                                                                                        .NamespaceOption
                                                                                                        .newBuilder()
                                                                                                        .setNetwork(
                                                                                                                io
                                                                                                                        .cri4j
                                                                                                                        .cri
                                                                                                                        .v1alpha2
                                                                                                                        .NamespaceMode
                                                                                                                        .NODE)))))
                                        .build())
                        .getPodSandboxId();
        assertThat(
                        alpha.podSandboxStatus(
                                        io.cri4j.cri.v1alpha2.PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .build())
                                .getStatus()
                                .getLabelsMap())
                .containsEntry("cri4j.io/hooked", "true");
        alpha.stopPodSandbox(
                io.cri4j.cri.v1alpha2.StopPodSandboxRequest.newBuilder()
                        .setPodSandboxId(podId)
                        .build());
        alpha.removePodSandbox(
                io.cri4j.cri.v1alpha2.RemovePodSandboxRequest.newBuilder()
                        .setPodSandboxId(podId)
                        .build());
    }

    /** OK when an event stream opened (cancelled after 1 s), else the stream's error code. */
    private static Status.Code firstEventOrStatus(ManagedChannel ch) {
        Context.CancellableContext ctx = Context.current().withCancellation();
        try {
            return ctx.call(
                    () -> {
                        Iterator<ContainerEventResponse> it =
                                RuntimeServiceGrpc.newBlockingStub(ch)
                                        .withDeadlineAfter(1, TimeUnit.SECONDS)
                                        .getContainerEvents(GetEventsRequest.getDefaultInstance());
                        try {
                            it.hasNext();
                            return Status.Code.OK;
                        } catch (StatusRuntimeException e) {
                            return e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED
                                    ? Status.Code.OK
                                    : e.getStatus().getCode();
                        }
                    });
        } catch (Exception e) {
            throw new AssertionError(e);
        } finally {
            ctx.cancel(null);
        }
    }

    /** Labels pods; can be told to hang. */
    static final class RemoteLabelHook implements Hook {
        volatile java.util.concurrent.CountDownLatch hang;

        @Override
        public String name() {
            return "remote-label";
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) throws InterruptedException {
            java.util.concurrent.CountDownLatch h = hang;
            if (h != null) {
                h.await();
            }
            return PodSandboxAdjustment.builder().putLabel("cri4j.io/remote", "yes").build();
        }
    }

    @Test
    void remoteHookFailAndIgnoreInFrontOfContainerd() throws Exception {
        Path hooks = dir.resolve("hooks");
        java.nio.file.Files.createDirectories(hooks);
        Path hookSocket = dir.resolve("hook.sock");
        RemoteLabelHook hook = new RemoteLabelHook();
        io.cri4j.hook.koordinator.HookServer server =
                io.cri4j.hook.koordinator.HookServer.start(hookSocket, List.of(hook));
        java.util.concurrent.LinkedBlockingQueue<
                        io.cri4j.hook.koordinator.HookConfigDirectory.Snapshot>
                snaps = new java.util.concurrent.LinkedBlockingQueue<>();
        try (CriProxy remote =
                CriProxy.builder()
                        .listen(dir.resolve("remote-proxy.sock"))
                        .backend(CONTAINERD.endpoint())
                        .hookConfigDir(hooks)
                        .build()
                        .start()) {
            remote.hookConfigDirectory().orElseThrow().addListener(snaps::add);
            ManagedChannel ch = CriChannels.newChannel(remote.listenEndpoint());
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                        RuntimeServiceGrpc.newBlockingStub(ch);
                writeHookConfig(hooks, hookSocket, "Fail");
                awaitPolicy(snaps, FailurePolicy.FAIL);
                String podId =
                        stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                                .runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(podConfig("remote-ok"))
                                                .build())
                                .getPodSandboxId();
                assertThat(podLabels(podId)).containsEntry("cri4j.io/remote", "yes");
                removePod(podId);

                // hung past its 300 ms timeout with Fail: no pod is created
                hook.hang = new java.util.concurrent.CountDownLatch(1);
                int before =
                        rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                                .getItemsCount();
                assertThatThrownBy(
                                () ->
                                        stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                                                .runPodSandbox(
                                                        RunPodSandboxRequest.newBuilder()
                                                                .setConfig(podConfig("remote-hung"))
                                                                .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e ->
                                        assertThat(e.getStatus().getDescription())
                                                .contains("AdjustPodSandbox: hook \"remote\""));
                assertThat(
                                rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                                        .getItemsCount())
                        .isEqualTo(before);
                hook.hang.countDown();
                hook.hang = null;

                // killed with Ignore: the pod is created, unmodified
                server.close();
                writeHookConfig(hooks, hookSocket, "Ignore");
                awaitPolicy(snaps, FailurePolicy.IGNORE);
                String plain =
                        stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                                .runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(podConfig("remote-dead"))
                                                .build())
                                .getPodSandboxId();
                assertThat(podLabels(plain)).doesNotContainKey("cri4j.io/remote");
                removePod(plain);
            } finally {
                ch.shutdownNow();
            }
        } finally {
            server.close();
        }
    }

    private static void writeHookConfig(Path hooks, Path socket, String policy) throws Exception {
        Path tmp = hooks.resolve(".remote.tmp");
        java.nio.file.Files.writeString(
                tmp,
                "{\"remote-endpoint\": \""
                        + socket
                        + "\", \"failure-policy\": \""
                        + policy
                        + "\", \"runtime-hooks\": [\"PreRunPodSandbox\"], \"timeout\": \"300ms\"}");
        java.nio.file.Files.move(
                tmp,
                hooks.resolve("remote.json"),
                java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    private static void awaitPolicy(
            java.util.concurrent.BlockingQueue<
                            io.cri4j.hook.koordinator.HookConfigDirectory.Snapshot>
                    snaps,
            FailurePolicy policy)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            var s = snaps.poll(100, TimeUnit.MILLISECONDS);
            if (s != null
                    && s.configs().containsKey("remote")
                    && s.configs().get("remote").failurePolicy() == policy) {
                return;
            }
        }
        throw new AssertionError("hook config with policy " + policy + " not applied in 10 s");
    }

    private java.util.Map<String, String> podLabels(String podId) {
        return rt().podSandboxStatus(
                        io.cri4j.cri.v1.PodSandboxStatusRequest.newBuilder()
                                .setPodSandboxId(podId)
                                .build())
                .getStatus()
                .getLabelsMap();
    }

    private void removePod(String podId) {
        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        rt().removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
    }

    @Test
    void checkpointStoreRebuiltFromContainerdKeepsWhatHooksNeed() throws Exception {
        String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        ManagedChannel direct = CriChannels.newChannel(CONTAINERD.endpoint());
        String podId;
        String ctr;
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub d =
                    RuntimeServiceGrpc.newBlockingStub(direct)
                            .withDeadlineAfter(60, TimeUnit.SECONDS);
            ImageServiceGrpc.newBlockingStub(direct)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            PodSandboxConfig pod =
                    podConfig("before-proxy").toBuilder()
                            .putLabels("app", "legacy")
                            .putAnnotations("team", "node")
                            .build();
            podId =
                    d.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                            .getPodSandboxId();
            ContainerConfig.Builder c =
                    ContainerConfig.newBuilder()
                            .setMetadata(ContainerMetadata.newBuilder().setName("old-app"))
                            .setImage(ImageSpec.newBuilder().setImage(image))
                            .addCommand("sleep")
                            .addArgs("3600")
                            .setLogPath("old.log")
                            .putAnnotations("ctr-note", "kept");
            c.getLinuxBuilder()
                    .getResourcesBuilder()
                    .setCpuShares(512)
                    .setMemoryLimitInBytes(64L << 20);
            ctr =
                    d.createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setSandboxConfig(pod)
                                            .setConfig(c)
                                            .build())
                            .getContainerId();
        } finally {
            direct.shutdownNow();
        }
        List<PodSandbox> pods = new CopyOnWriteArrayList<>();
        List<Container> seen = new CopyOnWriteArrayList<>();
        Hook recorder =
                new Hook() {
                    @Override
                    public String name() {
                        return "recorder";
                    }

                    @Override
                    public void startContainer(PodSandbox pod, Container c) {
                        pods.add(pod);
                        seen.add(c);
                    }
                };
        try (CriProxy late =
                CriProxy.builder()
                        .listen(dir.resolve("late.sock"))
                        .backend(CONTAINERD.endpoint())
                        .addHook(recorder)
                        .build()
                        .start()) {
            assertThat(late.checkpointCounts()[0]).isGreaterThanOrEqualTo(1);
            ManagedChannel ch = CriChannels.newChannel(late.listenEndpoint());
            try {
                RuntimeServiceGrpc.newBlockingStub(ch)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .startContainer(
                                StartContainerRequest.newBuilder().setContainerId(ctr).build());
            } finally {
                ch.shutdownNow();
            }
        }
        assertThat(seen)
                .singleElement()
                .satisfies(
                        r -> {
                            assertThat(r.getId()).isEqualTo(ctr);
                            assertThat(r.getName()).isEqualTo("old-app");
                            assertThat(r.getAnnotationsMap()).containsEntry("ctr-note", "kept");
                            assertThat(r.getArgsList()).containsExactly("sleep", "3600");
                            assertThat(r.getLinux().getResources().getCpu().getShares().getValue())
                                    .isEqualTo(512);
                            assertThat(
                                            r.getLinux()
                                                    .getResources()
                                                    .getMemory()
                                                    .getLimit()
                                                    .getValue())
                                    .isEqualTo(64L << 20);
                            assertThat(r.getState())
                                    .isEqualTo(
                                            io.cri4j.hook.nri.v1alpha1.ContainerState
                                                    .CONTAINER_CREATED);
                        });
        assertThat(pods)
                .singleElement()
                .satisfies(
                        p -> {
                            assertThat(p.getId()).isEqualTo(podId);
                            assertThat(p.getName()).isEqualTo("before-proxy");
                            assertThat(p.getLabelsMap()).containsEntry("app", "legacy");
                            assertThat(p.getAnnotationsMap()).containsEntry("team", "node");
                        });
        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(ctr)
                                .setTimeout(1)
                                .build());
        rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(ctr).build());
        removePod(podId);
    }
}
