package io.cri4j.testing.fake;

import static io.cri4j.testing.fake.Cri.container;
import static io.cri4j.testing.fake.Cri.pod;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.*;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The fake's runtime and image services, over a real unix socket with the cri4j client channel. */
class FakeRuntimeIT {

    static final TestClock clock = new TestClock();

    @RegisterExtension
    static FakeCriExtension cri = FakeCriExtension.unixSocket().configure(b -> b.clock(clock));

    RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return cri.runtimeService().withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    ImageServiceGrpc.ImageServiceBlockingStub img() {
        return cri.imageService().withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    String runPod(String name, Map<String, String> labels) {
        return rt().runPodSandbox(
                        RunPodSandboxRequest.newBuilder().setConfig(pod(name, labels)).build())
                .getPodSandboxId();
    }

    String create(
            String podId, String podName, String name, String image, Map<String, String> labels) {
        return rt().createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(podId)
                                .setConfig(container(name, image, labels))
                                .setSandboxConfig(pod(podName, Map.of()))
                                .build())
                .getContainerId();
    }

    ContainerStatus status(String id) {
        return rt().containerStatus(ContainerStatusRequest.newBuilder().setContainerId(id).build())
                .getStatus();
    }

    static Status.Code code(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
        return Status.Code.OK;
    }

