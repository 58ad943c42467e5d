package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StatusRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Serving, call recording and fault injection, over real unix sockets and in-process. */
class FakeCriServerIT {

    @TempDir Path dir;

    FakeCriServer unixServer() throws Exception {
        return FakeCriServer.builder()
                .listen(CriEndpoint.unix(dir.resolve("cri.sock")))
                .build()
                .start();
    }

    static Status.Code code(Runnable r) {
        try {
            r.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    @Test
    void recordsEveryCallInOrderWithItsRequestAndStatus() throws Exception {
        try (FakeCriServer fake = unixServer()) {
            ManagedChannel ch = CriChannels.newChannel(fake.endpoint());
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                rt.version(VersionRequest.newBuilder().setVersion("v1").build());
                rt.runPodSandbox(
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(Cri.pod("rec", Map.of()))
                                .build());
                code(
                        () ->
                                rt.startContainer(
                                        StartContainerRequest.newBuilder()
                                                .setContainerId("missing")
                                                .build()));
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(ch)
                        .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance());
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            CallLog calls = fake.calls();
            assertThat(calls.methods())
                    .containsExactly("Version", "RunPodSandbox", "StartContainer", "Version");
            calls.assertExactly(
                    "Version",
                    "RunPodSandbox",
                    "StartContainer",
                    "runtime.v1alpha2.RuntimeService/Version");
            calls.assertInOrder("RunPodSandbox", "StartContainer");
            calls.assertCalledTimes("Version", 2);
            calls.assertCalledTimes("runtime.v1.RuntimeService/Version", 1);
            calls.assertNotCalled("CreateContainer");
            assertThat(
                            calls.lastRequest(RunPodSandboxRequest.class)
                                    .getConfig()
                                    .getMetadata()
                                    .getName())
                    .isEqualTo("rec");
            assertThat(calls.requests(VersionRequest.class))
                    .extracting(VersionRequest::getVersion)
                    .containsExactly("v1");
            RecordedCall stop = calls.of("StartContainer").get(0);
            assertThat(stop.status().orElseThrow().getCode()).isEqualTo(Status.Code.NOT_FOUND);
            assertThat(stop.service()).isEqualTo("RuntimeService");
            assertThat(calls.all().get(3).apiVersion()).isEqualTo("v1alpha2");
            assertThat(calls.all().get(0).apiVersion()).isEqualTo("v1");

            assertThatThrownBy(() -> calls.assertInOrder("StartContainer", "RunPodSandbox"))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageContaining("RunPodSandbox did not follow")
                    .hasMessageContaining(
                            "#2 runtime.v1.RuntimeService/RunPodSandbox {config { metadata { name: \"rec\"")
                    .hasMessageContaining("-> NOT_FOUND");
            assertThatThrownBy(() -> calls.assertCalled("RunPodSandBox"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no CRI method matches");
            calls.clear();
            assertThat(calls.all()).isEmpty();
        }
    }

    @Test
    void failsTheNextCallsThenRecovers() throws Exception {
        try (FakeCriServer fake = FakeCriServer.builder().build().start()) {
            ManagedChannel ch = fake.newChannel();
            try {
                var img = ImageServiceGrpc.newBlockingStub(ch);
                PullImageRequest pull =
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                .build();
                fake.faults()
                        .on("PullImage")
                        .failNext(2, Status.UNAVAILABLE.withDescription("registry down"));
                assertThatThrownBy(() -> img.pullImage(pull))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> {
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNAVAILABLE);
                                    assertThat(e.getStatus().getDescription())
                                            .isEqualTo("registry down");
                                });
                assertThat(code(() -> img.pullImage(pull))).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(img.pullImage(pull).getImageRef())
                        .startsWith("docker.io/library/nginx@sha256:");
                // the failed pulls were recorded (with their requests) but changed nothing
                assertThat(fake.calls().of("PullImage"))
                        .extracting(c -> c.status().orElseThrow().getCode())
                        .containsExactly(
                                Status.Code.UNAVAILABLE, Status.Code.UNAVAILABLE, Status.Code.OK);

                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                fake.faults().on("RuntimeService/Status").failWith(Status.INTERNAL);
                fake.faults()
                        .on("Status")
                        .failNext(1, Status.RESOURCE_EXHAUSTED); // newest rule first
                assertThat(code(() -> rt.status(StatusRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(code(() -> rt.status(StatusRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.INTERNAL);
                assertThat(code(() -> rt.status(StatusRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.INTERNAL);
                // a fault for v1 only leaves v1alpha2 alone
                fake.faults().clear();
                fake.faults().on("runtime.v1.RuntimeService/Version").failWith(Status.UNAVAILABLE);
                assertThat(code(() -> rt.version(VersionRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(ch)
                                        .version(
                                                io.cri4j.cri.v1alpha2.VersionRequest
                                                        .getDefaultInstance())
                                        .getRuntimeName())
                        .isEqualTo("cri4j-fake");
                fake.faults().clear();
                assertThat(code(() -> rt.version(VersionRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.OK);

                assertThatThrownBy(() -> fake.faults().on("Status").failWith(Status.OK))
                        .isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> fake.faults().on("Bogus"))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("Bogus");
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void delaysCalls() throws Exception {
        try (FakeCriServer fake = unixServer()) {
            ManagedChannel ch = fake.newChannel();
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                rt.version(VersionRequest.getDefaultInstance()); // connect first
                fake.faults().on("Version").delayNext(1, Duration.ofMillis(400));
                long t0 = System.nanoTime();
                rt.version(VersionRequest.getDefaultInstance());
                long delayed = System.nanoTime() - t0;
                t0 = System.nanoTime();
                rt.version(VersionRequest.getDefaultInstance());
                long plain = System.nanoTime() - t0;
                assertThat(Duration.ofNanos(delayed))
                        .isGreaterThanOrEqualTo(Duration.ofMillis(400));
                assertThat(Duration.ofNanos(plain)).isLessThan(Duration.ofMillis(400));
                // a client deadline shorter than the delay ends the call
                fake.faults().on("Version").delay(Duration.ofSeconds(30));
                assertThat(
                                code(
                                        () ->
                                                rt.withDeadlineAfter(200, TimeUnit.MILLISECONDS)
                                                        .version(
                                                                VersionRequest
                                                                        .getDefaultInstance())))
                        .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void hangsCallsUntilReleasedWithoutBlockingOthers() throws Exception {
        try (FakeCriServer fake = unixServer()) {
            ManagedChannel ch = fake.newChannel();
            try {
                Hang hang = fake.faults().on("Version").hang();
                CompletableFuture<VersionResponse> first = new CompletableFuture<>();
                CompletableFuture<VersionResponse> second = new CompletableFuture<>();
                RuntimeServiceGrpc.newStub(ch)
                        .version(VersionRequest.getDefaultInstance(), observer(first));
                RuntimeServiceGrpc.newStub(ch)
                        .version(VersionRequest.getDefaultInstance(), observer(second));
                hang.awaitHanging(2, Duration.ofSeconds(5));
                // other RPCs still answer while two calls hang
                RuntimeServiceGrpc.newBlockingStub(ch).status(StatusRequest.getDefaultInstance());
                assertThat(first).isNotDone();
                assertThat(fake.calls().of("Version").get(0).status()).isEmpty();
                hang.release();
                assertThat(first.get(5, TimeUnit.SECONDS).getRuntimeName()).isEqualTo("cri4j-fake");
                assertThat(second.get(5, TimeUnit.SECONDS).getRuntimeName())
                        .isEqualTo("cri4j-fake");
                assertThat(
                                fake.calls()
                                        .of("Version")
                                        .get(0)
                                        .awaitStatus(Duration.ofSeconds(5))
                                        .isOk())
                        .isTrue();
                // released: later calls pass
                RuntimeServiceGrpc.newBlockingStub(ch).version(VersionRequest.getDefaultInstance());

                Hang once = fake.faults().on("Status").hangNext(1);
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                assertThat(
                                code(
                                        () ->
                                                rt.withDeadlineAfter(300, TimeUnit.MILLISECONDS)
                                                        .status(
                                                                StatusRequest
                                                                        .getDefaultInstance())))
                        .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                assertThat(
                                fake.calls()
                                        .of("Status")
                                        .get(1)
                                        .awaitStatus(Duration.ofSeconds(5))
                                        .getCode())
                        .isEqualTo(Status.Code.CANCELLED);
                assertThat(once.hungCalls()).isEqualTo(1);
                assertThat(code(() -> rt.status(StatusRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.OK);
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void closeEndsHangingCallsAndEventStreamsAndRemovesTheSocket() throws Exception {
        FakeCriServer fake = unixServer();
        Path socket = fake.endpoint().path();
        assertThat(Files.exists(socket)).isTrue();
        ManagedChannel ch = fake.newChannel();
        try {
            fake.faults().on("Version").hang();
            CompletableFuture<VersionResponse> hung = new CompletableFuture<>();
            RuntimeServiceGrpc.newStub(ch)
                    .version(VersionRequest.getDefaultInstance(), observer(hung));
            CompletableFuture<Void> events = new CompletableFuture<>();
            RuntimeServiceGrpc.newStub(ch)
                    .getContainerEvents(
                            GetEventsRequest.getDefaultInstance(),
                            new StreamObserver<>() {
                                public void onNext(ContainerEventResponse value) {}

                                public void onError(Throwable t) {
                                    events.completeExceptionally(t);
                                }

                                public void onCompleted() {
                                    events.complete(null);
                                }
                            });
            fake.calls().await("Version", Duration.ofSeconds(5));
            fake.runtime().awaitEventSubscribers(1, Duration.ofSeconds(5));
            CompletableFuture<Void> terminated =
                    CompletableFuture.runAsync(
                            () -> {
                                try {
                                    fake.awaitTermination();
                                } catch (InterruptedException e) {
                                    throw new IllegalStateException(e);
                                }
                            });
            assertThat(terminated).isNotDone();
            long t0 = System.nanoTime();
            fake.close();
            terminated.get(5, TimeUnit.SECONDS);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(4));
            assertThat(hung.get(5, TimeUnit.SECONDS).getRuntimeName()).isEqualTo("cri4j-fake");
            events.get(5, TimeUnit.SECONDS);
            assertThat(Files.exists(socket)).isFalse();
            fake.close(); // idempotent
            assertThatThrownBy(fake::start).isInstanceOf(IllegalStateException.class);
        } finally {
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void refusesASocketALiveServerOwns() throws Exception {
        try (FakeCriServer first = unixServer()) {
            FakeCriServer second = FakeCriServer.builder().listen(first.endpoint()).build();
            assertThatThrownBy(second::start).isInstanceOf(java.io.IOException.class);
            second.close();
            assertThatThrownBy(first::start)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already started");
        }
    }

    @Test
    void servesInProcess() throws Exception {
        try (FakeCriServer fake = FakeCriServer.builder().inProcess("fake-it").build().start()) {
            assertThat(fake.inProcessName()).contains("fake-it");
            assertThatThrownBy(fake::endpoint)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("in-process");
            ManagedChannel ch = fake.newChannel();
            try {
                assertThat(
                                RuntimeServiceGrpc.newBlockingStub(ch)
                                        .version(VersionRequest.getDefaultInstance())
                                        .getRuntimeApiVersion())
                        .isEqualTo("v1");
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void customExecHandlerAndRuntimeName() throws Exception {
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .runtime("containerd", "2.1.0")
                        .execHandler(
                                ctx ->
                                        ExecResult.of(
                                                7,
                                                String.join(" ", ctx.command())
                                                        + " in "
                                                        + ctx.containerId(),
                                                ""))
                        .build()
                        .start()) {
            ManagedChannel ch = fake.newChannel();
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                assertThat(rt.version(VersionRequest.getDefaultInstance()).getRuntimeVersion())
                        .isEqualTo("2.1.0");
                fake.runtime().addImage("busybox");
                String pod =
                        rt.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder()
                                                .setConfig(Cri.pod("p", Map.of()))
                                                .build())
                                .getPodSandboxId();
                String c =
                        rt.createContainer(
                                        io.cri4j.cri.v1.CreateContainerRequest.newBuilder()
                                                .setPodSandboxId(pod)
                                                .setConfig(Cri.container("c", "busybox", Map.of()))
                                                .build())
                                .getContainerId();
                rt.startContainer(
                        io.cri4j.cri.v1.StartContainerRequest.newBuilder()
                                .setContainerId(c)
                                .build());
                var r =
                        rt.execSync(
                                io.cri4j.cri.v1.ExecSyncRequest.newBuilder()
                                        .setContainerId(c)
                                        .addCmd("ls")
                                        .addCmd("/")
                                        .build());
                assertThat(r.getExitCode()).isEqualTo(7);
                assertThat(r.getStdout().toStringUtf8()).isEqualTo("ls / in " + c);
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void streamingCanBeDisabled() throws Exception {
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .streamingUrls(StreamingUrls.unavailable())
                        .build()
                        .start()) {
            assertThat(fake.streamingBaseUrl()).isEmpty();
            ManagedChannel ch = fake.newChannel();
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                String pod = fake.runtime().runPodSandbox(Cri.pod("p", Map.of()));
                String c =
                        fake.runtime().runContainer(pod, Cri.container("c", "busybox", Map.of()));
                assertThatThrownBy(
                                () ->
                                        rt.exec(
                                                io.cri4j.cri.v1.ExecRequest.newBuilder()
                                                        .setContainerId(c)
                                                        .addCmd("sh")
                                                        .setStdout(true)
                                                        .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> {
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNIMPLEMENTED);
                                    assertThat(e.getStatus().getDescription())
                                            .contains("streaming is disabled");
                                });
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    static <T> StreamObserver<T> observer(CompletableFuture<T> f) {
        return new StreamObserver<>() {
            public void onNext(T value) {
                f.complete(value);
            }

            public void onError(Throwable t) {
                f.completeExceptionally(t);
            }

            public void onCompleted() {}
        };
    }
}
