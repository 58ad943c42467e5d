package io.cri4j.hook.koordinator;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.internal.UnaryCalls;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc;
import io.cri4j.hook.internal.Koordinator;
import io.cri4j.hook.internal.Tracing;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxContainer;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.MetadataUtils;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Koordinator hook server (koordlet, or anything serving {@code runtime.v1alpha1
 * .RuntimeHookService} on a unix socket) as a hook of cri4j's model: an {@link AsyncHook} called
 * at the events of the points its {@link HookConfig} lists ({@link HookPoint#event()}), sending
 * the pod and container as Koordinator's messages and turning the answers into adjustments
 * (the table is in proxy-core's README): at {@code PreRunPodSandbox} a {@link
 * PodSandboxAdjustment} (labels, annotations, cgroup parent, resources), at {@code
 * PreCreateContainer} a container adjustment (annotations, environment, resources, {@code
 * oom_score_adj}), at {@code PreUpdateContainerResources} an update of the container's
 * resources. A field the server answers unchanged (as koordlet echoes the request) is not an
 * adjustment. Parts of an answer NRI's model cannot carry (a changed {@code pod_cgroup_parent},
 * annotations at an update, ...) fail the event naming the field under {@link
 * FailurePolicy#FAIL} and are dropped with a warning under {@link FailurePolicy#IGNORE}.
 * Answers at the other points are not used.
 *
 * <p>Policy from the config: its {@code index}, {@code timeout} and {@code failure-policy}; every
 * call has the timeout as its gRPC deadline. Never blocks: answers complete on the channel's
 * transport thread. Owns a channel (connected lazily): close it.
 *
 * <p>Called by a {@link HookChain} that records spans ({@link HookChain.Builder#openTelemetry}),
 * every call carries the hook's span as W3C trace context in the gRPC metadata ({@code
 * traceparent}, {@code tracestate}), so the hook server's own traces join the CRI call's.
 */
public final class RemoteRuntimeHook implements AsyncHook, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteRuntimeHook.class);

    private final HookConfig config;
    private final HookPolicy policy;
    private final Set<HookEvent> events;
    private final ManagedChannel channel;

    /** Holds of a {@link HookConfigDirectory}'s generations; null: owned by the caller. */
    private final AtomicInteger holds;

    /** Connects lazily to {@code config.remoteEndpoint()}. */
    public RemoteRuntimeHook(HookConfig config) {
        this(config, false);
    }

    /** @param held whether the channel closes when the last hold is released */
    RemoteRuntimeHook(HookConfig config, boolean held) {
        this.config = config;
        this.policy = new HookPolicy(config.index(), config.timeout(), config.failurePolicy());
        Set<HookEvent> e = EnumSet.noneOf(HookEvent.class);
        config.points().forEach(p -> e.add(p.event()));
        this.events = Set.copyOf(e);
        this.channel = CriChannels.newChannel(CriEndpoint.parse(config.remoteEndpoint()));
        this.holds = held ? new AtomicInteger() : null;
    }

    /** One more generation of the config directory has this hook. */
    void retain() {
        if (holds != null) {
            holds.incrementAndGet();
        }
    }

    /**
     * A generation that had this hook is done with it: the last one shuts the channel down
     * (gracefully: a call still on it ends by itself).
     */
    void release() {
        if (holds != null && holds.decrementAndGet() == 0) {
            channel.shutdown();
        }
    }

    /** The config this hook was made from. */
    public HookConfig config() {
        return config;
    }

    /** The config file's name. */
    @Override
    public String name() {
        return config.name();
    }

    /** The config's index, timeout and failure policy. */
    @Override
    public HookPolicy policy() {
        return policy;
    }

    /** The events of the config's points. */
    @Override
    public Set<HookEvent> events() {
        return events;
    }

    // ---------------------------------------------------------------- pod events

    @Override
    public CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox pod) {
        PodSandboxHookRequest request = Koordinator.podRequest(pod);
        if (!config.points().contains(HookPoint.PRE_RUN_POD_SANDBOX)) {
            return CompletableFuture.completedFuture(PodSandboxAdjustment.NONE);
        }
        return this.<PodSandboxHookRequest, PodSandboxHookResponse>call(
                        HookPoint.PRE_RUN_POD_SANDBOX, request)
                .thenApply(
                        r ->
                                accept(
                                        HookPoint.PRE_RUN_POD_SANDBOX,
                                        Koordinator.podAdjustment(request, r)));
    }

    @Override
    public CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
        return notifyPod(pod, HookPoint.PRE_STOP_POD_SANDBOX, HookPoint.POST_STOP_POD_SANDBOX);
    }

    @Override
    public CompletionStage<Void> removePodSandbox(PodSandbox pod) {
        return notifyPod(pod, HookPoint.PRE_REMOVE_POD_SANDBOX);
    }

    // ---------------------------------------------------------------- container events

    @Override
    public CompletionStage<HookResult> createContainer(PodSandbox pod, Container container) {
        if (!config.points().contains(HookPoint.PRE_CREATE_CONTAINER)) {
            return CompletableFuture.completedFuture(HookResult.none());
        }
        ContainerResourceHookRequest request = Koordinator.containerRequest(pod, container, false);
        return this.<ContainerResourceHookRequest, ContainerResourceHookResponse>call(
                        HookPoint.PRE_CREATE_CONTAINER, request)
                .thenApply(
                        r ->
                                HookResult.adjust(
                                        accept(
                                                HookPoint.PRE_CREATE_CONTAINER,
                                                Koordinator.containerAdjustment(request, r))));
    }

    @Override
    public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container container) {
        return notifyContainer(pod, container, HookPoint.POST_CREATE_CONTAINER);
    }

    @Override
    public CompletionStage<Void> startContainer(PodSandbox pod, Container container) {
        return notifyContainer(pod, container, HookPoint.PRE_START_CONTAINER);
    }

    @Override
    public CompletionStage<Void> postStartContainer(PodSandbox pod, Container container) {
        return notifyContainer(pod, container, HookPoint.POST_START_CONTAINER);
    }

    /** Sends the container with {@code resources} as its resources. */
    @Override
    public CompletionStage<HookResult> updateContainer(
            PodSandbox pod, Container container, LinuxResources resources) {
        if (!config.points().contains(HookPoint.PRE_UPDATE_CONTAINER_RESOURCES)) {
            return CompletableFuture.completedFuture(HookResult.none());
        }
        LinuxContainer.Builder l = container.getLinux().toBuilder().setResources(resources);
        ContainerResourceHookRequest request =
                Koordinator.containerRequest(pod, container.toBuilder().setLinux(l).build(), true);
        return this.<ContainerResourceHookRequest, ContainerResourceHookResponse>call(
                        HookPoint.PRE_UPDATE_CONTAINER_RESOURCES, request)
                .thenApply(
                        r -> {
                            LinuxResources changed =
                                    accept(
                                            HookPoint.PRE_UPDATE_CONTAINER_RESOURCES,
                                            Koordinator.resourceUpdate(request, r));
                            return changed.equals(LinuxResources.getDefaultInstance())
                                    ? HookResult.none()
                                    : HookResult.update(
                                            List.of(
                                                    ContainerUpdate.newBuilder()
                                                            .setContainerId(container.getId())
                                                            .setLinux(
                                                                    LinuxContainerUpdate
                                                                            .newBuilder()
                                                                            .setResources(changed))
                                                            .build()));
                        });
    }

    @Override
    public CompletionStage<Void> postUpdateContainer(PodSandbox pod, Container container) {
        return notifyContainer(pod, container, HookPoint.POST_UPDATE_CONTAINER_RESOURCES);
    }

    @Override
    public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container container) {
        return notifyContainer(
                        pod, container, HookPoint.PRE_STOP_CONTAINER, HookPoint.POST_STOP_CONTAINER)
                .thenApply(v -> HookResult.none());
    }

    @Override
    public CompletionStage<Void> removeContainer(PodSandbox pod, Container container) {
        return notifyContainer(pod, container, HookPoint.PRE_REMOVE_CONTAINER);
    }

    /** The channel's lifetime is the config directory's (or {@link #close()}'s) to end. */
    @Override
    public void shutdown() {}

    // ---------------------------------------------------------------- calls

    /**
     * What NRI's model can carry of an answer; the rest fails the call under Fail, or is logged as
     * dropped under Ignore.
     */
    private <T> T accept(HookPoint point, Koordinator.Answer<T> answer) {
        if (!answer.unsupported().isEmpty()) {
            String what = String.join(", ", answer.unsupported());
            if (config.failurePolicy() == FailurePolicy.FAIL) {
                throw new IllegalArgumentException(
                        point.rpcName() + " answered what NRI's model cannot carry: " + what);
            }
            LOG.warn(
                    "hook {} at {}: dropped what NRI's model cannot carry (failure-policy Ignore):"
                            + " {}",
                    config.name(),
                    point.rpcName(),
                    what);
        }
        return answer.value();
    }

    private CompletionStage<Void> notifyPod(PodSandbox pod, HookPoint... points) {
        return notifyAll(points, p -> Koordinator.podRequest(pod));
    }

    private CompletionStage<Void> notifyContainer(
            PodSandbox pod, Container c, HookPoint... points) {
        return notifyAll(points, p -> Koordinator.containerRequest(pod, c, true));
    }

    /** Calls the configured ones of {@code points}, one after the other; answers are not used. */
    private CompletionStage<Void> notifyAll(HookPoint[] points, Function<HookPoint, Object> req) {
        List<HookPoint> todo = new ArrayList<>();
        for (HookPoint p : points) {
            if (config.points().contains(p)) {
                todo.add(p);
            }
        }
        CompletableFuture<Void> seq = CompletableFuture.completedFuture(null);
        Metadata trace = Tracing.TRACE_HEADERS.get(); // later calls complete on other threads
        for (HookPoint p : todo) {
            seq = seq.thenCompose(x -> call(p, req.apply(p), trace).thenApply(r -> null));
        }
        return seq;
    }

    /**
     * Sends {@code request}; the answer completes the future on the transport thread (no
     * executor hop). Cancelling the future cancels the call.
     */
    private <Q, R> CompletableFuture<R> call(HookPoint point, Q request) {
        return call(point, request, Tracing.TRACE_HEADERS.get());
    }

    /** {@link #call(HookPoint, Object)} with the W3C trace context of a traced hook call. */
    private <Q, R> CompletableFuture<R> call(HookPoint point, Q request, Metadata trace) {
        Channel ch =
                trace == null
                        ? channel
                        : ClientInterceptors.intercept(
                                channel, MetadataUtils.newAttachHeadersInterceptor(trace));
        ClientCall<Q, R> call =
                ch.newCall(
                        method(point),
                        CallOptions.DEFAULT
                                .withDeadlineAfter(config.timeout().toNanos(), TimeUnit.NANOSECONDS)
                                .withExecutor(Runnable::run));
        return UnaryCalls.start(call, request, "hook server", point.rpcName());
    }

    @SuppressWarnings("unchecked")
    static <Q, R> MethodDescriptor<Q, R> method(HookPoint point) {
        ServiceDescriptor svc =
                point.isKoordinator()
                        ? RuntimeHookServiceGrpc.getServiceDescriptor()
                        : ExtendedRuntimeHookServiceGrpc.getServiceDescriptor();
        for (MethodDescriptor<?, ?> m : svc.getMethods()) {
            if (m.getBareMethodName().equals(point.rpcName())) {
                return (MethodDescriptor<Q, R>) m;
            }
        }
        throw new IllegalStateException("no RPC for hook point " + point);
    }

    /** Whether the channel was shut down (for tests). */
    boolean isShutdown() {
        return channel.isShutdown();
    }

    /** Closes the channel; idempotent. */
    @Override
    public void close() {
        channel.shutdownNow();
    }

    @Override
    public String toString() {
        return "RemoteRuntimeHook[" + config.name() + " at " + config.remoteEndpoint() + "]";
    }
}
