package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a hooked container lifecycle costs the backend: with a provider's hook (as an NRI plugin
 * on the proxy's NRI socket is) subscribed to every container event, the runtime behind the proxy
 * gets the client's calls and nothing more. The host builds the pod and container the hook sees
 * from what the proxy recorded of {@code RunPodSandbox} and {@code CreateContainer}, never from a
 * status or list call per event (containerd 1.6's verbose status is slow).
 */
class ProxyHookedBackendCallsIT {
    private static final String IMAGE = "example.test/busybox:1";

    /** The backend calls the proxy makes on its own schedule (following container exits). */
    private static final Set<String> EXIT_FOLLOWING =
            Set.of("GetContainerEvents", "ListContainers");

    @TempDir Path dir;

    @Test
    void aHookedCreateStartStopRemoveCallsTheBackendOnceEach() throws Exception {
        Recorder provider = new Recorder();
        try (FakeCriServer fake =
                        FakeCriServer.builder()
                                .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                                .pullRate(0)
                                .build()
                                .start();
                CriProxy proxy =
                        CriProxy.builder()
                                .listen(dir.resolve("proxy.sock"))
                                .backend(fake.endpoint())
                                .addHookProvider(provider)
                                .build()
                                .start()) {
            fake.runtime().addImage(IMAGE);
            ManagedChannel ch = CriChannels.newChannel(proxy.listenEndpoint());
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                        RuntimeServiceGrpc.newBlockingStub(ch)
                                .withDeadlineAfter(30, TimeUnit.SECONDS);
                PodSandboxConfig pod =
                        PodSandboxConfig.newBuilder()
                                .setMetadata(
                                        PodSandboxMetadata.newBuilder()
                                                .setName("p")
                                                .setNamespace("ns")
                                                .setUid("uid-1"))
                                .build();
                String podId =
                        rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                                .getPodSandboxId();
                for (int i = 0; i < 2; i++) {
                    fake.calls().clear();
                    provider.events.clear();
                    String id =
                            rt.createContainer(
                                            CreateContainerRequest.newBuilder()
                                                    .setPodSandboxId(podId)
                                                    .setSandboxConfig(pod)
                                                    .setConfig(
                                                            ContainerConfig.newBuilder()
                                                                    .setMetadata(
                                                                            ContainerMetadata
                                                                                    .newBuilder()
                                                                                    .setName(
                                                                                            "c"
                                                                                                    + i))
                                                                    .setImage(
                                                                            ImageSpec.newBuilder()
                                                                                    .setImage(
                                                                                            IMAGE)))
                                                    .build())
                                    .getContainerId();
                    rt.startContainer(
                            StartContainerRequest.newBuilder().setContainerId(id).build());
                    rt.stopContainer(
                            StopContainerRequest.newBuilder()
                                    .setContainerId(id)
                                    .setTimeout(0)
                                    .build());
                    rt.removeContainer(
                            RemoveContainerRequest.newBuilder().setContainerId(id).build());

                    assertThat(provider.events)
                            .containsExactly(
                                    "CreateContainer",
                                    "PostCreateContainer",
                                    "StartContainer",
                                    "PostStartContainer",
                                    "StopContainer",
                                    "RemoveContainer");
                    assertThat(
                                    fake.calls().methods().stream()
                                            .filter(m -> !EXIT_FOLLOWING.contains(m))
                                            .toList())
                            .as("backend calls of a hooked create, start, stop and remove")
                            .containsExactly(
                                    "CreateContainer",
                                    "StartContainer",
                                    "StopContainer",
                                    "RemoveContainer");
                }
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** A provider of one hook subscribed to every container event, recording them in order. */
    private static final class Recorder implements HookProvider {
        final List<String> events = new CopyOnWriteArrayList<>();
        private volatile List<AsyncHook> hooks = List.of();
        private final AsyncHook hook =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "recorder";
                    }

                    @Override
                    public Set<HookEvent> events() {
                        return Set.of(
                                HookEvent.CREATE_CONTAINER,
                                HookEvent.POST_CREATE_CONTAINER,
                                HookEvent.START_CONTAINER,
                                HookEvent.POST_START_CONTAINER,
                                HookEvent.STOP_CONTAINER,
                                HookEvent.REMOVE_CONTAINER);
                    }

                    @Override
                    public CompletionStage<HookResult> createContainer(
                            PodSandbox pod, Container c) {
                        return seen("CreateContainer", HookResult.none());
                    }

                    @Override
                    public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container c) {
                        return seen("PostCreateContainer", null);
                    }

                    @Override
                    public CompletionStage<Void> startContainer(PodSandbox pod, Container c) {
                        return seen("StartContainer", null);
                    }

                    @Override
                    public CompletionStage<Void> postStartContainer(PodSandbox pod, Container c) {
                        return seen("PostStartContainer", null);
                    }

                    @Override
                    public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container c) {
                        return seen("StopContainer", HookResult.none());
                    }

                    @Override
                    public CompletionStage<Void> removeContainer(PodSandbox pod, Container c) {
                        return seen("RemoveContainer", null);
                    }

                    private <T> CompletionStage<T> seen(String event, T answer) {
                        events.add(event);
                        return CompletableFuture.completedFuture(answer);
                    }
                };

        @Override
        public void start(HookHost h) {
            hooks = List.of(hook);
        }

        @Override
        public List<AsyncHook> hooks() {
            return hooks;
        }

        @Override
        public void close() {
            hooks = List.of();
        }
    }
}