    @Test
    void versionNamesTheApiVersionTheCallCameIn() {
        VersionResponse v1 = rt().version(VersionRequest.getDefaultInstance());
        assertThat(v1.getRuntimeName()).isEqualTo("cri4j-fake");
        assertThat(v1.getRuntimeApiVersion()).isEqualTo("v1");
        io.cri4j.cri.v1alpha2.VersionResponse alpha =
                cri.runtimeServiceV1alpha2()
                        .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance());
        assertThat(alpha.getRuntimeName()).isEqualTo("cri4j-fake");
        assertThat(alpha.getRuntimeApiVersion()).isEqualTo("v1alpha2");
    }

    @Test
    void statusAndRuntimeConfig() {
        StatusResponse s = rt().status(StatusRequest.newBuilder().setVerbose(true).build());
        assertThat(s.getStatus().getConditionsList())
                .extracting(RuntimeCondition::getType, RuntimeCondition::getStatus)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("RuntimeReady", true),
                        org.assertj.core.groups.Tuple.tuple("NetworkReady", true));
        assertThat(s.getRuntimeHandlersList())
                .extracting(RuntimeHandler::getName)
                .contains("", "runc");
        assertThat(
                        rt().runtimeConfig(RuntimeConfigRequest.getDefaultInstance())
                                .getLinux()
                                .getCgroupDriver())
                .isEqualTo(CgroupDriver.SYSTEMD);
        rt().updateRuntimeConfig(
                        UpdateRuntimeConfigRequest.newBuilder()
                                .setRuntimeConfig(
                                        RuntimeConfig.newBuilder()
                                                .setNetworkConfig(
                                                        NetworkConfig.newBuilder()
                                                                .setPodCidr("10.88.0.0/16")))
                                .build());
        assertThat(cri.fakeRuntime().podCidr()).isEqualTo("10.88.0.0/16");
        assertThat(
                        rt().status(StatusRequest.newBuilder().setVerbose(true).build())
                                .getInfoMap()
                                .get("config"))
                .contains("10.88.0.0/16");
    }

    @Test
    void sandboxLifecycleAndFilters() {
        String web = runPod("web", Map.of("app", "web"));
        String db = runPod("db", Map.of("app", "db"));
        PodSandboxStatus st =
                rt().podSandboxStatus(
                                PodSandboxStatusRequest.newBuilder().setPodSandboxId(web).build())
                        .getStatus();
        assertThat(web).hasSize(64).matches("[0-9a-f]+");
        assertThat(st.getState()).isEqualTo(PodSandboxState.SANDBOX_READY);
        assertThat(st.getNetwork().getIp()).startsWith("10.88.0.");
        assertThat(st.getMetadata().getName()).isEqualTo("web");
        assertThat(st.getLabelsMap()).containsEntry("app", "web");
        assertThat(st.getAnnotationsMap()).containsEntry("owner", "test");
        assertThat(st.getCreatedAt()).isEqualTo(clock.instant().getEpochSecond() * 1_000_000_000L);

        assertThat(code(() -> runPod("web", Map.of()))).isEqualTo(Status.Code.ALREADY_EXISTS);

        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(db).build());
        assertThat(list(PodSandboxFilter.getDefaultInstance())).containsExactly(web, db);
        assertThat(
                        list(
                                PodSandboxFilter.newBuilder()
                                        .setState(
                                                PodSandboxStateValue.newBuilder()
                                                        .setState(PodSandboxState.SANDBOX_NOTREADY))
                                        .build()))
                .containsExactly(db);
        assertThat(list(PodSandboxFilter.newBuilder().putLabelSelector("app", "web").build()))
                .containsExactly(web);
        assertThat(list(PodSandboxFilter.newBuilder().setId(web.substring(0, 12)).build()))
                .containsExactly(web);
        assertThat(list(PodSandboxFilter.newBuilder().putLabelSelector("app", "none").build()))
                .isEmpty();

        rt().removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(db).build());
        assertThat(list(PodSandboxFilter.getDefaultInstance())).containsExactly(web);
        // like containerd: removing again succeeds, asking about it is NOT_FOUND
        rt().removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(db).build());
        assertThat(
                        code(
                                () ->
                                        rt().podSandboxStatus(
                                                        PodSandboxStatusRequest.newBuilder()
                                                                .setPodSandboxId(db)
                                                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        // like containerd: StopPodSandbox is idempotent, a sandbox that does not exist is stopped
        assertThat(
                        code(
                                () ->
                                        rt().stopPodSandbox(
                                                        StopPodSandboxRequest.newBuilder()
                                                                .setPodSandboxId("nope")
                                                                .build())))
                .isEqualTo(Status.Code.OK);
        assertThat(
                        code(
                                () ->
                                        rt().stopContainer(
                                                        StopContainerRequest.newBuilder()
                                                                .setContainerId("nope")
                                                                .build())))
                .isEqualTo(Status.Code.OK);
    }

    List<String> list(PodSandboxFilter filter) {
        return rt()
                .listPodSandbox(ListPodSandboxRequest.newBuilder().setFilter(filter).build())
                .getItemsList()
                .stream()
                .map(PodSandbox::getId)
                .toList();
    }

    @Test
    void containerLifecycleWithTimestampsAndErrors() {
        String pinned =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage("busybox:1.36"))
                                        .build())
                        .getImageRef();
        assertThat(pinned).matches("docker\\.io/library/busybox@sha256:[0-9a-f]{64}");
        String pod = runPod("app", Map.of());
        String id = create(pod, "app", "main", "busybox:1.36", Map.of("tier", "1"));

        ContainerStatus created = status(id);
        assertThat(created.getState()).isEqualTo(ContainerState.CONTAINER_CREATED);
        assertThat(created.getImage().getImage()).isEqualTo("docker.io/library/busybox:1.36");
        assertThat(created.getImageRef()).isEqualTo(pinned);
        assertThat(created.getImageId()).startsWith("sha256:");
        assertThat(created.getMountsList())
                .extracting(Mount::getContainerPath)
                .containsExactly("/data");
        assertThat(created.getLogPath()).isEqualTo(Cri.LOG_ROOT + "/default_app/main/0.log");
        assertThat(created.getStartedAt()).isZero();

        clock.advance(Duration.ofSeconds(2));
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        ContainerStatus running = status(id);
        assertThat(running.getState()).isEqualTo(ContainerState.CONTAINER_RUNNING);
        assertThat(running.getStartedAt()).isEqualTo(created.getCreatedAt() + 2_000_000_000L);
        assertThat(
                        code(
                                () ->
                                        rt().startContainer(
                                                        StartContainerRequest.newBuilder()
                                                                .setContainerId(id)
                                                                .build())))
                .isEqualTo(Status.Code.FAILED_PRECONDITION);

        clock.advance(Duration.ofSeconds(3));
        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(id)
                                .setTimeout(10)
                                .build());
        ContainerStatus exited = status(id);
        assertThat(exited.getState()).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(exited.getExitCode()).isZero();
        assertThat(exited.getReason()).isEqualTo("Completed");
        assertThat(exited.getFinishedAt()).isEqualTo(running.getStartedAt() + 3_000_000_000L);

        String killed = create(pod, "app", "sidecar", "busybox:1.36", Map.of());
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(killed).build());
        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(killed)
                                .setTimeout(0)
                                .build());
        assertThat(status(killed).getExitCode()).isEqualTo(137);

        String crashing = create(pod, "app", "crasher", "busybox:1.36", Map.of());
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(crashing).build());
        cri.fakeRuntime().exitContainer(crashing, 3);
        assertThat(status(crashing).getExitCode()).isEqualTo(3);
        assertThat(status(crashing).getReason()).isEqualTo("Error");

        assertThat(code(() -> create(pod, "app", "main", "busybox:1.36", Map.of())))
                .isEqualTo(Status.Code.ALREADY_EXISTS);
        assertThat(code(() -> create(pod, "app", "other", "nginx:missing", Map.of())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(code(() -> status("0123"))).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(
                        code(
                                () ->
                                        rt().startContainer(
                                                        StartContainerRequest.newBuilder()
                                                                .setContainerId("nope")
                                                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);

        rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
        assertThat(code(() -> status(id))).isEqualTo(Status.Code.NOT_FOUND);
        rt().removeContainer(
                        RemoveContainerRequest.newBuilder()
                                .setContainerId(id)
                                .build()); // idempotent

        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(pod).build());
        assertThat(code(() -> create(pod, "app", "late", "busybox:1.36", Map.of())))
                .isEqualTo(Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void stoppingASandboxKillsItsContainersAndRemovingItRemovesThem() {
        cri.fakeRuntime().addImage("busybox");
        String pod = runPod("p", Map.of());
        String c = create(pod, "p", "c", "busybox", Map.of());
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(pod).build());
        assertThat(status(c).getState()).isEqualTo(ContainerState.CONTAINER_EXITED);
        assertThat(status(c).getExitCode()).isEqualTo(137);
        rt().removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(pod).build());
        assertThat(cri.fakeRuntime().containerIds()).isEmpty();
    }

    @Test
    void everyContainerFilter() {
        cri.fakeRuntime().addImage("busybox");
        String p1 = runPod("p1", Map.of());
        String p2 = runPod("p2", Map.of());
        String a = create(p1, "p1", "a", "busybox", Map.of("role", "front"));
        String b = create(p1, "p1", "b", "busybox", Map.of("role", "back"));
        String c = create(p2, "p2", "c", "busybox", Map.of("role", "front"));
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(b).build());

        assertThat(containers(ContainerFilter.getDefaultInstance())).containsExactly(a, b, c);
        assertThat(containers(ContainerFilter.newBuilder().setId(b).build())).containsExactly(b);
        assertThat(containers(ContainerFilter.newBuilder().setPodSandboxId(p1).build()))
                .containsExactly(a, b);
        assertThat(
                        containers(
                                ContainerFilter.newBuilder()
                                        .setState(
                                                ContainerStateValue.newBuilder()
                                                        .setState(ContainerState.CONTAINER_RUNNING))
                                        .build()))
                .containsExactly(b);
        assertThat(
                        containers(
                                ContainerFilter.newBuilder()
                                        .putLabelSelector("role", "front")
                                        .build()))
                .containsExactly(a, c);
        assertThat(
                        containers(
                                ContainerFilter.newBuilder()
                                        .putLabelSelector("role", "front")
                                        .setPodSandboxId(p2)
                                        .build()))
                .containsExactly(c);

        Container listed =
                rt().listContainers(
                                ListContainersRequest.newBuilder()
                                        .setFilter(ContainerFilter.newBuilder().setId(b))
                                        .build())
                        .getContainers(0);
        assertThat(listed.getPodSandboxId()).isEqualTo(p1);
        assertThat(listed.getMetadata().getName()).isEqualTo("b");
        assertThat(listed.getImageRef()).startsWith("sha256:");
        assertThat(listed.getLabelsMap()).containsEntry("role", "back");

        // the stream RPC answers the same list
        List<String> streamed = new ArrayList<>();
        rt().streamContainers(
                        StreamContainersRequest.newBuilder()
                                .setFilter(
                                        ContainerFilter.newBuilder()
                                                .putLabelSelector("role", "front"))
                                .build())
                .forEachRemaining(r -> r.getContainersList().forEach(x -> streamed.add(x.getId())));
        assertThat(streamed).containsExactly(a, c);
    }

    List<String> containers(ContainerFilter filter) {
        return rt()
                .listContainers(ListContainersRequest.newBuilder().setFilter(filter).build())
                .getContainersList()
                .stream()
                .map(Container::getId)
                .toList();
    }

    @Test
    void streamListsComeInChunksOfAHundred() {
        for (int i = 0; i < 150; i++) {
            runPod("pod-" + i, Map.of("batch", "x"));
        }
        Iterator<StreamPodSandboxesResponse> it =
                rt().streamPodSandboxes(StreamPodSandboxesRequest.getDefaultInstance());
        List<Integer> sizes = new ArrayList<>();
        it.forEachRemaining(r -> sizes.add(r.getPodSandboxesCount()));
        assertThat(sizes).containsExactly(100, 50);
        List<Integer> stats = new ArrayList<>();
        rt().streamPodSandboxStats(StreamPodSandboxStatsRequest.getDefaultInstance())
                .forEachRemaining(r -> stats.add(r.getPodSandboxStatsCount()));
        assertThat(stats).containsExactly(100, 50);
        List<Integer> metrics = new ArrayList<>();
        rt().streamPodSandboxMetrics(StreamPodSandboxMetricsRequest.getDefaultInstance())
                .forEachRemaining(r -> metrics.add(r.getPodSandboxMetricsCount()));
        assertThat(metrics).containsExactly(100, 50);
    }

    @Test
    void statsArePlausibleGrowWithTimeAndFollowResourceUpdates() {
        cri.fakeRuntime().addImage("busybox");
        String pod = runPod("s", Map.of("app", "s"));
        String c = create(pod, "s", "c", "busybox", Map.of());
        ContainerStats idle =
                rt().containerStats(ContainerStatsRequest.newBuilder().setContainerId(c).build())
                        .getStats();
        assertThat(idle.getCpu().getUsageCoreNanoSeconds().getValue()).isZero();
        assertThat(idle.getMemory().getWorkingSetBytes().getValue()).isZero();
        assertThat(idle.getWritableLayer().getUsedBytes().getValue()).isPositive();

        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
        ContainerStats first =
                rt().containerStats(ContainerStatsRequest.newBuilder().setContainerId(c).build())
                        .getStats();
        clock.advance(Duration.ofSeconds(10));
        ContainerStats later =
                rt().containerStats(ContainerStatsRequest.newBuilder().setContainerId(c).build())
                        .getStats();
        long nanoCores = later.getCpu().getUsageNanoCores().getValue();
        assertThat(nanoCores).isBetween(5_000_000L, 50_000_000L); // 0.5 % .. 5 % of a core
        assertThat(
                        later.getCpu().getUsageCoreNanoSeconds().getValue()
                                - first.getCpu().getUsageCoreNanoSeconds().getValue())
                .isEqualTo(10 * nanoCores);
        long ws = later.getMemory().getWorkingSetBytes().getValue();
        assertThat(ws).isBetween(4L << 20, 36L << 20);
        assertThat(later.getAttributes().getId()).isEqualTo(c);

        rt().updateContainerResources(
                        UpdateContainerResourcesRequest.newBuilder()
                                .setContainerId(c)
                                .setLinux(
                                        LinuxContainerResources.newBuilder()
                                                .setMemoryLimitInBytes(2L << 20)
                                                .setCpuQuota(50_000)
                                                .setCpuPeriod(100_000))
                                .build());
        ContainerStatus st = status(c);
        assertThat(st.getResources().getLinux().getMemoryLimitInBytes()).isEqualTo(2L << 20);
        assertThat(st.getResources().getLinux().getCpuQuota()).isEqualTo(50_000);
        ContainerStats limited =
                rt().containerStats(ContainerStatsRequest.newBuilder().setContainerId(c).build())
                        .getStats();
        assertThat(limited.getMemory().getWorkingSetBytes().getValue()).isLessThan(2L << 20);
        assertThat(limited.getMemory().getAvailableBytes().getValue())
                .isEqualTo((2L << 20) - limited.getMemory().getWorkingSetBytes().getValue());

        PodSandboxStats ps =
                rt().podSandboxStats(
                                PodSandboxStatsRequest.newBuilder().setPodSandboxId(pod).build())
                        .getStats();
        assertThat(ps.getLinux().getContainersList()).hasSize(1);
        assertThat(ps.getLinux().getProcess().getProcessCount().getValue()).isEqualTo(2);
        assertThat(ps.getLinux().getNetwork().getDefaultInterface().getName()).isEqualTo("eth0");
        assertThat(ps.getLinux().getNetwork().getDefaultInterface().getRxBytes().getValue())
                .isPositive();
        assertThat(ps.getLinux().getMemory().getWorkingSetBytes().getValue())
                .isGreaterThan(limited.getMemory().getWorkingSetBytes().getValue());

        assertThat(
                        rt().listContainerStats(
                                        ListContainerStatsRequest.newBuilder()
                                                .setFilter(
                                                        ContainerStatsFilter.newBuilder()
                                                                .setPodSandboxId(pod))
                                                .build())
                                .getStatsList())
                .hasSize(1);
        assertThat(
                        rt().listContainerStats(
                                        ListContainerStatsRequest.newBuilder()
                                                .setFilter(
                                                        ContainerStatsFilter.newBuilder()
                                                                .putLabelSelector("x", "y"))
                                                .build())
                                .getStatsList())
                .isEmpty();
        assertThat(
                        rt().listPodSandboxStats(
                                        ListPodSandboxStatsRequest.newBuilder()
                                                .setFilter(
                                                        PodSandboxStatsFilter.newBuilder()
                                                                .putLabelSelector("app", "s"))
                                                .build())
                                .getStatsList())
                .hasSize(1);
        assertThat(
                        rt().listMetricDescriptors(
                                        ListMetricDescriptorsRequest.getDefaultInstance())
                                .getDescriptorsList())
                .extracting(MetricDescriptor::getName)
                .contains("container_cpu_usage_seconds_total");
        assertThat(
                        rt().listPodSandboxMetrics(
                                        ListPodSandboxMetricsRequest.getDefaultInstance())
                                .getPodMetrics(0)
                                .getContainerMetricsList())
                .hasSize(1);
    }

    @Test
    void containerEventsAreStreamedForEveryLifecycleChange() throws Exception {
        cri.fakeRuntime().addImage("busybox");
        BlockingQueue<ContainerEventResponse> events = new LinkedBlockingQueue<>();
        io.grpc.Context.CancellableContext ctx = io.grpc.Context.current().withCancellation();
        try {
            ctx.run(
                    () ->
                            cri.runtimeServiceAsync()
                                    .getContainerEvents(
                                            GetEventsRequest.getDefaultInstance(),
                                            new StreamObserver<>() {
                                                public void onNext(ContainerEventResponse e) {
                                                    events.add(e);
                                                }

                                                public void onError(Throwable t) {}

                                                public void onCompleted() {}
                                            }));
            cri.fakeRuntime().awaitEventSubscribers(1, Duration.ofSeconds(5));
            String pod = runPod("ev", Map.of());
            ContainerEventResponse first = events.poll(5, TimeUnit.SECONDS);
            assertThat(first.getContainerId()).isEqualTo(pod);
            assertThat(first.getContainerEventType())
                    .isEqualTo(ContainerEventType.CONTAINER_CREATED_EVENT);
            ContainerEventResponse sandboxStarted = events.poll(5, TimeUnit.SECONDS);
            assertThat(sandboxStarted.getContainerEventType())
                    .isEqualTo(ContainerEventType.CONTAINER_STARTED_EVENT);

            String c = create(pod, "ev", "c", "busybox", Map.of());
            rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
            rt().stopContainer(
                            StopContainerRequest.newBuilder()
                                    .setContainerId(c)
                                    .setTimeout(1)
                                    .build());
            rt().removeContainer(RemoveContainerRequest.newBuilder().setContainerId(c).build());
            List<ContainerEventType> types = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ContainerEventResponse e = events.poll(5, TimeUnit.SECONDS);
                assertThat(e).as("event %d", i).isNotNull();
                assertThat(e.getContainerId()).isEqualTo(c);
                assertThat(e.getPodSandboxStatus().getId()).isEqualTo(pod);
                assertThat(e.getCreatedAt()).isPositive();
                types.add(e.getContainerEventType());
                if (e.getContainerEventType() == ContainerEventType.CONTAINER_STOPPED_EVENT) {
                    assertThat(e.getContainersStatusesList())
                            .extracting(ContainerStatus::getState)
                            .containsExactly(ContainerState.CONTAINER_EXITED);
                }
            }
            assertThat(types)
                    .containsExactly(
                            ContainerEventType.CONTAINER_CREATED_EVENT,
                            ContainerEventType.CONTAINER_STARTED_EVENT,
                            ContainerEventType.CONTAINER_STOPPED_EVENT,
                            ContainerEventType.CONTAINER_DELETED_EVENT);
        } finally {
            ctx.cancel(null);
        }
    }

    @Test
    void execSyncRunsARealHostProcess() {
        cri.fakeRuntime().addImage("busybox");
        String pod = runPod("x", Map.of());
        String c = create(pod, "x", "c", "busybox", Map.of());
        assertThat(
                        code(
                                () ->
                                        rt().execSync(
                                                        ExecSyncRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .addCmd("true")
                                                                .build())))
                .isEqualTo(Status.Code.FAILED_PRECONDITION);
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());

        ExecSyncResponse echo =
                rt().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(c)
                                        .addCmd("sh")
                                        .addCmd("-c")
                                        .addCmd("echo $GREETING; echo oops >&2; exit 3")
                                        .build());
        assertThat(echo.getStdout().toStringUtf8()).isEqualTo("hello\n");
        assertThat(echo.getStderr().toStringUtf8()).isEqualTo("oops\n");
        assertThat(echo.getExitCode()).isEqualTo(3);

        ExecSyncResponse cat =
                rt().execSync(ExecSyncRequest.newBuilder().setContainerId(c).addCmd("cat").build());
        assertThat(cat.getExitCode()).isZero(); // stdin is empty, so cat ends at once

        long start = System.nanoTime();
        assertThat(
                        code(
                                () ->
                                        rt().execSync(
                                                        ExecSyncRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .addCmd("sleep")
                                                                .addCmd("30")
                                                                .setTimeout(1)
                                                                .build())))
                .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));

        assertThatThrownBy(
                        () ->
                                rt().execSync(
                                                ExecSyncRequest.newBuilder()
                                                        .setContainerId(c)
                                                        .addCmd("/no/such/binary")
                                                        .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription()).contains("/no/such/binary");
                        });
        assertThat(
                        code(
                                () ->
                                        rt().execSync(
                                                        ExecSyncRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .build())))
                .isEqualTo(Status.Code.INVALID_ARGUMENT);
    }

    @Test
    void execSyncKillsTheProcessWhenTheClientGivesUp(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        cri.fakeRuntime().addImage("busybox");
        String pod = runPod("k", Map.of());
        String c = create(pod, "k", "c", "busybox", Map.of());
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
        java.nio.file.Path pidFile = dir.resolve("pid");
        assertThat(
                        code(
                                () ->
                                        cri.runtimeService()
                                                .withDeadlineAfter(1500, TimeUnit.MILLISECONDS)
                                                .execSync(
                                                        ExecSyncRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .addCmd("sh")
                                                                .addCmd("-c")
                                                                .addCmd(
                                                                        "echo $$ > "
                                                                                + pidFile
                                                                                + "; exec sleep 60")
                                                                .build())))
                .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(pidFile).exists();
        long pid = Long.parseLong(java.nio.file.Files.readString(pidFile).trim());
        ProcessHandle process = ProcessHandle.of(pid).orElse(null);
        if (process != null) {
            process.onExit().get(10, TimeUnit.SECONDS); // killed, not left to run its 60 s
        }
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
    }

    @Test
    void streamingRpcsCheckTheTargetAndAnswerStreamingServerUrls() {
        cri.fakeRuntime().addImage("busybox");
        String pod = runPod("x", Map.of());
        String c = create(pod, "x", "c", "busybox", Map.of());
        assertThat(
                        code(
                                () ->
                                        rt().exec(
                                                        ExecRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .addCmd("sh")
                                                                .setStdout(true)
                                                                .build())))
                .isEqualTo(Status.Code.FAILED_PRECONDITION); // created, not running
        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(c).build());
        String base = cri.server().streamingBaseUrl().orElseThrow().toString();
        assertThat(
                        rt().exec(
                                        ExecRequest.newBuilder()
                                                .setContainerId(c)
                                                .addCmd("sh")
                                                .setStdout(true)
                                                .build())
                                .getUrl())
                .startsWith(base + "exec/");
        assertThat(
                        rt().attach(
                                        AttachRequest.newBuilder()
                                                .setContainerId(c)
                                                .setStdout(true)
                                                .build())
                                .getUrl())
                .startsWith(base + "attach/");
        assertThat(
                        rt().portForward(
                                        PortForwardRequest.newBuilder()
                                                .setPodSandboxId(pod)
                                                .addPort(80)
                                                .build())
                                .getUrl())
                .startsWith(base + "portforward/");
        assertThat(
                        code(
                                () ->
                                        rt().exec(
                                                        ExecRequest.newBuilder()
                                                                .setContainerId(c)
                                                                .addCmd("sh")
                                                                .build())))
                .isEqualTo(Status.Code.INVALID_ARGUMENT); // no stream asked for, as kubelet and
        // containerd say
        assertThat(
                        code(
                                () ->
                                        rt().exec(
                                                        ExecRequest.newBuilder()
                                                                .setContainerId("nope")
                                                                .addCmd("sh")
                                                                .setStdout(true)
                                                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(
                        code(
                                () ->
                                        rt().portForward(
                                                        PortForwardRequest.newBuilder()
                                                                .setPodSandboxId("nope")
                                                                .addPort(80)
                                                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
    }

    @Test
    void imagesPullListStatusRemoveAndFsInfo() {
        String a =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                        .build())
                        .getImageRef();
        String again =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(
                                                ImageSpec.newBuilder()
                                                        .setImage("docker.io/library/nginx:latest"))
                                        .build())
                        .getImageRef();
        assertThat(again).isEqualTo(a);
        String b =
                img().pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(
                                                ImageSpec.newBuilder()
                                                        .setImage(
                                                                "registry.example:5000/team/tool:v2"))
                                        .build())
                        .getImageRef();
        assertThat(b).startsWith("registry.example:5000/team/tool@sha256:");

        List<Image> images =
                img().listImages(ListImagesRequest.getDefaultInstance()).getImagesList();
        assertThat(images).hasSize(2);
        Image nginx =
                img().imageStatus(
                                ImageStatusRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                        .build())
                        .getImage();
        assertThat(nginx.getRepoTagsList()).containsExactly("docker.io/library/nginx:latest");
        assertThat(nginx.getRepoDigestsList()).containsExactly(a);
        assertThat(nginx.getSize()).isBetween(2L << 20, 120L << 20);
        // the pinned ref and the id resolve to the same image
        assertThat(
                        img().imageStatus(
                                        ImageStatusRequest.newBuilder()
                                                .setImage(ImageSpec.newBuilder().setImage(a))
                                                .build())
                                .getImage()
                                .getId())
                .isEqualTo(nginx.getId());
        assertThat(
                        img().imageStatus(
                                        ImageStatusRequest.newBuilder()
                                                .setImage(
                                                        ImageSpec.newBuilder()
                                                                .setImage(nginx.getId()))
                                                .build())
                                .getImage()
                                .getRepoTagsList())
                .containsExactly("docker.io/library/nginx:latest");
        assertThat(
                        img().listImages(
                                        ListImagesRequest.newBuilder()
                                                .setFilter(
                                                        ImageFilter.newBuilder()
                                                                .setImage(
                                                                        ImageSpec.newBuilder()
                                                                                .setImage(
                                                                                        "registry.example:5000/team/tool:v2")))
                                                .build())
                                .getImagesCount())
                .isEqualTo(1);

        ImageFsInfoResponse fs = img().imageFsInfo(ImageFsInfoRequest.getDefaultInstance());
        assertThat(fs.getImageFilesystems(0).getUsedBytes().getValue())
                .isEqualTo(images.stream().mapToLong(Image::getSize).sum());
        assertThat(fs.getImageFilesystems(0).getFsId().getMountpoint()).isNotEmpty();
        assertThat(fs.getContainerFilesystemsCount()).isEqualTo(1);

        img().removeImage(
                        RemoveImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                .build());
        assertThat(
                        img().imageStatus(
                                        ImageStatusRequest.newBuilder()
                                                .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                                .build())
                                .hasImage())
                .isFalse();
        img().removeImage(
                        RemoveImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage("nginx"))
                                .build());
        assertThat(img().listImages(ListImagesRequest.getDefaultInstance()).getImagesCount())
                .isEqualTo(1);

        assertThatThrownBy(
                        () ->
                                img().pullImage(
                                                PullImageRequest.newBuilder()
                                                        .setImage(
                                                                ImageSpec.newBuilder()
                                                                        .setImage("Not/Valid"))
                                                        .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription()).contains("Not/Valid");
                        });
    }

    @Test
    void bothApiVersionsShareOneState() {
        String v1Pod = runPod("shared", Map.of("v", "1"));
        var alpha = cri.runtimeServiceV1alpha2();
        List<io.cri4j.cri.v1alpha2.PodSandbox> seen =
                alpha.listPodSandbox(
                                io.cri4j.cri.v1alpha2.ListPodSandboxRequest.getDefaultInstance())
                        .getItemsList();
        assertThat(seen).extracting(io.cri4j.cri.v1alpha2.PodSandbox::getId).containsExactly(v1Pod);
        assertThat(seen.get(0).getLabelsMap()).containsEntry("v", "1");

        cri.imageServiceV1alpha2()
                .pullImage(
                        io.cri4j.cri.v1alpha2.PullImageRequest.newBuilder()
                                .setImage(
                                        io.cri4j.cri.v1alpha2.ImageSpec.newBuilder()
                                                .setImage("alpine:3.20"))
                                .build());
        String alphaContainer =
                alpha.createContainer(
                                io.cri4j.cri.v1alpha2.CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(v1Pod)
                                        .setConfig(
                                                io.cri4j.cri.v1alpha2.ContainerConfig.newBuilder()
                                                        .setMetadata(
                                                                io.cri4j.cri.v1alpha2
                                                                        .ContainerMetadata
                                                                        .newBuilder()
                                                                        .setName("a"))
                                                        .setImage(
                                                                io.cri4j.cri.v1alpha2.ImageSpec
                                                                        .newBuilder()
                                                                        .setImage("alpine:3.20")))
                                        .build())
                        .getContainerId();
        assertThat(status(alphaContainer).getImage().getImage())
                .isEqualTo("docker.io/library/alpine:3.20");
        StatusRuntimeException e =
                org.junit.jupiter.api.Assertions.assertThrows(
                        StatusRuntimeException.class,
                        () ->
                                alpha.containerStatus(
                                        io.cri4j.cri.v1alpha2.ContainerStatusRequest.newBuilder()
                                                .setContainerId("nope")
                                                .build()));
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    }
}
