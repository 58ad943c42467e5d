package io.cri4j.testing.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.ByteString;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.*;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A kubelet-like CRI lifecycle (pull, run pod, create/start, ExecSync and a streamed exec over SPDY, stats, resize,
 * stop/remove, events), written once and run against any CRI endpoint: the fake, a real containerd, or a
 * proxy in front of either. Where a backend differs from containerd, the backend is wrong.
 *
 * <p>Subclass it, give the endpoint and an image the backend can pull that has {@code sh}, {@code sleep} and
 * {@code echo} (e.g. busybox). Pods use the host network so no CNI plugin is needed.
 *
 * <pre>{@code
 * class FakeConformanceIT extends CriLifecycleConformance {
 *     @RegisterExtension static FakeCriExtension cri = FakeCriExtension.unixSocket();
 *     protected CriEndpoint endpoint() { return cri.endpoint(); }
 *     protected String testImage() { return "busybox:1.36"; }
 * }
 * }</pre>
 */
public abstract class CriLifecycleConformance {

    /** For a subclass that names the runtime under test. */
    protected CriLifecycleConformance() {}

    /** Codes a runtime may answer for a state conflict: FAILED_PRECONDITION (fake, CRI-O) or UNKNOWN (containerd). */
    protected static final Set<Status.Code> STATE_CONFLICT =
            Set.of(Status.Code.FAILED_PRECONDITION, Status.Code.UNKNOWN);

    private ManagedChannel channel;
    private final List<String> podsToClean = new ArrayList<>();
    private Path logDir;

    /** The CRI endpoint under test. */
    protected abstract CriEndpoint endpoint();

    /** An image reference the backend can pull, with {@code sh}, {@code sleep} and {@code echo}. */
    protected abstract String testImage();

    /** How long one call may take (default 60 s: pulls against a real registry). */
    protected Duration callTimeout() {
        return Duration.ofSeconds(60);
    }

    /**
     * Whether the backend streams {@code GetContainerEvents} (containerd 1.7+, the fake). When false, the suite
     * asserts the RPC answers UNIMPLEMENTED instead.
     */
    protected boolean supportsContainerEvents() {
        return true;
    }

    /** Whether {@code ContainerStatus} reports the container's resources (containerd 1.7+, the fake). */
    protected boolean reportsResourcesInStatus() {
        return true;
    }

    /**
     * The pod's cgroup parent, as kubelet always sets one (containerd cannot answer PodSandboxStats without it).
     * The default suits the cgroupfs driver; override for systemd ({@code kubepods-besteffort-pod<uid>.slice}).
     */
    protected String cgroupParent(String podUid) {
        return "/kubepods/besteffort/pod" + podUid;
    }

    @BeforeEach
    void connect() throws Exception {
        channel = CriChannels.newChannel(endpoint());
        logDir = Files.createTempDirectory("cri4j-conformance-logs");
    }

