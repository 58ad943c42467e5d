package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.AuthConfig;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PullImageRequest;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A registry with basic auth shared with containerd: credentials are enforced, the pause image
 * still works, and stopping and restarting the registry inside a test behaves as a real outage.
 */
class RegistryExtensionIT {

    @RegisterExtension
    static final RegistryExtension REGISTRY = RegistryExtension.withBasicAuth("alice", "s3cret!");

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().registry(REGISTRY).build();

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static ManagedChannel channel;

    @BeforeAll
    static void connect() {
        channel = CriChannels.newChannel(CONTAINERD.endpoint());
    }

    @AfterAll
    static void disconnect() {
        channel.shutdownNow();
    }

    @Test
    void containerdUsesTheRegisteredRegistry(LocalRegistry injected) {
        assertThat(CONTAINERD.registry()).isSameAs(REGISTRY.registry()).isSameAs(injected);
        assertThat(REGISTRY.hostPort()).startsWith("127.0.0.1:");
        assertThat(REGISTRY.registry().basicAuth())
                .hasValueSatisfying(
                        a -> {
                            assertThat(a.username()).isEqualTo("alice");
                            assertThat(a.toString()).doesNotContain("s3cret");
                        });
    }

    @Test
    void anonymousRequestsAreRefusedAndPullsNeedCredentials() throws Exception {
        assertThat(get("/v2/")).isEqualTo(401);
        String ref = REGISTRY.push(TestImage.busybox()).reference();
        assertThatThrownBy(() -> pull(ref, null))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("401");
        assertThat(
                        pull(
                                ref,
                                AuthConfig.newBuilder()
                                        .setUsername("alice")
                                        .setPassword("s3cret!")
                                        .build()))
                .startsWith("sha256:");
    }

    @Test
    void stoppedRegistryRefusesConnectionsUntilRestartedOnTheSamePort() throws Exception {
        AuthConfig auth =
                AuthConfig.newBuilder().setUsername("alice").setPassword("s3cret!").build();
        LocalRegistry registry = REGISTRY.registry();
        int port = registry.port();
        String ref = registry.push(TestImage.busyboxDocker()).reference();

        registry.stop();
        assertThat(registry.isRunning()).isFalse();
        assertThatThrownBy(() -> get("/v2/")).isInstanceOf(ConnectException.class);
        assertThatThrownBy(() -> pull(ref, auth))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("connection refused");

        registry.start();
        assertThat(registry.isRunning()).isTrue();
        assertThat(registry.port()).isEqualTo(port);
        assertThat(get("/v2/")).isEqualTo(401);
        assertThat(pull(ref, auth))
                .isEqualTo(REGISTRY.push(TestImage.busyboxDocker()).config().digest());
    }

    @Test
    void aTestMayLeaveTheRegistryStoppedAndTheNextOneFindsItRunning() {
        // Whichever of these runs first stops it; the extension restarts it before the next test.
        assertThat(REGISTRY.registry().isRunning()).isTrue();
        REGISTRY.registry().stop();
    }

    @Test
    void anotherTestAfterAStop() {
        assertThat(REGISTRY.registry().isRunning()).isTrue();
        REGISTRY.registry().stop();
    }

    private static int get(String path) throws Exception {
        return HTTP.send(
                        HttpRequest.newBuilder(URI.create(REGISTRY.registry().url() + path))
                                .timeout(Duration.ofSeconds(5))
                                .build(),
                        HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }

    private static String pull(String image, AuthConfig auth) {
        PullImageRequest.Builder request =
                PullImageRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(image));
        if (auth != null) {
            request.setAuth(auth);
        }
        return io.cri4j.cri.v1.ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .pullImage(request.build())
                .getImageRef();
    }
}
