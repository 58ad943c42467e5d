package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerEventType;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.testing.real.ContainerdExtension;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * GetContainerEvents through the proxy in front of containerd 2.3.4 (containerd 1.6 sends no
 * events): every event names the container by the proxy's id.
 */
class ProxyContainerIdsContainerd23IT {
    @RegisterExtension
    static final ContainerdExtension CONTAINERD23 =
            ContainerdExtension.builder().containerd23WithNri().build();

    @TempDir Path dir;

    private final ProxyContainerIdsContainerdIT.Fixture f =
            new ProxyContainerIdsContainerdIT.Fixture();

    @AfterEach
    void cleanUp() {
        f.close(CONTAINERD23.endpoint());
    }

    @Test
    void eventsNameContainersByTheProxysId() throws Exception {
        f.proxy(dir, "events", CONTAINERD23.endpoint(), CONTAINERD23.registry());
        List<ContainerEventResponse> events = new CopyOnWriteArrayList<>();
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        var call = io.grpc.Context.current().withCancellation();
        call.run(
                () ->
                        RuntimeServiceGrpc.newStub(f.channel)
                                .getContainerEvents(
                                        GetEventsRequest.getDefaultInstance(),
                                        new StreamObserver<>() {
                                            @Override
                                            public void onNext(ContainerEventResponse e) {
                                                events.add(e);
                                            }

                                            @Override
                                            public void onError(Throwable t) {
                                                ended.complete(t);
                                            }

                                            @Override
                                            public void onCompleted() {
                                                ended.complete(null);
                                            }
                                        }));
        try {
            PodSandboxConfig pod = f.podConfig(dir, "events-pod");
            String podId = f.runPod(pod);
            String id = f.rt().createContainer(f.container(podId, pod, "app")).getContainerId();
            f.rt().startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
            f.rt().stopContainer(
                            StopContainerRequest.newBuilder()
                                    .setContainerId(id)
                                    .setTimeout(1)
                                    .build());
            String backendId = f.direct(CONTAINERD23.endpoint(), id).getId();
            ProxyContainerIdsContainerdIT.poll(
                    () ->
                            events.stream()
                                    .anyMatch(
                                            e ->
                                                    e.getContainerEventType()
                                                                    == ContainerEventType
                                                                            .CONTAINER_STOPPED_EVENT
                                                            && e.getContainerId().equals(id)),
                    "a stopped event for " + id + " in " + events);
            List<ContainerEventResponse> mine =
                    events.stream()
                            .filter(e -> e.getPodSandboxStatus().getId().equals(podId))
                            // the sandbox's own events name the sandbox
                            .filter(e -> !e.getContainerId().equals(podId))
                            .toList();
            assertThat(mine)
                    .extracting(ContainerEventResponse::getContainerEventType)
                    .contains(
                            ContainerEventType.CONTAINER_CREATED_EVENT,
                            ContainerEventType.CONTAINER_STARTED_EVENT,
                            ContainerEventType.CONTAINER_STOPPED_EVENT);
            for (ContainerEventResponse e : mine) {
                assertThat(e.getContainerId()).isEqualTo(id);
                e.getContainersStatusesList()
                        .forEach(s -> assertThat(s.getId()).isNotEqualTo(backendId));
                assertThat(e.toString()).doesNotContain(backendId);
            }
            assertThat(ended).isNotDone();
        } finally {
            call.cancel(null);
        }
    }
}
