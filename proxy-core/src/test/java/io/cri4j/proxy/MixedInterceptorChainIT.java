package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ExecSyncResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.cri.ForwardingAsyncCriInterceptor;
import io.cri4j.hook.cri.ForwardingCriInterceptor;
import io.cri4j.testing.fake.FakeCriExtension;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.GrpcGoClient;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * One chain with an interceptor that never blocks and one that blocks, typed (the
 * {@code Forwarding*} bases), through {@link CriProxy} in front of the fake runtime and in front of
 * a real containerd 1.6, called by grpc-java and by grpc-go (kubelet's stack): both change what
 * the runtime gets and what the client gets back, the blocking one runs on the proxy's workers and
 * the other on its I/O thread, and the runtime's errors reach the client as the runtime sent them.
 */
class MixedInterceptorChainIT {
    private static final String IO_THREAD = "cri4j-proxy-io";
    private static final String RUNTIME = "/runtime.v1.RuntimeService/";

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @RegisterExtension final FakeCriExtension fake = FakeCriExtension.unixSocket();

    private static GrpcGoClient go;

    @TempDir Path dir;
    private CriProxy proxy;
    private ManagedChannel channel;
    private final List<ManagedChannel> direct = new ArrayList<>();
    private Stamp stamp;
    private TeamEnv team;

    /** Never blocks: annotates containers, marks Version's answer and container events. */
    static final class Stamp extends ForwardingAsyncCriInterceptor {
        final List<String> threads = new CopyOnWriteArrayList<>();

        @Override
        public CompletionStage<CreateContainerResponse> createContainer(
                CreateContainerRequest request,
                AsyncUnaryChain<CreateContainerRequest, CreateContainerResponse> chain) {
            threads.add("createContainer " + Thread.currentThread().getName());
            return chain.proceed(
                    request.toBuilder()
                            .setConfig(
                                    request.getConfig().toBuilder()
                                            .putAnnotations("cri4j.io/stamped", "yes"))
                            .build());
        }

        @Override
        public CompletionStage<VersionResponse> version(
                VersionRequest request, AsyncUnaryChain<VersionRequest, VersionResponse> chain) {
            threads.add("version " + Thread.currentThread().getName());
            return chain.proceed(request)
                    .thenApply(
                            r -> {
                                // the blocking link answered on its worker: this runs back on the
                                // I/O thread
                                threads.add("version answer " + Thread.currentThread().getName());
                                return r.toBuilder()
                                        .setRuntimeName(r.getRuntimeName() + "+async")
                                        .build();
                            });
        }

        @Override
        public void getContainerEvents(
                GetEventsRequest request,
                StreamingChain<GetEventsRequest, ContainerEventResponse> chain) {
            threads.add("getContainerEvents " + Thread.currentThread().getName());
            StreamObserver<ContainerEventResponse> out = chain.responses();
            chain.proceed(
                    request,
                    new StreamObserver<>() {
                        @Override
                        public void onNext(ContainerEventResponse e) {
                            out.onNext(
                                    e.toBuilder()
                                            .setContainerId("seen-" + e.getContainerId())
                                            .build());
                        }

                        @Override
                        public void onError(Throwable t) {
                            out.onError(t);
                        }

                        @Override
                        public void onCompleted() {
                            out.onCompleted();
                        }
                    });
        }
    }

    /**
     * Blocks (as a lookup of a team in a slow directory would): labels pods, gives containers the
     * team's env, marks Version's answer, and sees container events start.
     */
    static final class TeamEnv extends ForwardingCriInterceptor {
        final List<String> threads = new CopyOnWriteArrayList<>();

        private String lookUpTeam(String namespace) {
            threads.add(Thread.currentThread().getName());
            return namespace.equals("cri4j") ? "storage" : "none";
        }

        @Override
        public RunPodSandboxResponse runPodSandbox(
                RunPodSandboxRequest request,
                UnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain)
                throws StatusException {
            String team = lookUpTeam(request.getConfig().getMetadata().getNamespace());
            return chain.proceed(
                    request.toBuilder()
                            .setConfig(
                                    request.getConfig().toBuilder()
                                            .putLabels("cri4j.io/team", team))
                            .build());
        }

        @Override
        public CreateContainerResponse createContainer(
                CreateContainerRequest request,
                UnaryChain<CreateContainerRequest, CreateContainerResponse> chain)
                throws StatusException {
            String team = lookUpTeam(request.getSandboxConfig().getMetadata().getNamespace());
            return chain.proceed(
                    request.toBuilder()
                            .setConfig(
                                    request.getConfig().toBuilder()
                                            .addEnvs(
                                                    KeyValue.newBuilder()
                                                            .setKey("TEAM")
                                                            .setValue(
                                                                    ByteString.copyFromUtf8(team))))
                            .build());
        }

        @Override
        public VersionResponse version(
                VersionRequest request, UnaryChain<VersionRequest, VersionResponse> chain)
                throws StatusException {
            lookUpTeam("");
            VersionResponse r = chain.proceed(request);
            return r.toBuilder().setRuntimeVersion(r.getRuntimeVersion() + "+blocking").build();
        }

        @Override
        public void getContainerEvents(
                GetEventsRequest request,
                StreamingChain<GetEventsRequest, ContainerEventResponse> chain) {
            lookUpTeam("");
            chain.proceed(request, chain.responses());
        }
    }

    @BeforeAll
    static void buildClient() {
        go = GrpcGoClient.build(Path.of("target/grpcgo"));
    }

    @AfterEach
    void stop() {
        if (channel != null) {
            channel.shutdownNow();
        }
        direct.forEach(ManagedChannel::shutdownNow);
        if (proxy != null) {
            proxy.close();
        }
    }

    /** The proxy in front of {@code backend}: the asynchronous link first, the blocking second. */
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub startProxy(CriEndpoint backend)
            throws Exception {
        stamp = new Stamp();
        team = new TeamEnv();
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(backend)
                        .addInterceptor(stamp)
                        .addInterceptor(team)
                        .build()
                        .start();
        channel = CriChannels.newChannel(proxy.listenEndpoint());
        return RuntimeServiceGrpc.newBlockingStub(channel);
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub directly(CriEndpoint backend) {
        ManagedChannel ch = CriChannels.newChannel(backend);
        direct.add(ch);
        return RuntimeServiceGrpc.newBlockingStub(ch).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private PodSandboxConfig podConfig(String name) {
        return TestPods.hostNetwork(name, "cri4j", dir).build();
    }

    @Test
    void theChainChangesAPodAndItsContainerOnTheFakeRuntime() throws Exception {
        lifecycle(fake.endpoint(), "registry.example/busybox:1");
    }

    @Test
    void theChainChangesAPodAndItsContainerOnContainerd() throws Exception {
        lifecycle(
                CONTAINERD.endpoint(), CONTAINERD.registry().push(TestImage.busybox()).reference());
    }

    /**
     * A pod and a container through the chain: the pod's label and the container's env come from
     * the blocking link, the annotation from the other; they are seen where they land (the pod's
     * status, the container's own environment, the container's status).
     */
    private void lifecycle(CriEndpoint backend, String image) throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(backend);
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                stub.withDeadlineAfter(60, TimeUnit.SECONDS);
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build());
        PodSandboxConfig pod = podConfig("mixed");
        String podId =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        assertThat(
                        rt.podSandboxStatus(
                                        PodSandboxStatusRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .build())
                                .getStatus()
                                .getLabelsMap())
                .containsEntry("cri4j.io/team", "storage");
        String ctr =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(TestPods.sleeper("app", image))
                                        .build())
                        .getContainerId();
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        ExecSyncResponse env =
                rt.execSync(
                        ExecSyncRequest.newBuilder()
                                .setContainerId(ctr)
                                .addCmd("env")
                                .setTimeout(10)
                                .build());
        assertThat(env.getExitCode()).isZero();
        assertThat(env.getStdout().toStringUtf8()).contains("TEAM=storage");
        assertThat(
                        rt.containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(ctr)
                                                .build())
                                .getStatus()
                                .getAnnotationsMap())
                .containsEntry("cri4j.io/stamped", "yes");

        // the runtime's error passes both links and reaches the client as the runtime sent it
        StatusRuntimeException viaProxy =
                catchStatus(
                        () ->
                                rt.startContainer(
                                        StartContainerRequest.newBuilder()
                                                .setContainerId("no-such-container")
                                                .build()));
        StatusRuntimeException fromRuntime =
                catchStatus(
                        () ->
                                directly(backend)
                                        .startContainer(
                                                StartContainerRequest.newBuilder()
                                                        .setContainerId("no-such-container")
                                                        .build()));
        assertThat(viaProxy.getStatus().getCode())
                .isEqualTo(fromRuntime.getStatus().getCode())
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(viaProxy.getStatus().getDescription())
                .isEqualTo(fromRuntime.getStatus().getDescription())
                .contains("no-such-container");

        rt.stopContainer(
                StopContainerRequest.newBuilder().setContainerId(ctr).setTimeout(1).build());
        rt.removeContainer(RemoveContainerRequest.newBuilder().setContainerId(ctr).build());
        rt.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        rt.removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());

        assertThat(team.threads)
                .as("the blocking link's threads")
                .hasSize(2)
                .allSatisfy(t -> assertThat(t).startsWith(CriProxy.WORKER_THREAD_PREFIX));
        assertThat(stamp.threads)
                .as("the asynchronous link's threads")
                .singleElement()
                .asString()
                .startsWith("createContainer " + IO_THREAD);
    }

    @Test
    void aGrpcGoClientThroughTheChainInFrontOfTheFakeRuntime() throws Exception {
        grpcGo(fake.endpoint());
    }

    @Test
    void aGrpcGoClientThroughTheChainInFrontOfContainerd() throws Exception {
        grpcGo(CONTAINERD.endpoint());
    }

    /**
     * grpc-go calls Version through both links (each changes the answer: its size tells) and a
     * StartContainer the runtime refuses (its status and message arrive as the runtime sent them).
     */
    private void grpcGo(CriEndpoint backend) throws Exception {
        startProxy(backend);
        VersionResponse plain = directly(backend).version(VersionRequest.getDefaultInstance());
        VersionResponse changed =
                plain.toBuilder()
                        .setRuntimeName(plain.getRuntimeName() + "+async")
                        .setRuntimeVersion(plain.getRuntimeVersion() + "+blocking")
                        .build();

        GrpcGoClient.Run run =
                go.call(
                        proxy.listenEndpoint(),
                        50,
                        new GrpcGoClient.Call(RUNTIME + "Version", new byte[0]));
        assertThat(run.ok()).as(run.output()).isTrue();
        assertThat(run.replySizes())
                .as("the answer both links changed")
                .containsExactly(changed.getSerializedSize());
        assertThat(team.threads)
                .hasSize(50)
                .allSatisfy(t -> assertThat(t).startsWith(CriProxy.WORKER_THREAD_PREFIX));
        assertThat(stamp.threads).hasSize(100).allSatisfy(t -> assertThat(t).contains(IO_THREAD));

        StatusRuntimeException fromRuntime =
                catchStatus(
                        () ->
                                directly(backend)
                                        .startContainer(
                                                StartContainerRequest.newBuilder()
                                                        .setContainerId("no-such-container")
                                                        .build()));
        GrpcGoClient.Run refused =
                go.call(
                        proxy.listenEndpoint(),
                        RUNTIME + "StartContainer",
                        StartContainerRequest.newBuilder()
                                .setContainerId("no-such-container")
                                .build()
                                .toByteArray(),
                        1);
        assertThat(refused.ok()).isFalse();
        assertThat(refused.output())
                .contains("code = NotFound desc = " + fromRuntime.getStatus().getDescription());
    }

    @Test
    void containerEventsPassBothLinksOnTheFakeRuntime() throws Exception {
        startProxy(fake.endpoint());
        BlockingQueue<ContainerEventResponse> events = new LinkedBlockingQueue<>();
        RuntimeServiceGrpc.newStub(channel)
                .getContainerEvents(
                        GetEventsRequest.getDefaultInstance(),
                        new StreamObserver<>() {
                            @Override
                            public void onNext(ContainerEventResponse e) {
                                events.add(e);
                            }

                            @Override
                            public void onError(Throwable t) {}

                            @Override
                            public void onCompleted() {}
                        });
        // pods are made until the first event comes: the stream is then open at the runtime
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = directly(fake.endpoint());
        List<String> pods = new ArrayList<>();
        ContainerEventResponse first = null;
        for (int i = 0; i < 30 && first == null; i++) {
            pods.add(
                    rt.runPodSandbox(
                                    RunPodSandboxRequest.newBuilder()
                                            .setConfig(podConfig("events-" + i))
                                            .build())
                            .getPodSandboxId());
            first = events.poll(1, TimeUnit.SECONDS);
        }
        assertThat(first).as("an event came").isNotNull();
        assertThat(first.getContainerId())
                .as("renamed by the asynchronous link")
                .startsWith("seen-")
                .isIn(pods.stream().map(p -> "seen-" + p).toList());
        assertThat(team.threads)
                .singleElement()
                .asString()
                .startsWith(CriProxy.WORKER_THREAD_PREFIX);
        assertThat(stamp.threads).singleElement().asString().contains(IO_THREAD);
    }

    @Test
    void containerdsAnswerToGetContainerEventsPassesBothLinksUnchanged() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CONTAINERD.endpoint());
        StatusRuntimeException fromRuntime =
                catchStatus(
                        () ->
                                directly(CONTAINERD.endpoint())
                                        .getContainerEvents(GetEventsRequest.getDefaultInstance())
                                        .hasNext());
        StatusRuntimeException viaProxy =
                catchStatus(
                        () ->
                                stub.withDeadlineAfter(30, TimeUnit.SECONDS)
                                        .getContainerEvents(GetEventsRequest.getDefaultInstance())
                                        .hasNext());
        // containerd 1.6 does not stream events: UNIMPLEMENTED, through the proxy as directly
        assertThat(viaProxy.getStatus().getCode()).isEqualTo(fromRuntime.getStatus().getCode());
        assertThat(viaProxy.getStatus().getDescription())
                .isEqualTo(fromRuntime.getStatus().getDescription());
        assertThat(team.threads)
                .singleElement()
                .asString()
                .startsWith(CriProxy.WORKER_THREAD_PREFIX);
        assertThat(stamp.threads).singleElement().asString().contains(IO_THREAD);
    }

    private static StatusRuntimeException catchStatus(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }
}
