package io.cri4j.testing.fake.internal;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.cri4j.cri.v1.*;
import io.cri4j.testing.fake.ExecContext;
import io.cri4j.testing.fake.ExecHandler;
import io.cri4j.testing.fake.ExecResult;
import io.cri4j.testing.fake.StreamingUrls;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.cri4j.testing.fake.internal.FakeState.SandboxRecord;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** The fake {@code runtime.v1.RuntimeService}; the v1alpha2 service is derived from it by {@link V1alpha2Bridge}. */
public final class FakeRuntimeService extends RuntimeServiceGrpc.RuntimeServiceImplBase {

    /** Settings of the fake runtime. */
    public record Settings(
            String runtimeName,
            String runtimeVersion,
            CgroupDriver cgroupDriver,
            ExecHandler execHandler,
            StreamingUrls streaming,
            Executor blockingExecutor,
            FakeNriHost hooks,
            FakeContainerProcesses processes) {

        /** Settings without container processes (containers run nothing). */
        public Settings(
                String runtimeName,
                String runtimeVersion,
                CgroupDriver cgroupDriver,
                ExecHandler execHandler,
                StreamingUrls streaming,
                Executor blockingExecutor,
                FakeNriHost hooks) {
            this(
                    runtimeName,
                    runtimeVersion,
                    cgroupDriver,
                    execHandler,
                    streaming,
                    blockingExecutor,
                    hooks,
                    null);
        }
    }

    static final int STREAM_CHUNK = 100;

    private final FakeState state;
    private final FakeStats stats;
    private final Settings settings;
    private final java.util.Set<ServerCallStreamObserver<ContainerEventResponse>> eventStreams =
            new java.util.HashSet<>();
    private boolean closed;

    public FakeRuntimeService(FakeState state, Settings settings) {
        this.state = state;
        this.stats = new FakeStats(state);
        this.settings = settings;
    }

    private static <T> void answer(StreamObserver<T> out, Supplier<T> body) {
        T response;
        try {
            response = body.get();
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        } catch (RuntimeException e) {
            out.onError(
                    Status.INTERNAL
                            .withDescription("fake runtime failed: " + e)
                            .withCause(e)
                            .asRuntimeException());
            return;
        }
        out.onNext(response);
        out.onCompleted();
    }

    /** Answers with the stage's value, or fails with the status its failure maps to. */
    private static <T> void answerLater(
            StreamObserver<T> out, Supplier<java.util.concurrent.CompletionStage<T>> body) {
        java.util.concurrent.CompletionStage<T> stage;
        try {
            stage = body.get();
        } catch (RuntimeException e) {
            out.onError(FakeNriHost.status(e).asRuntimeException());
            return;
        }
        stage.whenComplete(
                (v, t) -> {
                    if (t == null) {
                        out.onNext(v);
                        out.onCompleted();
                    } else {
                        out.onError(FakeNriHost.status(t).asRuntimeException());
                    }
                });
    }

    private static <T extends Message> void stream(StreamObserver<T> out, Supplier<List<T>> body) {
        List<T> messages;
        try {
            messages = body.get();
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        }
        messages.forEach(out::onNext);
        out.onCompleted();
    }