    @AfterEach
    void cleanUp() throws Exception {
        try {
            for (String pod : podsToClean) {
                try {
                    rt().stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder()
                                            .setPodSandboxId(pod)
                                            .build());
                    rt().removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(pod)
                                            .build());
                } catch (StatusRuntimeException ignored) {
                    // already gone
                }
            }
        } finally {
            channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            try (var files = Files.walk(logDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** A blocking v1 RuntimeService stub with the call timeout. */
    protected RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return RuntimeServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(callTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** A blocking v1 ImageService stub with the call timeout. */
    protected ImageServiceGrpc.ImageServiceBlockingStub img() {
        return ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(callTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    private PodSandboxConfig podConfig(String name) {
        String uid = UUID.randomUUID().toString();
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace("cri4j-conformance")
                                .setUid(uid))
                // host network: the hostname must stay empty (runc cannot set it without a private
                // UTS namespace)
                .setLogDirectory(logDir.resolve(uid).toString())
                .putLabels("io.kubernetes.pod.name", name)
                .putLabels("conformance", "yes")
                .setLinux(
                        LinuxPodSandboxConfig.newBuilder()
                                .setCgroupParent(cgroupParent(uid))
                                .setSecurityContext(
                                        LinuxSandboxSecurityContext.newBuilder()
                                                .setNamespaceOptions(
                                                        NamespaceOption.newBuilder()
                                                                .setNetwork(NamespaceMode.NODE))))
                .build();
    }

    private ContainerConfig containerConfig(String name, String image) {
        return ContainerConfig.newBuilder()
                .setMetadata(ContainerMetadata.newBuilder().setName(name))
                .setImage(ImageSpec.newBuilder().setImage(image))
                // exits 0 on SIGTERM, so a graceful stop ends with code 0 on a real runtime too
                .addCommand("sh")
                .addArgs("-c")
                .addArgs("trap 'exit 0' TERM; sleep 3600 & wait")
                .addEnvs(
                        KeyValue.newBuilder()
                                .setKey("GREETING")
                                .setValue(ByteString.copyFromUtf8("hello")))
                .putLabels("io.kubernetes.container.name", name)
                .putLabels("tier", "conformance")
                .setLogPath(name + "/0.log")
                .build();
    }

    private static Status.Code code(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    private static <T> T await(
            Supplier<T> poll, java.util.function.Predicate<T> done, Duration timeout, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        T last = poll.get();
        while (!done.test(last)) {
            if (System.nanoTime() > deadline) {
                fail(what + " within " + timeout + "; last seen: " + last);
            }
            TimeUnit.MILLISECONDS.sleep(
                    50); // polling a remote state; there is no notification to wait on
            last = poll.get();
        }
        return last;
    }

    @Test
    void runtimeIsReady() {
        VersionResponse v = rt().version(VersionRequest.newBuilder().setVersion("v1").build());
        assertFalse(v.getRuntimeName().isEmpty(), "runtime name");
        assertEquals("v1", v.getRuntimeApiVersion());
        StatusResponse s = rt().status(StatusRequest.getDefaultInstance());
        assertTrue(
                s.getStatus().getConditionsList().stream()
                        .anyMatch(c -> c.getType().equals("RuntimeReady") && c.getStatus()),
                "RuntimeReady condition: " + s);
    }

    @Test
    void imagePullStatusAndRemove() {
        String ref =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(testImage()))
                                        .build())
                        .getImageRef();
        assertFalse(ref.isEmpty(), "PullImage answers an image ref");
        Image byName =
                img().imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(testImage()))
                                        .build())
                        .getImage();
        Image byRef =
                img().imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(ref))
                                        .build())
                        .getImage();
        assertEquals(
                byName.getId(), byRef.getId(), "the pulled ref and the name resolve to one image");
        assertTrue(byName.getSize() > 0, "image size");
        assertFalse(byName.getRepoDigestsList().isEmpty(), "repo digests");
        assertTrue(
                img().listImages(ListImagesRequest.getDefaultInstance()).getImagesList().stream()
                        .anyMatch(i -> i.getId().equals(byName.getId())),
                "ListImages lists the image");
        // containerd samples usage periodically, so a fresh runtime may still report 0 bytes: check
        // the shape
        ImageFsInfoResponse fs = img().imageFsInfo(ImageFsInfoRequest.getDefaultInstance());
        assertTrue(fs.getImageFilesystemsCount() > 0, "an image filesystem is reported: " + fs);
        assertFalse(
                fs.getImageFilesystems(0).getFsId().getMountpoint().isEmpty(),
                "image filesystem mountpoint");
        assertTrue(
                fs.getImageFilesystems(0).getTimestamp() > 0, "image filesystem sample timestamp");
        // an image nobody has: empty status, no error
        assertFalse(
                img().imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(
                                                ImageSpec.newBuilder()
                                                        .setImage("cri4j.invalid/none/such:image"))
                                        .build())
                        .hasImage());
        img().removeImage(
                        RemoveImageRequest.newBuilder()
                                .setImage(
                                        ImageSpec.newBuilder()
                                                .setImage("cri4j.invalid/none/such:image"))
                                .build());
    }

    @Test
    void unknownIdsAreNotFoundAndRemovingThemSucceeds() {
        String id = "0".repeat(64);
        assertEquals(
                Status.Code.NOT_FOUND,
                code(
                        () ->
                                rt().containerStatus(
                                                ContainerStatusRequest.newBuilder()
                                                        .setContainerId(id)
                                                        .build())));
        assertEquals(
                Status.Code.NOT_FOUND,
                code(
                        () ->
                                rt().podSandboxStatus(
                                                PodSandboxStatusRequest.newBuilder()
                                                        .setPodSandboxId(id)
                                                        .build())));
        assertEquals(
                Status.Code.NOT_FOUND,
                code(
                        () ->
                                rt().startContainer(
                                                StartContainerRequest.newBuilder()
                                                        .setContainerId(id)
                                                        .build())));
        assertEquals(
                Status.Code.OK,
                code(
                        () ->
                                rt().removeContainer(
                                                RemoveContainerRequest.newBuilder()
                                                        .setContainerId(id)
                                                        .build())));
        assertEquals(
                Status.Code.OK,
                code(
                        () ->
                                rt().removePodSandbox(
                                                RemovePodSandboxRequest.newBuilder()
                                                        .setPodSandboxId(id)
                                                        .build())));
    }

    @Test
    void kubeletLikePodLifecycle() throws Exception {
        // 1. pull, as kubelet does before creating a container
        String imageRef =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(testImage()))
                                        .build())
                        .getImageRef();

        // 2. subscribe to events first (evented PLEG)
        BlockingQueue<ContainerEventResponse> events = new LinkedBlockingQueue<>();
        java.util.concurrent.CompletableFuture<Status> eventsEnd =
                new java.util.concurrent.CompletableFuture<>();
        Context.CancellableContext eventsContext = Context.current().withCancellation();
        try {
            eventsContext.run(
                    () ->
                            RuntimeServiceGrpc.newStub(channel)
                                    .getContainerEvents(
                                            GetEventsRequest.getDefaultInstance(),
                                            new StreamObserver<>() {
                                                @Override
                                                public void onNext(ContainerEventResponse e) {
                                                    events.add(e);
                                                }

                                                @Override
                                                public void onError(Throwable t) {
                                                    eventsEnd.complete(Status.fromThrowable(t));
                                                }

                                                @Override
                                                public void onCompleted() {
                                                    eventsEnd.complete(Status.OK);
                                                }
                                            }));
            if (!supportsContainerEvents()) {
                assertEquals(
                        Status.Code.UNIMPLEMENTED,
                        eventsEnd.get(30, TimeUnit.SECONDS).getCode(),
                        "a backend without container events answers UNIMPLEMENTED");
            }

            // 3. run the pod
            String podName = "conf-" + UUID.randomUUID().toString().substring(0, 8);
            PodSandboxConfig pod = podConfig(podName);
            String podId =
                    rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                            .getPodSandboxId();
            podsToClean.add(podId);
            PodSandboxStatus podStatus =
                    rt().podSandboxStatus(
                                    PodSandboxStatusRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build())
                            .getStatus();
            assertEquals(PodSandboxState.SANDBOX_READY, podStatus.getState());
            assertEquals(podName, podStatus.getMetadata().getName());
            assertEquals("yes", podStatus.getLabelsMap().get("conformance"));
            assertTrue(
                    rt()
                            .listPodSandbox(
                                    ListPodSandboxRequest.newBuilder()
                                            .setFilter(
                                                    PodSandboxFilter.newBuilder()
                                                            .putLabelSelector(
                                                                    "io.kubernetes.pod.name",
                                                                    podName))
                                            .build())
                            .getItemsList()
                            .stream()
                            .anyMatch(p -> p.getId().equals(podId)),
                    "ListPodSandbox by label finds the pod");

            // 4. create and start a container
            String cid =
                    rt().createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setConfig(containerConfig("app", testImage()))
                                            .setSandboxConfig(pod)
                                            .build())
                            .getContainerId();
            ContainerStatus created =
                    rt().containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(cid).build())
                            .getStatus();
            assertEquals(ContainerState.CONTAINER_CREATED, created.getState());
            assertTrue(created.getCreatedAt() > 0, "created_at");
            assertEquals("app", created.getMetadata().getName());
            rt().startContainer(StartContainerRequest.newBuilder().setContainerId(cid).build());
            ContainerStatus running =
                    rt().containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(cid).build())
                            .getStatus();
            assertEquals(ContainerState.CONTAINER_RUNNING, running.getState());
            assertTrue(
                    running.getStartedAt() >= created.getCreatedAt(),
                    "started_at after created_at");
            assertFalse(running.getImageRef().isEmpty(), "image_ref");
            assertTrue(
                    running.getLogPath().endsWith("app/0.log"), "log path " + running.getLogPath());
            assertTrue(
                    STATE_CONFLICT.contains(
                            code(
                                    () ->
                                            rt().startContainer(
                                                            StartContainerRequest.newBuilder()
                                                                    .setContainerId(cid)
                                                                    .build()))),
                    "starting twice is refused");

            // 5. list with filters
            assertEquals(
                    List.of(cid),
                    containerIds(
                            ContainerFilter.newBuilder()
                                    .setPodSandboxId(podId)
                                    .setState(
                                            ContainerStateValue.newBuilder()
                                                    .setState(ContainerState.CONTAINER_RUNNING))
                                    .build()));
            assertEquals(
                    List.of(cid),
                    containerIds(
                            ContainerFilter.newBuilder()
                                    .setPodSandboxId(podId)
                                    .putLabelSelector("tier", "conformance")
                                    .build()));
            assertEquals(
                    List.of(),
                    containerIds(
                            ContainerFilter.newBuilder()
                                    .setPodSandboxId(podId)
                                    .setState(
                                            ContainerStateValue.newBuilder()
                                                    .setState(ContainerState.CONTAINER_EXITED))
                                    .build()));

            // 6. exec, as probes do
            ExecSyncResponse hello =
                    rt().execSync(
                                    ExecSyncRequest.newBuilder()
                                            .setContainerId(cid)
                                            .addCmd("sh")
                                            .addCmd("-c")
                                            .addCmd("echo $GREETING")
                                            .setTimeout(30)
                                            .build());
            assertEquals("hello\n", hello.getStdout().toStringUtf8());
            assertEquals(0, hello.getExitCode());
            ExecSyncResponse failing =
                    rt().execSync(
                                    ExecSyncRequest.newBuilder()
                                            .setContainerId(cid)
                                            .addCmd("sh")
                                            .addCmd("-c")
                                            .addCmd("echo bad >&2; exit 3")
                                            .setTimeout(30)
                                            .build());
            assertEquals(3, failing.getExitCode());
            assertEquals("bad\n", failing.getStderr().toStringUtf8());

            // 7. stats
            ContainerStats stats =
                    await(
                            () ->
                                    rt().containerStats(
                                                    ContainerStatsRequest.newBuilder()
                                                            .setContainerId(cid)
                                                            .build())
                                            .getStats(),
                            s -> s.getMemory().getWorkingSetBytes().getValue() > 0,
                            Duration.ofSeconds(30),
                            "container memory working set above zero");
            assertEquals(cid, stats.getAttributes().getId());
            assertTrue(stats.hasCpu(), "cpu stats");
            assertTrue(
                    rt()
                            .listContainerStats(
                                    ListContainerStatsRequest.newBuilder()
                                            .setFilter(
                                                    ContainerStatsFilter.newBuilder()
                                                            .setPodSandboxId(podId))
                                            .build())
                            .getStatsList()
                            .stream()
                            .anyMatch(s -> s.getAttributes().getId().equals(cid)),
                    "ListContainerStats by pod");
            PodSandboxStats podStats =
                    rt().podSandboxStats(
                                    PodSandboxStatsRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build())
                            .getStats();
            assertEquals(podId, podStats.getAttributes().getId());

            // 8. resize
            rt().updateContainerResources(
                            UpdateContainerResourcesRequest.newBuilder()
                                    .setContainerId(cid)
                                    .setLinux(
                                            LinuxContainerResources.newBuilder()
                                                    .setMemoryLimitInBytes(64L << 20)
                                                    .setCpuPeriod(100_000)
                                                    .setCpuQuota(50_000)
                                                    .setCpuShares(512))
                                    .build());
            ContainerStatus resized =
                    rt().containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(cid).build())
                            .getStatus();
            if (reportsResourcesInStatus()) {
                assertEquals(64L << 20, resized.getResources().getLinux().getMemoryLimitInBytes());
                assertEquals(50_000, resized.getResources().getLinux().getCpuQuota());
            }
            assertEquals(
                    ContainerState.CONTAINER_RUNNING,
                    resized.getState(),
                    "still running after the update");

            // 9. stop and remove the container
            rt().stopContainer(
                            StopContainerRequest.newBuilder()
                                    .setContainerId(cid)
                                    .setTimeout(10)
                                    .build());
            ContainerStatus exited =
                    rt().containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(cid).build())
                            .getStatus();
            assertEquals(ContainerState.CONTAINER_EXITED, exited.getState());
            assertEquals(
                    0, exited.getExitCode(), "graceful stop of a process that exits on SIGTERM");
            assertTrue(
                    exited.getFinishedAt() >= exited.getStartedAt(),
                    "finished_at after started_at");
            rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(cid).build());
            assertEquals(
                    Status.Code.NOT_FOUND,
                    code(
                            () ->
                                    rt().containerStatus(
                                                    ContainerStatusRequest.newBuilder()
                                                            .setContainerId(cid)
                                                            .build())));

            // 10. stop and remove the pod
            rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            assertEquals(
                    PodSandboxState.SANDBOX_NOTREADY,
                    rt().podSandboxStatus(
                                    PodSandboxStatusRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build())
                            .getStatus()
                            .getState());
            rt().removePodSandbox(
                            RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            assertEquals(
                    Status.Code.NOT_FOUND,
                    code(
                            () ->
                                    rt().podSandboxStatus(
                                                    PodSandboxStatusRequest.newBuilder()
                                                            .setPodSandboxId(podId)
                                                            .build())));
            podsToClean.remove(podId);

            // 11. the container's events, in order
            if (!supportsContainerEvents()) {
                return;
            }
            List<ContainerEventType> seen = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (seen.size() < 4) {
                ContainerEventResponse e =
                        events.poll(
                                Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                assertNotNull(
                        e,
                        "container events so far "
                                + seen
                                + "; expected CREATED, STARTED, STOPPED, DELETED");
                if (e.getContainerId().equals(cid)) {
                    seen.add(e.getContainerEventType());
                    assertNotEquals(0, e.getCreatedAt(), "event created_at");
                }
            }
            assertEquals(
                    List.of(
                            ContainerEventType.CONTAINER_CREATED_EVENT,
                            ContainerEventType.CONTAINER_STARTED_EVENT,
                            ContainerEventType.CONTAINER_STOPPED_EVENT,
                            ContainerEventType.CONTAINER_DELETED_EVENT),
                    seen);
            assertFalse(imageRef.isEmpty());
        } finally {
            eventsContext.cancel(null);
        }
    }

    @Test
    void streamingExecOverSpdyAsKubeletRelaysIt() throws Exception {
        img().pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(testImage()))
                                .build());
        String podName = "stream-" + UUID.randomUUID().toString().substring(0, 8);
        PodSandboxConfig pod = podConfig(podName);
        String podId =
                rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        podsToClean.add(podId);
        String cid =
                rt().createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setConfig(containerConfig("app", testImage()))
                                        .setSandboxConfig(pod)
                                        .build())
                        .getContainerId();
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(cid).build());
        String url =
                rt().exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(cid)
                                        .addCmd("sh")
                                        .addCmd("-c")
                                        .addCmd(
                                                "read line; echo \"got $line\"; echo $GREETING >&2; exit 5")
                                        .setStdin(true)
                                        .setStdout(true)
                                        .setStderr(true)
                                        .build())
                        .getUrl();
        try (io.cri4j.streaming.StreamingClient client =
                        io.cri4j.streaming.StreamingClient.builder()
                                .transport(io.cri4j.streaming.StreamingClient.Transport.SPDY)
                                .build();
                io.cri4j.streaming.RemoteCommand cmd =
                        client.exec(
                                java.net.URI.create(url),
                                new io.cri4j.streaming.CommandOptions(true, true, true, false))) {
            cmd.stdin().write("ping\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            cmd.stdin().close();
            assertEquals(
                    "got ping\n",
                    new String(
                            cmd.stdout().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
            assertEquals(
                    "hello\n",
                    new String(
                            cmd.stderr().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
            assertEquals(5, cmd.exitCode().get(30, TimeUnit.SECONDS));
        }
    }

    private List<String> containerIds(ContainerFilter filter) {
        return rt()
                .listContainers(ListContainersRequest.newBuilder().setFilter(filter).build())
                .getContainersList()
                .stream()
                .map(Container::getId)
                .toList();
    }
}
