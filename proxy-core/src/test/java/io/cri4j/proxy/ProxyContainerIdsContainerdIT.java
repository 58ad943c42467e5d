package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatsFilter;
import io.cri4j.cri.v1.ContainerStatsRequest;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListContainerStatsRequest;
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
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.LocalRegistry;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy owns container ids, in front of a REAL containerd 1.6: a container created through the
 * proxy has one id from its {@code CreateContainer} hooks on, that id works in every call a
 * kubelet makes (also after the proxy restarted), and containerd keeps its own id, with the
 * proxy's in an annotation.
 */
class ProxyContainerIdsContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;

    private final Fixture f = new Fixture();

    @AfterEach
    void cleanUp() {
        f.close(CONTAINERD.endpoint());
    }

    @Test
    void kubeletsCallsByTheProxysIdReachTheRuntimesContainer() throws Exception {
        f.proxy(dir, "ids", CONTAINERD.endpoint(), CONTAINERD.registry());
        PodSandboxConfig pod = f.podConfig(dir, "ids-pod");
        String podId = f.runPod(pod);
        String id = f.rt().createContainer(f.container(podId, pod, "app")).getContainerId();

        // the hooks heard of the container under the id the client got
        assertThat(id).matches("[0-9a-f]{64}");
        assertThat(f.hook.created).containsExactly(id);
        // containerd has it under its own id, with the proxy's in an annotation
        Container backend = f.direct(CONTAINERD.endpoint(), id);
        assertThat(backend.getId()).isNotEqualTo(id);
        assertThat(backend.getAnnotationsMap()).containsEntry("io.cri4j.proxy/container-id", id);

        f.rt().startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        assertThat(f.hook.started).containsExactly(id);
        ContainerStatusResponse status =
                f.rt().containerStatus(
                                ContainerStatusRequest.newBuilder()
                                        .setContainerId(id)
                                        .setVerbose(true)
                                        .build());
        assertThat(status.getStatus().getId()).isEqualTo(id);
        assertThat(status.getStatus().getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        assertThat(status.getStatus().getAnnotationsMap())
                .doesNotContainKey("io.cri4j.proxy/container-id");
        // a unique prefix works as containerd's short ids do
        assertThat(
                        f.rt().containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(id.substring(0, 12))
                                                .build())
                                .getStatus()
                                .getId())
                .isEqualTo(id);

        List<Container> listed =
                f.rt().listContainers(ListContainersRequest.getDefaultInstance())
                        .getContainersList();
        assertThat(listed)
                .extracting(Container::getId)
                .contains(id)
                .doesNotContain(backend.getId());
        assertThat(
                        f.rt().listContainers(
                                        ListContainersRequest.newBuilder()
                                                .setFilter(ContainerFilter.newBuilder().setId(id))
                                                .build())
                                .getContainersList())
                .singleElement()
                .satisfies(
                        c -> {
                            assertThat(c.getId()).isEqualTo(id);
                            assertThat(c.getAnnotationsMap())
                                    .doesNotContainKey("io.cri4j.proxy/container-id");
                        });
        assertThat(
                        f.rt().listContainerStats(
                                        ListContainerStatsRequest.newBuilder()
                                                .setFilter(
                                                        ContainerStatsFilter.newBuilder().setId(id))
                                                .build())
                                .getStatsList())
                .singleElement()
                .satisfies(s -> assertThat(s.getAttributes().getId()).isEqualTo(id));
        assertThat(
                        f.rt().containerStats(
                                        ContainerStatsRequest.newBuilder()
                                                .setContainerId(id)
                                                .build())
                                .getStats()
                                .getAttributes()
                                .getId())
                .isEqualTo(id);
        assertThat(f.exec(id, "echo", "hi")).isEqualTo("hi\n");
        assertThat(
                        f.rt().exec(
                                        ExecRequest.newBuilder()
                                                .setContainerId(id)
                                                .addCmd("true")
                                                .setStdout(true)
                                                .build())
                                .getUrl())
                .startsWith("http");
        f.rt().updateContainerResources(
                        UpdateContainerResourcesRequest.newBuilder()
                                .setContainerId(id)
                                .setLinux(LinuxContainerResources.newBuilder().setCpuShares(512))
                                .build());

        f.rt().stopContainer(
                        StopContainerRequest.newBuilder().setContainerId(id).setTimeout(1).build());
        assertThat(f.hook.stopped).containsExactly(id);
        assertThat(f.state(id)).isEqualTo(ContainerState.CONTAINER_EXITED);
        f.rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
        assertThat(f.hook.removed).containsExactly(id);
        assertThatThrownBy(
                        () ->
                                f.rt().containerStatus(
                                                ContainerStatusRequest.newBuilder()
                                                        .setContainerId(id)
                                                        .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        assertThat(f.directAll(CONTAINERD.endpoint()))
                .extracting(Container::getId)
                .doesNotContain(backend.getId());
    }

    @Test
    void afterAProxyRestartTheProxysIdsStillWork() throws Exception {
        CriProxy one = f.proxy(dir, "restart-1", CONTAINERD.endpoint(), CONTAINERD.registry());
        PodSandboxConfig pod = f.podConfig(dir, "restart-pod");
        String podId = f.runPod(pod);
        String id = f.rt().createContainer(f.container(podId, pod, "app")).getContainerId();
        f.rt().startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        // a container created past the proxy keeps containerd's id through it
        String foreign =
                RuntimeServiceGrpc.newBlockingStub(f.directChannel(CONTAINERD.endpoint()))
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createContainer(f.container(podId, pod, "foreign"))
                        .getContainerId();

        one.close();
        f.proxy(dir, "restart-2", CONTAINERD.endpoint(), CONTAINERD.registry());
        assertThat(f.state(id)).isEqualTo(ContainerState.CONTAINER_RUNNING);
        assertThat(f.exec(id, "echo", "again")).isEqualTo("again\n");
        assertThat(
                        f.rt().listContainers(
                                        ListContainersRequest.newBuilder()
                                                .setFilter(
                                                        ContainerFilter.newBuilder()
                                                                .setPodSandboxId(podId))
                                                .build())
                                .getContainersList())
                .extracting(Container::getId)
                .containsExactlyInAnyOrder(id, foreign);
        assertThat(f.state(foreign)).isEqualTo(ContainerState.CONTAINER_CREATED);
        f.rt().stopContainer(
                        StopContainerRequest.newBuilder().setContainerId(id).setTimeout(1).build());
        assertThat(f.hook.stopped).containsExactly(id);
        f.rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
        f.rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(foreign).build());
        assertThat(f.hook.removed).containsExactlyInAnyOrder(id, foreign);
        assertThat(f.directAll(CONTAINERD.endpoint())).isEmpty();
    }

    static void poll(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** A hook that records the container ids of the events it hears. */
    static final class IdHook implements AsyncHook {
        final List<String> created = new CopyOnWriteArrayList<>();
        final List<String> started = new CopyOnWriteArrayList<>();
        final List<String> stopped = new CopyOnWriteArrayList<>();
        final List<String> removed = new CopyOnWriteArrayList<>();

        @Override
        public String name() {
            return "ids";
        }

        @Override
        public CompletionStage<HookResult> createContainer(
                PodSandbox pod, io.cri4j.hook.nri.v1alpha1.Container c) {
            created.add(c.getId());
            return CompletableFuture.completedFuture(HookResult.none());
        }

        @Override
        public CompletionStage<Void> startContainer(
                PodSandbox pod, io.cri4j.hook.nri.v1alpha1.Container c) {
            started.add(c.getId());
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<HookResult> stopContainer(
                PodSandbox pod, io.cri4j.hook.nri.v1alpha1.Container c) {
            stopped.add(c.getId());
            return CompletableFuture.completedFuture(HookResult.none());
        }

        @Override
        public CompletionStage<Void> removeContainer(
                PodSandbox pod, io.cri4j.hook.nri.v1alpha1.Container c) {
            removed.add(c.getId());
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A proxy with an {@link IdHook} in front of a containerd, and its cleanup. */
    static final class Fixture {
        final IdHook hook = new IdHook();
        private final List<CriProxy> proxies = new ArrayList<>();
        private final List<ManagedChannel> channels = new ArrayList<>();
        private final List<String> pods = new ArrayList<>();
        ManagedChannel channel;
        private RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
        private String image;

        CriProxy proxy(Path dir, String name, CriEndpoint backend, LocalRegistry registry)
                throws Exception {
            CriProxy p =
                    CriProxy.builder()
                            .listen(dir.resolve(name + ".sock"))
                            .backend(backend)
                            .addHook(hook)
                            .build()
                            .start();
            proxies.add(p);
            channel = CriChannels.newChannel(p.listenEndpoint());
            channels.add(channel);
            runtime = RuntimeServiceGrpc.newBlockingStub(channel);
            if (image == null) {
                image = registry.push(TestImage.busybox()).reference();
                ImageServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(image))
                                        .build());
            }
            return p;
        }

        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
            return runtime.withDeadlineAfter(60, TimeUnit.SECONDS);
        }

        PodSandboxConfig podConfig(Path dir, String name) {
            return TestPods.hostNetwork(name, "ids", dir).build();
        }

        String runPod(PodSandboxConfig config) {
            String id =
                    rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                            .getPodSandboxId();
            pods.add(id);
            return id;
        }

        CreateContainerRequest container(String podId, PodSandboxConfig pod, String name) {
            return CreateContainerRequest.newBuilder()
                    .setPodSandboxId(podId)
                    .setSandboxConfig(pod)
                    .setConfig(TestPods.sleeper(name, image))
                    .build();
        }

        String exec(String ctr, String... cmd) {
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

        ContainerState state(String ctr) {
            return rt().containerStatus(
                            ContainerStatusRequest.newBuilder().setContainerId(ctr).build())
                    .getStatus()
                    .getState();
        }

        ManagedChannel directChannel(CriEndpoint endpoint) {
            ManagedChannel ch = CriChannels.newChannel(endpoint);
            channels.add(ch);
            return ch;
        }

        /** Every container containerd has, asked past the proxy. */
        List<Container> directAll(CriEndpoint endpoint) {
            return RuntimeServiceGrpc.newBlockingStub(directChannel(endpoint))
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .listContainers(ListContainersRequest.getDefaultInstance())
                    .getContainersList();
        }

        /** containerd's container the proxy calls {@code proxyId}. */
        Container direct(CriEndpoint endpoint, String proxyId) {
            return directAll(endpoint).stream()
                    .filter(
                            c ->
                                    proxyId.equals(
                                            c.getAnnotationsMap()
                                                    .get("io.cri4j.proxy/container-id")))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("containerd has no " + proxyId));
        }

        void close(CriEndpoint endpoint) {
            ManagedChannel direct = CriChannels.newChannel(endpoint);
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub d =
                        RuntimeServiceGrpc.newBlockingStub(direct);
                for (String p : pods) {
                    try {
                        d.withDeadlineAfter(60, TimeUnit.SECONDS)
                                .stopPodSandbox(
                                        StopPodSandboxRequest.newBuilder()
                                                .setPodSandboxId(p)
                                                .build());
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
    }
}
