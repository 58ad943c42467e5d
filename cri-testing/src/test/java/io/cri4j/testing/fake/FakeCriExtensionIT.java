package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An instance-field extension gives each test a fresh server on its own unix socket. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FakeCriExtensionIT {

    static final List<CriEndpoint> seen = new ArrayList<>();

    @RegisterExtension FakeCriExtension cri = FakeCriExtension.unixSocket();

    @Test
    @Order(1)
    void resolvesParametersAndServesARealSocket(
            CriEndpoint endpoint,
            FakeRuntime runtime,
            CallLog calls,
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt,
            ImageServiceGrpc.ImageServiceBlockingStub images) {
        assertThat(endpoint.isUnix()).isTrue();
        assertThat(Files.exists(endpoint.path())).isTrue();
        seen.add(endpoint);
        assertThat(rt.version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("cri4j-fake");
        images.pullImage(
                PullImageRequest.newBuilder()
                        .setImage(ImageSpec.newBuilder().setImage("busybox"))
                        .build());
        runtime.addImage("alpine");
        assertThat(
                        cri.imageService()
                                .listImages(ListImagesRequest.getDefaultInstance())
                                .getImagesCount())
                .isEqualTo(2);
        calls.assertExactly("Version", "PullImage", "ListImages");
    }

    @Test
    @Order(2)
    void arrangesRunningPodsWithoutRecordingCalls() {
        String pod =
                cri.fakeRuntime().runPodSandbox(Cri.pod("arranged", java.util.Map.of("app", "a")));
        String c =
                cri.fakeRuntime()
                        .runContainer(pod, Cri.container("main", "nginx:1.27", java.util.Map.of()));
        var status =
                cri.runtimeService()
                        .containerStatus(
                                io.cri4j.cri.v1.ContainerStatusRequest.newBuilder()
                                        .setContainerId(c)
                                        .build())
                        .getStatus();
        assertThat(status.getState()).isEqualTo(io.cri4j.cri.v1.ContainerState.CONTAINER_RUNNING);
        assertThat(status.getImage().getImage()).isEqualTo("docker.io/library/nginx:1.27");
        cri.calls().assertExactly("ContainerStatus");
    }

    @Test
    @Order(3)
    void nextTestStartsFromScratch() {
        assertThat(seen).hasSize(1); // the first test's endpoint
        assertThat(Files.exists(seen.get(0).path())).as("previous socket removed").isFalse();
        assertThat(cri.endpoint()).isNotEqualTo(seen.get(0));
        assertThat(
                        cri.imageService()
                                .listImages(ListImagesRequest.getDefaultInstance())
                                .getImagesCount())
                .isZero();
        cri.calls().assertExactly("ListImages");
    }
}
