package io.cri4j.hook.koordinator;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.UnsupportedAdjustment;
import io.cri4j.hook.internal.Koordinator;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves cri4j hooks ({@link Hook}s and {@link AsyncHook}s) to Koordinator's Go runtime proxy:
 * Koordinator's {@code runtime.v1alpha1.RuntimeHookService} (and cri4j's {@code
 * ExtendedRuntimeHookService}) on a unix socket. The hooks run as a {@link HookChain} (index
 * order, timeouts, each hook's failure policy, NRI's merge and conflict rules); each point runs
 * its {@link HookPoint#event()}, with the pod and container built from Koordinator's request:
 *
 * <ul>
 *   <li>{@code PreRunPodSandbox}: {@code adjustPodSandbox}, answered as labels, annotations,
 *       cgroup parent and resources, then {@code runPodSandbox} with the adjusted pod;</li>
 *   <li>{@code PreCreateContainer}: {@code createContainer}, answered as annotations, {@code
 *       container_envs}, resources and {@code oom_score_adj};</li>
 *   <li>{@code PreUpdateContainerResources}: {@code updateContainer}, answered with the update
 *       of that container's resources;</li>
 *   <li>the other points run their event and answer empty; {@code PreStopContainer} and {@code
 *       PreStopPodSandbox} answer empty without an event (NRI's stop events come after the stop,
 *       served at the {@code PostStop} points).</li>
 * </ul>
 *
 * <p>At a pre point a hook failure (under the hook's {@link FailurePolicy#FAIL}), a conflict or
 * a timeout fails the RPC with {@code INTERNAL} naming the hook, and the calling proxy applies
 * its own failure policy; at a post point it is logged and the answer is empty. What the hooks
 * answer that Koordinator's protocol cannot carry (mounts, devices, removals, OCI hooks, ...)
 * fails the RPC naming hook and field under the hook's {@code FAIL} and is logged as dropped
 * under {@code IGNORE}; updates of other containers and evictions are logged as dropped. Owns
 * the server socket and the chain's threads: close it.
 */
public final class HookServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HookServer.class);
    private static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(5);

    private final Path socket;
    private final HookChain chain;
    private final CriServer server;
    private boolean closed;

    private HookServer(Path socket, Collection<?> hooks) throws IOException {
        this.socket = socket;
        this.chain = HookChain.builder().name("hook-server").addAll(hooks).build();
        try {
            register();
            CriServer.Builder sb = CriServer.builder(CriEndpoint.unix(socket));
            sb.addService(bind(RuntimeHookServiceGrpc.getServiceDescriptor()));
            sb.addService(bind(ExtendedRuntimeHookServiceGrpc.getServiceDescriptor()));
            this.server = sb.build().start();
        } catch (IOException | RuntimeException e) {
            chain.close();
            throw e;
        }
    }

    /**
     * Starts serving {@code hooks} ({@link Hook}s and {@link AsyncHook}s) on the unix socket
     * {@code socket}, after configuring them (Koordinator's protocol has no runtime state to
     * synchronize: they are synchronized with none).
     *
     * @throws IllegalStateException when a hook under {@link FailurePolicy#FAIL} cannot be
     *     configured
     */
    public static HookServer start(Path socket, Collection<?> hooks) throws IOException {
        Objects.requireNonNull(socket, "socket");
        if (hooks.isEmpty()) {
            throw new IllegalArgumentException("no hooks to serve");
        }
        return new HookServer(socket, List.copyOf(hooks));
    }

    private void register() {
        HookConfiguration c =
                new HookConfiguration(
                        "",
                        "koordinator-runtime-proxy",
                        "",
                        REGISTRATION_TIMEOUT,
                        REGISTRATION_TIMEOUT,
                        (updates, evictions) ->
                                CompletableFuture.failedFuture(
                                        new UnsupportedOperationException(
                                                "Koordinator's protocol has no way to update or evict containers")));
        try {
            chain.configure(c)
                    .toCompletableFuture()
                    .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
            chain.synchronize(List.of(), List.of())
                    .toCompletableFuture()
                    .get(REGISTRATION_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(
                    "hook server: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "hook server: hooks not configured within " + REGISTRATION_TIMEOUT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while configuring the hooks", e);
        }
    }

    /** The socket served on. */
    public Path socket() {
        return socket;
    }

    // ---------------------------------------------------------------- points

    private CompletionStage<PodSandboxHookResponse> pod(HookPoint point, PodSandboxHookRequest r) {
        PodSandbox pod = Koordinator.pod(r);
        return switch (point) {
            case PRE_RUN_POD_SANDBOX ->
                    chain.adjustPodSandbox(pod)
                            .thenCompose(
                                    a ->
                                            chain.runPodSandbox(adjusted(pod, a))
                                                    .thenApply(v -> Koordinator.podResponse(a)));
            case PRE_STOP_POD_SANDBOX -> empty(PodSandboxHookResponse.getDefaultInstance());
            case POST_STOP_POD_SANDBOX ->
                    notified(
                            point,
                            chain.stopPodSandbox(pod),
                            PodSandboxHookResponse.getDefaultInstance());
            case PRE_REMOVE_POD_SANDBOX ->
                    chain.removePodSandbox(pod)
                            .thenApply(v -> PodSandboxHookResponse.getDefaultInstance());
            default -> throw new IllegalStateException("not a pod point: " + point);
        };
    }

    private static PodSandbox adjusted(PodSandbox pod, PodSandboxAdjustment a) {
        PodSandbox.Builder b =
                pod.toBuilder().putAllLabels(a.labels()).putAllAnnotations(a.annotations());
        if (!a.cgroupParent().isEmpty()) {
            b.getLinuxBuilder().setCgroupParent(a.cgroupParent());
        }
        return b.build();
    }

    private CompletionStage<ContainerResourceHookResponse> container(
            HookPoint point, ContainerResourceHookRequest r) {
        PodSandbox pod = Koordinator.pod(r);
        Container c = Koordinator.container(r);
        ContainerResourceHookResponse none = ContainerResourceHookResponse.getDefaultInstance();
        return switch (point) {
            case PRE_CREATE_CONTAINER ->
                    chain.createContainerDetailed(pod, c)
                            .thenApply(
                                    created -> {
                                        dropped(point, created.result());
                                        return CriAdjuster.enforce(
                                                Koordinator.containerResponse(created),
                                                HookEvent.CREATE_CONTAINER,
                                                chain::policyOf);
                                    });
            case PRE_UPDATE_CONTAINER_RESOURCES ->
                    chain.updateContainer(pod, c, c.getLinux().getResources())
                            .thenApply(
                                    result -> {
                                        Adjusted<ContainerResourceHookResponse> a =
                                                Koordinator.updateResponse(result, c.getId());
                                        warnDropped(point, a.unsupported());
                                        return a.value();
                                    });
            case PRE_STOP_CONTAINER -> empty(none);
            case POST_STOP_CONTAINER ->
                    notified(
                            point,
                            chain.stopContainer(pod, c)
                                    .thenAccept(result -> dropped(point, result)),
                            none);
            case PRE_START_CONTAINER -> chain.startContainer(pod, c).thenApply(v -> none);
            case POST_START_CONTAINER -> notified(point, chain.postStartContainer(pod, c), none);
            case POST_CREATE_CONTAINER -> notified(point, chain.postCreateContainer(pod, c), none);
            case POST_UPDATE_CONTAINER_RESOURCES ->
                    notified(point, chain.postUpdateContainer(pod, c), none);
            case PRE_REMOVE_CONTAINER -> chain.removeContainer(pod, c).thenApply(v -> none);
            default -> throw new IllegalStateException("not a container point: " + point);
        };
    }

    /** Updates of other containers and evictions: Koordinator's protocol has no place for them. */
    private static void dropped(HookPoint point, HookResult result) {
        if (!result.updates().isEmpty() || !result.evictions().isEmpty()) {
            LOG.warn(
                    "{}: dropped {} container update(s) and {} eviction(s) the hooks asked for"
                            + " (Koordinator's protocol has no place for them)",
                    point.rpcName(),
                    result.updates().size(),
                    result.evictions().size());
        }
    }

    private static void warnDropped(HookPoint point, List<UnsupportedAdjustment> unsupported) {
        if (!unsupported.isEmpty()) {
            LOG.warn(
                    "{}: dropped what Koordinator's protocol cannot carry: {}",
                    point.rpcName(),
                    String.join(
                            ", ",
                            unsupported.stream().map(UnsupportedAdjustment::describe).toList()));
        }
    }

    private static <T> CompletionStage<T> empty(T none) {
        return CompletableFuture.completedFuture(none);
    }

    /** A post point: the event's failure is logged, the answer is empty. */
    private static <T> CompletionStage<T> notified(
            HookPoint point, CompletionStage<?> event, T none) {
        return event.handle(
                (v, t) -> {
                    if (t != null) {
                        LOG.warn(
                                "{}: {} (post point: answered empty)", point.rpcName(), message(t));
                    }
                    return none;
                });
    }

    // ---------------------------------------------------------------- serving

    @SuppressWarnings("unchecked")
    private ServerServiceDefinition bind(ServiceDescriptor svc) {
        ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(svc);
        for (MethodDescriptor<?, ?> m : svc.getMethods()) {
            String rpc = m.getBareMethodName();
            HookPoint point =
                    Arrays.stream(HookPoint.values())
                            .filter(p -> p.rpcName().equals(rpc))
                            .findFirst()
                            .orElseThrow();
            if (point.kind() == HookPoint.Kind.POD) {
                b.addMethod(
                        (MethodDescriptor<PodSandboxHookRequest, PodSandboxHookResponse>) m,
                        ServerCalls.asyncUnaryCall(
                                (req, obs) -> answer(obs, point, p -> pod(p, req))));
            } else {
                b.addMethod(
                        (MethodDescriptor<
                                        ContainerResourceHookRequest,
                                        ContainerResourceHookResponse>)
                                m,
                        ServerCalls.asyncUnaryCall(
                                (req, obs) -> answer(obs, point, p -> container(p, req))));
            }
        }
        return b.build();
    }

    private static <R> void answer(
            StreamObserver<R> obs, HookPoint point, Function<HookPoint, CompletionStage<R>> run) {
        CompletionStage<R> stage;
        try {
            stage = run.apply(point);
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        stage.whenComplete(
                (r, t) -> {
                    if (t == null) {
                        obs.onNext(r);
                        obs.onCompleted();
                    } else {
                        obs.onError(
                                Status.INTERNAL.withDescription(message(t)).asRuntimeException());
                    }
                });
    }

    private static String message(Throwable t) {
        Throwable c = t;
        while ((c instanceof CompletionException || c instanceof ExecutionException)
                && c.getCause() != null) {
            c = c.getCause();
        }
        return c.getMessage() == null ? c.toString() : c.getMessage();
    }

    /** Stops serving, removes the socket and shuts the hooks down; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        server.close();
        chain.close();
    }
}
