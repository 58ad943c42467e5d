package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.testing.real.GrpcGoClient;
import io.cri4j.testing.real.GrpcGoClient.Call;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The proxy as kubelet meets it: the client is grpc-go (kubelet's gRPC stack), in a process of
 * its own, with its own framing, BDP PINGs after every answer and HPACK; the backend a grpc-java
 * runtime that ends a connection after a few PINGs that follow no data of its own.
 */
class GrpcGoClientIT extends ProxyTestBase {
    private static final String RUNTIME = "/runtime.v1.RuntimeService/";
    private static GrpcGoClient go;

    @BeforeAll
    static void buildClient() {
        go = GrpcGoClient.build(Path.of("target/grpcgo"));
    }

    @Test
    void relayedAndInterceptedCallsOfAGrpcGoClient() throws Exception {
        startProxy(
                CriProxy.builder()
                        .addInterceptor(
                                blocking(
                                        "CreateContainer",
                                        chain -> {
                                            CreateContainerRequest r =
                                                    (CreateContainerRequest) chain.request();
                                            return chain.proceed(
                                                    r.toBuilder()
                                                            .setConfig(
                                                                    r.getConfig().toBuilder()
                                                                            .putAnnotations(
                                                                                    "stamped-by",
                                                                                    "interceptor"))
                                                            .build());
                                        })));
        // the proxy's own connection, made for the probe it starts a second after it serves
        proxy.firstProbe().toCompletableFuture().get(30, TimeUnit.SECONDS);
        int before = backend.connections.get();
        CreateContainerRequest create =
                CreateContainerRequest.newBuilder()
                        .setPodSandboxId("pod")
                        .setConfig(
                                ContainerConfig.newBuilder()
                                        .setMetadata(ContainerMetadata.newBuilder().setName("app")))
                        .build();

        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        200,
                        new Call(
                                RUNTIME + "Version",
                                VersionRequest.newBuilder().setVersion("v1").build().toByteArray()),
                        new Call(RUNTIME + "CreateContainer", create.toByteArray()));

        assertThat(run.ok()).as(run.output()).isTrue();
        assertThat(backend.versionCalls).hasValue(200);
        assertThat(backend.received(CreateContainerRequest.class))
                .hasSize(200)
                .allSatisfy(
                        r ->
                                assertThat(r.getConfig().getAnnotationsMap())
                                        .containsEntry("stamped-by", "interceptor"));
        assertThat(backend.connections)
                .as("connections the runtime accepted for the client")
                .hasValue(before + 1);
    }

    @Test
    void messagesOfMegabytesBothWaysWithAGrpcGoClient() throws Exception {
        startProxy(CriProxy.builder());
        String kilobyte = "x".repeat(1024);
        for (int i = 0; i < 3000; i++) { // about 3 MiB for every ListContainers answer
            backend.containers.put(
                    "c" + i,
                    Container.newBuilder()
                            .setId("c" + i)
                            .putAnnotations("filler", kilobyte)
                            .build());
        }
        int listed =
                ListContainersResponse.newBuilder()
                        .addAllContainers(backend.containers.values())
                        .build()
                        .getSerializedSize();
        CreateContainerRequest create =
                CreateContainerRequest.newBuilder()
                        .setPodSandboxId("pod")
                        .setConfig(
                                ContainerConfig.newBuilder()
                                        .setMetadata(ContainerMetadata.newBuilder().setName("big"))
                                        .putAnnotations("blob", "y".repeat(3 << 20)))
                        .build();

        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        5,
                        new Call(RUNTIME + "ListContainers", new byte[0]),
                        new Call(RUNTIME + "CreateContainer", create.toByteArray()));

        assertThat(run.ok()).as(run.output()).isTrue();
        assertThat(listed).isGreaterThan(3_000_000);
        assertThat(run.replySizes().get(0))
                .as("the last ListContainers answer's size")
                .isEqualTo(listed);
        assertThat(backend.received(CreateContainerRequest.class))
                .hasSize(5)
                .allSatisfy(r -> assertThat(r).isEqualTo(create));
    }

    @Test
    void theRuntimesStatusAndMessageReachAGrpcGoClientAsTheRuntimeSentThem() throws Exception {
        startProxy(CriProxy.builder());
        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        RUNTIME + "StartContainer",
                        StartContainerRequest.newBuilder()
                                .setContainerId("nope")
                                .build()
                                .toByteArray(),
                        1);

        assertThat(run.ok()).isFalse();
        assertThat(run.output())
                .contains("code = NotFound desc = container nope not found (100% gone, ü)");
    }

    @Test
    void pingsAfterAnswersTheProxyMadeItselfNeverEndTheRuntimesConnection() throws Exception {
        // every Version is answered by the proxy: the client's BDP PING after each answer follows
        // no data of the runtime's, and sent on it would be a ping strike (three end the
        // connection)
        startProxy(
                CriProxy.builder()
                        .addInterceptor(
                                blocking(
                                        "Version",
                                        chain ->
                                                VersionResponse.newBuilder()
                                                        .setRuntimeName("from-the-proxy")
                                                        .build())));
        // the proxy's own connection, made for the probe it starts a second after it serves
        proxy.firstProbe().toCompletableFuture().get(30, TimeUnit.SECONDS);
        int before = backend.connections.get();

        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        30,
                        new Call(RUNTIME + "Version", new byte[0]),
                        new Call(
                                RUNTIME + "ListContainers",
                                ListContainersRequest.getDefaultInstance().toByteArray()),
                        new Call(RUNTIME + "Version", new byte[0]));

        assertThat(run.ok()).as(run.output()).isTrue();
        assertThat(backend.versionCalls).as("Version calls at the runtime").hasValue(0);
        assertThat(backend.connections)
                .as("connections the runtime accepted for the client")
                .hasValue(before + 1);
    }
}