    private static <E, M> List<M> chunks(
            List<E> items, java.util.function.Function<List<E>, M> wrap) {
        List<M> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i += STREAM_CHUNK) {
            out.add(wrap.apply(items.subList(i, Math.min(items.size(), i + STREAM_CHUNK))));
        }
        return out;
    }

    private static <M> M withId(M request, String id, String field) {
        required(id, field);
        return request;
    }

    private static String required(String value, String field) {
        if (value.isEmpty()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(field + " must not be empty")
                    .asRuntimeException();
        }
        return value;
    }

    /**
     * containerd's checks of a container's mounts when it generates the OCI spec: a recursive
     * read-only mount must be read-only and of private propagation. containerd answers UNKNOWN with
     * these messages.
     */
    static void validateMounts(ContainerConfig config) {
        for (Mount m : config.getMountsList()) {
            if (!m.getRecursiveReadOnly()) {
                continue;
            }
            String problem;
            if (!m.getReadonly()) {
                problem =
                        "recursive read-only mount conflicts with read-write mount for hostPath \""
                                + m.getHostPath()
                                + "\"";
            } else if (m.getPropagation() != MountPropagation.PROPAGATION_PRIVATE) {
                problem =
                        "recursive read-only mount requires private propagation for hostPath \""
                                + m.getHostPath()
                                + "\", got: "
                                + m.getPropagation().name();
            } else {
                continue;
            }
            throw Status.UNKNOWN
                    .withDescription(
                            "failed to generate container \""
                                    + config.getMetadata().getName()
                                    + "\" spec: failed to generate spec: "
                                    + problem)
                    .asRuntimeException();
        }
    }

    // ------------------------------------------------------------------ runtime

    @Override
    public void version(VersionRequest request, StreamObserver<VersionResponse> out) {
        answer(
                out,
                () ->
                        VersionResponse.newBuilder()
                                .setVersion("0.1.0")
                                .setRuntimeName(settings.runtimeName())
                                .setRuntimeVersion(settings.runtimeVersion())
                                .setRuntimeApiVersion(ApiVersion.current())
                                .build());
    }

    @Override
    public void status(StatusRequest request, StreamObserver<StatusResponse> out) {
        answer(
                out,
                () -> {
                    StatusResponse.Builder b =
                            StatusResponse.newBuilder()
                                    .setStatus(
                                            RuntimeStatus.newBuilder()
                                                    .addConditions(
                                                            RuntimeCondition.newBuilder()
                                                                    .setType("RuntimeReady")
                                                                    .setStatus(true))
                                                    .addConditions(
                                                            RuntimeCondition.newBuilder()
                                                                    .setType("NetworkReady")
                                                                    .setStatus(true)))
                                    .addRuntimeHandlers(
                                            RuntimeHandler.newBuilder()
                                                    .setName("")
                                                    .setFeatures(
                                                            RuntimeHandlerFeatures.newBuilder()
                                                                    .setRecursiveReadOnlyMounts(
                                                                            true)))
                                    .addRuntimeHandlers(
                                            RuntimeHandler.newBuilder()
                                                    .setName("runc")
                                                    .setFeatures(
                                                            RuntimeHandlerFeatures.newBuilder()
                                                                    .setRecursiveReadOnlyMounts(
                                                                            true)))
                                    .setFeatures(
                                            RuntimeFeatures.newBuilder()
                                                    .setSupplementalGroupsPolicy(true));
                    if (request.getVerbose()) {
                        b.putInfo(
                                "config",
                                "{\"runtimeName\":\""
                                        + settings.runtimeName()
                                        + "\",\"podCIDR\":\""
                                        + state.podCidr()
                                        + "\",\"cgroupDriver\":\""
                                        + settings.cgroupDriver()
                                        + "\"}");
                    }
                    return b.build();
                });
    }

    @Override
    public void runtimeConfig(
            RuntimeConfigRequest request, StreamObserver<RuntimeConfigResponse> out) {
        answer(
                out,
                () ->
                        RuntimeConfigResponse.newBuilder()
                                .setLinux(
                                        LinuxRuntimeConfiguration.newBuilder()
                                                .setCgroupDriver(settings.cgroupDriver()))
                                .build());
    }

    @Override
    public void updateRuntimeConfig(
            UpdateRuntimeConfigRequest request, StreamObserver<UpdateRuntimeConfigResponse> out) {
        answer(
                out,
                () -> {
                    state.setPodCidr(request.getRuntimeConfig().getNetworkConfig().getPodCidr());
                    return UpdateRuntimeConfigResponse.getDefaultInstance();
                });
    }

    // ------------------------------------------------------------------ sandboxes

    @Override
    public void runPodSandbox(
            RunPodSandboxRequest request, StreamObserver<RunPodSandboxResponse> out) {
        if (settings.hooks() != null) {
            answerLater(out, () -> settings.hooks().runPodSandbox(request));
            return;
        }
        answer(
                out,
                () ->
                        RunPodSandboxResponse.newBuilder()
                                .setPodSandboxId(
                                        state.runPodSandbox(
                                                request.getConfig(), request.getRuntimeHandler()))
                                .build());
    }

    @Override
    public void stopPodSandbox(
            StopPodSandboxRequest request, StreamObserver<StopPodSandboxResponse> out) {
        if (!request.getPodSandboxId().isEmpty()
                && state.sandboxOrNull(request.getPodSandboxId()) == null) {
            // containerd: StopPodSandbox is idempotent, a sandbox that does not exist is stopped
            answer(out, StopPodSandboxResponse::getDefaultInstance);
            return;
        }
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .stopPodSandbox(
                                            required(request.getPodSandboxId(), "pod_sandbox_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.stopPodSandbox(required(request.getPodSandboxId(), "pod_sandbox_id"));
                    return StopPodSandboxResponse.getDefaultInstance();
                });
    }

    @Override
    public void removePodSandbox(
            RemovePodSandboxRequest request, StreamObserver<RemovePodSandboxResponse> out) {
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .removePodSandbox(
                                            required(request.getPodSandboxId(), "pod_sandbox_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.removePodSandbox(required(request.getPodSandboxId(), "pod_sandbox_id"));
                    return RemovePodSandboxResponse.getDefaultInstance();
                });
    }

    /** The pods without those whose RunPodSandbox hooks still run, as containerd lists them. */
    private List<io.cri4j.cri.v1.PodSandbox> visible(List<io.cri4j.cri.v1.PodSandbox> pods) {
        FakeNriHost hooks = settings.hooks();
        if (hooks == null) {
            return pods;
        }
        return pods.stream().filter(p -> !hooks.isPending(p.getId())).toList();
    }

    @Override
    public void podSandboxStatus(
            PodSandboxStatusRequest request, StreamObserver<PodSandboxStatusResponse> out) {
        answer(
                out,
                () -> {
                    String id = required(request.getPodSandboxId(), "pod_sandbox_id");
                    if (settings.hooks() != null && settings.hooks().isPending(id)) {
                        throw Status.NOT_FOUND
                                .withDescription(
                                        "an error occurred when try to find sandbox \""
                                                + id
                                                + "\": not found (its RunPodSandbox hooks are"
                                                + " still running)")
                                .asRuntimeException();
                    }
                    PodSandboxStatusResponse.Builder b =
                            PodSandboxStatusResponse.newBuilder()
                                    .setStatus(state.podSandboxStatus(id))
                                    .setTimestamp(state.now());
                    if (ApiVersion.current().equals("v1")) {
                        b.addAllContainersStatuses(state.containerStatusesOf(id));
                    }
                    if (request.getVerbose()) {
                        SandboxRecord s = state.sandbox(id);
                        b.putInfo(
                                "info",
                                "{\"pid\":"
                                        + s.pid
                                        + ",\"runtimeHandler\":\""
                                        + s.runtimeHandler
                                        + "\"}");
                    }
                    return b.build();
                });
    }

    @Override
    public void listPodSandbox(
            ListPodSandboxRequest request, StreamObserver<ListPodSandboxResponse> out) {
        answer(
                out,
                () ->
                        ListPodSandboxResponse.newBuilder()
                                .addAllItems(visible(state.listPodSandbox(request.getFilter())))
                                .build());
    }

    @Override
    public void streamPodSandboxes(
            StreamPodSandboxesRequest request, StreamObserver<StreamPodSandboxesResponse> out) {
        stream(
                out,
                () ->
                        chunks(
                                visible(state.listPodSandbox(request.getFilter())),
                                l ->
                                        StreamPodSandboxesResponse.newBuilder()
                                                .addAllPodSandboxes(l)
                                                .build()));
    }

    @Override
    public void updatePodSandboxResources(
            UpdatePodSandboxResourcesRequest request,
            StreamObserver<UpdatePodSandboxResourcesResponse> out) {
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .updatePodSandboxResources(
                                            withId(
                                                    request,
                                                    request.getPodSandboxId(),
                                                    "pod_sandbox_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.updatePodSandboxResources(
                            required(request.getPodSandboxId(), "pod_sandbox_id"),
                            request.getResources());
                    return UpdatePodSandboxResourcesResponse.getDefaultInstance();
                });
    }

    // ------------------------------------------------------------------ containers

    @Override
    public void createContainer(
            CreateContainerRequest request, StreamObserver<CreateContainerResponse> out) {
        try {
            validateMounts(request.getConfig());
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        }
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .createContainer(
                                            withId(
                                                    request,
                                                    request.getPodSandboxId(),
                                                    "pod_sandbox_id")));
            return;
        }
        answer(
                out,
                () ->
                        CreateContainerResponse.newBuilder()
                                .setContainerId(
                                        state.createContainer(
                                                required(
                                                        request.getPodSandboxId(),
                                                        "pod_sandbox_id"),
                                                request.getConfig(),
                                                request.getSandboxConfig()))
                                .build());
    }

    @Override
    public void startContainer(
            StartContainerRequest request, StreamObserver<StartContainerResponse> out) {
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .startContainer(
                                            required(request.getContainerId(), "container_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.startContainer(required(request.getContainerId(), "container_id"));
                    return StartContainerResponse.getDefaultInstance();
                });
    }

    @Override
    public void stopContainer(
            StopContainerRequest request, StreamObserver<StopContainerResponse> out) {
        if (!request.getContainerId().isEmpty()
                && state.containerOrNull(request.getContainerId()) == null) {
            // containerd: StopContainer is idempotent, a container that does not exist is stopped
            answer(out, StopContainerResponse::getDefaultInstance);
            return;
        }
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .stopContainer(
                                            required(request.getContainerId(), "container_id"),
                                            request.getTimeout()));
            return;
        }
        answer(
                out,
                () -> {
                    state.stopContainer(
                            required(request.getContainerId(), "container_id"),
                            request.getTimeout());
                    return StopContainerResponse.getDefaultInstance();
                });
    }

    @Override
    public void removeContainer(
            RemoveContainerRequest request, StreamObserver<RemoveContainerResponse> out) {
        if (settings.hooks() != null) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .removeContainer(
                                            required(request.getContainerId(), "container_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.removeContainer(required(request.getContainerId(), "container_id"));
                    return RemoveContainerResponse.getDefaultInstance();
                });
    }

    @Override
    public void listContainers(
            ListContainersRequest request, StreamObserver<ListContainersResponse> out) {
        answer(
                out,
                () ->
                        ListContainersResponse.newBuilder()
                                .addAllContainers(state.listContainers(request.getFilter()))
                                .build());
    }

    @Override
    public void streamContainers(
            StreamContainersRequest request, StreamObserver<StreamContainersResponse> out) {
        stream(
                out,
                () ->
                        chunks(
                                state.listContainers(request.getFilter()),
                                l ->
                                        StreamContainersResponse.newBuilder()
                                                .addAllContainers(l)
                                                .build()));
    }

    @Override
    public void containerStatus(
            ContainerStatusRequest request, StreamObserver<ContainerStatusResponse> out) {
        answer(
                out,
                () -> {
                    String id = required(request.getContainerId(), "container_id");
                    ContainerStatusResponse.Builder b =
                            ContainerStatusResponse.newBuilder()
                                    .setStatus(state.containerStatus(id));
                    if (request.getVerbose()) {
                        b.putInfo("info", state.containerInfo(id));
                    }
                    return b.build();
                });
    }

    @Override
    public void updateContainerResources(
            UpdateContainerResourcesRequest request,
            StreamObserver<UpdateContainerResourcesResponse> out) {
        if (settings.hooks() != null && request.hasLinux()) {
            answerLater(
                    out,
                    () ->
                            settings.hooks()
                                    .updateContainerResources(
                                            withId(
                                                    request,
                                                    request.getContainerId(),
                                                    "container_id")));
            return;
        }
        answer(
                out,
                () -> {
                    state.updateContainerResources(
                            required(request.getContainerId(), "container_id"),
                            request.hasLinux() ? request.getLinux() : null,
                            request.getAnnotationsMap());
                    return UpdateContainerResourcesResponse.getDefaultInstance();
                });
    }

    @Override
    public void reopenContainerLog(
            ReopenContainerLogRequest request, StreamObserver<ReopenContainerLogResponse> out) {
        answer(
                out,
                () -> {
                    String id = required(request.getContainerId(), "container_id");
                    state.reopenContainerLog(id);
                    if (settings.processes() != null) {
                        try {
                            settings.processes().reopenLog(id);
                        } catch (java.io.IOException e) {
                            throw Status.UNKNOWN
                                    .withDescription(
                                            "failed to reopen container log \""
                                                    + id
                                                    + "\": "
                                                    + e.getMessage())
                                    .asRuntimeException();
                        }
                    }
                    return ReopenContainerLogResponse.getDefaultInstance();
                });
    }

    @Override
    public void getContainerEvents(
            GetEventsRequest request, StreamObserver<ContainerEventResponse> out) {
        ServerCallStreamObserver<ContainerEventResponse> call =
                (ServerCallStreamObserver<ContainerEventResponse>) out;
        synchronized (eventStreams) {
            if (closed) {
                call.onError(
                        Status.UNAVAILABLE
                                .withDescription("fake CRI server is shutting down")
                                .asRuntimeException());
                return;
            }
            eventStreams.add(call);
        }
        AutoCloseable subscription =
                state.subscribeStream(
                        event -> {
                            synchronized (eventStreams) {
                                if (eventStreams.contains(call) && !call.isCancelled()) {
                                    call.onNext(event);
                                }
                            }
                        });
        call.setOnCancelHandler(
                () -> {
                    synchronized (eventStreams) {
                        eventStreams.remove(call);
                    }
                    closeQuietly(subscription);
                });
        call.setOnCloseHandler(() -> closeQuietly(subscription));
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // removing a listener does not fail
        }
    }

    /** Ends every open GetContainerEvents stream (OK status) and refuses new ones; for shutdown. */
    public void completeEventStreams() {
        synchronized (eventStreams) {
            closed = true;
            for (ServerCallStreamObserver<ContainerEventResponse> call : eventStreams) {
                try {
                    call.onCompleted();
                } catch (RuntimeException ignored) {
                    // the call was cancelled concurrently
                }
            }
            eventStreams.clear();
        }
    }

    // ------------------------------------------------------------------ exec and streams

    @Override
    public void execSync(ExecSyncRequest request, StreamObserver<ExecSyncResponse> out) {
        ExecContext context;
        try {
            String id = required(request.getContainerId(), "container_id");
            if (request.getCmdCount() == 0) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("cmd must not be empty")
                        .asRuntimeException();
            }
            ContainerRecord c = state.runningContainer(id);
            context =
                    new ExecContext(
                            id,
                            c.sandboxId,
                            request.getCmdList(),
                            c.env(),
                            c.config.getWorkingDir(),
                            Duration.ofSeconds(Math.max(0, request.getTimeout())));
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        }
        Context grpcContext = Context.current();
        try {
            settings.blockingExecutor().execute(grpcContext.wrap(() -> runExec(context, out)));
        } catch (RejectedExecutionException e) {
            out.onError(
                    Status.UNAVAILABLE
                            .withDescription("fake runtime is shutting down")
                            .asRuntimeException());
        }
    }

    private void runExec(ExecContext context, StreamObserver<ExecSyncResponse> out) {
        // a client that gives up (deadline, cancel) interrupts the handler, which kills the host
        // process
        Thread worker = Thread.currentThread();
        Object guard = new Object();
        boolean[] running = {true};
        Context.CancellationListener onCancel =
                ctx -> {
                    synchronized (guard) {
                        if (running[0]) {
                            worker.interrupt();
                        }
                    }
                };
        Context.current().addListener(onCancel, Runnable::run);
        ExecResult result;
        try {
            result = settings.execHandler().execSync(context);
        } catch (TimeoutException e) {
            out.onError(
                    Status.DEADLINE_EXCEEDED
                            .withDescription("failed to exec in container: " + e.getMessage())
                            .asRuntimeException());
            return;
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.onError(Status.CANCELLED.withDescription("exec interrupted").asRuntimeException());
            return;
        } catch (Exception e) {
            out.onError(
                    Status.UNKNOWN
                            .withDescription("failed to exec in container: " + e.getMessage())
                            .asRuntimeException());
            return;
        } finally {
            Context.current().removeListener(onCancel);
            synchronized (guard) {
                running[0] = false;
                Thread.interrupted();
            }
        }
        out.onNext(
                ExecSyncResponse.newBuilder()
                        .setExitCode(result.exitCode())
                        .setStdout(ByteString.copyFrom(result.stdout()))
                        .setStderr(ByteString.copyFrom(result.stderr()))
                        .build());
        out.onCompleted();
    }

    @Override
    public void exec(ExecRequest request, StreamObserver<ExecResponse> out) {
        answer(
                out,
                () -> {
                    state.runningContainer(required(request.getContainerId(), "container_id"));
                    if (request.getCmdCount() == 0) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("cmd must not be empty")
                                .asRuntimeException();
                    }
                    if (!request.getStdin() && !request.getStdout() && !request.getStderr()) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("one of stdin, stdout, or stderr must be set")
                                .asRuntimeException();
                    }
                    return ExecResponse.newBuilder()
                            .setUrl(settings.streaming().exec(request))
                            .build();
                });
    }

    @Override
    public void attach(AttachRequest request, StreamObserver<AttachResponse> out) {
        answer(
                out,
                () -> {
                    state.runningContainer(required(request.getContainerId(), "container_id"));
                    if (!request.getStdin() && !request.getStdout() && !request.getStderr()) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("one of stdin, stdout, or stderr must be set")
                                .asRuntimeException();
                    }
                    return AttachResponse.newBuilder()
                            .setUrl(settings.streaming().attach(request))
                            .build();
                });
    }

    @Override
    public void portForward(PortForwardRequest request, StreamObserver<PortForwardResponse> out) {
        answer(
                out,
                () -> {
                    SandboxRecord s =
                            state.sandbox(required(request.getPodSandboxId(), "pod_sandbox_id"));
                    if (!s.ready()) {
                        throw Status.FAILED_PRECONDITION
                                .withDescription("sandbox \"" + s.id + "\" is not running")
                                .asRuntimeException();
                    }
                    return PortForwardResponse.newBuilder()
                            .setUrl(settings.streaming().portForward(request))
                            .build();
                });
    }

    // ------------------------------------------------------------------ stats and metrics

    @Override
    public void containerStats(
            ContainerStatsRequest request, StreamObserver<ContainerStatsResponse> out) {
        answer(
                out,
                () ->
                        ContainerStatsResponse.newBuilder()
                                .setStats(
                                        stats.containerStats(
                                                state.container(
                                                        required(
                                                                request.getContainerId(),
                                                                "container_id"))))
                                .build());
    }

    private List<ContainerStats> containerStats(ContainerStatsFilter filter) {
        List<ContainerStats> out = new ArrayList<>();
        for (ContainerRecord c : state.containers()) {
            if (!filter.getId().isEmpty() && !c.id.startsWith(filter.getId())) {
                continue;
            }
            if (!filter.getPodSandboxId().isEmpty()
                    && !c.sandboxId.startsWith(filter.getPodSandboxId())) {
                continue;
            }
            if (!filter.getLabelSelectorMap().entrySet().stream()
                    .allMatch(e -> e.getValue().equals(c.config.getLabelsMap().get(e.getKey())))) {
                continue;
            }
            out.add(stats.containerStats(c));
        }
        return out;
    }

    @Override
    public void listContainerStats(
            ListContainerStatsRequest request, StreamObserver<ListContainerStatsResponse> out) {
        answer(
                out,
                () ->
                        ListContainerStatsResponse.newBuilder()
                                .addAllStats(containerStats(request.getFilter()))
                                .build());
    }

    @Override
    public void streamContainerStats(
            StreamContainerStatsRequest request, StreamObserver<StreamContainerStatsResponse> out) {
        stream(
                out,
                () ->
                        chunks(
                                containerStats(request.getFilter()),
                                l ->
                                        StreamContainerStatsResponse.newBuilder()
                                                .addAllContainerStats(l)
                                                .build()));
    }

    @Override
    public void podSandboxStats(
            PodSandboxStatsRequest request, StreamObserver<PodSandboxStatsResponse> out) {
        answer(
                out,
                () -> {
                    SandboxRecord s =
                            state.sandbox(required(request.getPodSandboxId(), "pod_sandbox_id"));
                    return PodSandboxStatsResponse.newBuilder()
                            .setStats(stats.podSandboxStats(s, state.containersOf(s.id)))
                            .build();
                });
    }

    private List<PodSandboxStats> sandboxStats(PodSandboxStatsFilter filter) {
        List<PodSandboxStats> out = new ArrayList<>();
        for (SandboxRecord s : state.sandboxes()) {
            if (!filter.getId().isEmpty() && !s.id.startsWith(filter.getId())) {
                continue;
            }
            if (!filter.getLabelSelectorMap().entrySet().stream()
                    .allMatch(e -> e.getValue().equals(s.config.getLabelsMap().get(e.getKey())))) {
                continue;
            }
            out.add(stats.podSandboxStats(s, state.containersOf(s.id)));
        }
        return out;
    }

    @Override
    public void listPodSandboxStats(
            ListPodSandboxStatsRequest request, StreamObserver<ListPodSandboxStatsResponse> out) {
        answer(
                out,
                () ->
                        ListPodSandboxStatsResponse.newBuilder()
                                .addAllStats(sandboxStats(request.getFilter()))
                                .build());
    }

    @Override
    public void streamPodSandboxStats(
            StreamPodSandboxStatsRequest request,
            StreamObserver<StreamPodSandboxStatsResponse> out) {
        stream(
                out,
                () ->
                        chunks(
                                sandboxStats(request.getFilter()),
                                l ->
                                        StreamPodSandboxStatsResponse.newBuilder()
                                                .addAllPodSandboxStats(l)
                                                .build()));
    }

    @Override
    public void listMetricDescriptors(
            ListMetricDescriptorsRequest request,
            StreamObserver<ListMetricDescriptorsResponse> out) {
        answer(
                out,
                () ->
                        ListMetricDescriptorsResponse.newBuilder()
                                .addAllDescriptors(FakeStats.descriptors())
                                .build());
    }

    private List<PodSandboxMetrics> metrics() {
        List<PodSandboxMetrics> out = new ArrayList<>();
        for (SandboxRecord s : state.sandboxes()) {
            out.add(stats.podSandboxMetrics(s, state.containersOf(s.id)));
        }
        return out;
    }

    @Override
    public void listPodSandboxMetrics(
            ListPodSandboxMetricsRequest request,
            StreamObserver<ListPodSandboxMetricsResponse> out) {
        answer(
                out,
                () ->
                        ListPodSandboxMetricsResponse.newBuilder()
                                .addAllPodMetrics(metrics())
                                .build());
    }

    @Override
    public void streamPodSandboxMetrics(
            StreamPodSandboxMetricsRequest request,
            StreamObserver<StreamPodSandboxMetricsResponse> out) {
        stream(
                out,
                () ->
                        chunks(
                                metrics(),
                                l ->
                                        StreamPodSandboxMetricsResponse.newBuilder()
                                                .addAllPodSandboxMetrics(l)
                                                .build()));
    }

    // ------------------------------------------------------------------ checkpointing: not
    // modelled

    private static StatusRuntimeException notModelled(String rpc) {
        return Status.UNIMPLEMENTED
                .withDescription(
                        rpc
                                + " is not supported by the fake CRI runtime "
                                + "(checkpoint/restore is not modelled)")
                .asRuntimeException();
    }

    @Override
    public void checkpointContainer(
            CheckpointContainerRequest request, StreamObserver<CheckpointContainerResponse> out) {
        answer(
                out,
                () -> {
                    state.container(required(request.getContainerId(), "container_id"));
                    throw notModelled("CheckpointContainer");
                });
    }

    @Override
    public void checkpointPod(
            CheckpointPodRequest request, StreamObserver<CheckpointPodResponse> out) {
        answer(
                out,
                () -> {
                    throw notModelled("CheckpointPod");
                });
    }

    @Override
    public void restorePod(RestorePodRequest request, StreamObserver<RestorePodResponse> out) {
        answer(
                out,
                () -> {
                    throw notModelled("RestorePod");
                });
    }
}
