package io.cri4j.proxy.internal.hooks;

import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerEventType;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStateValue;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListContainersResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.host.LifecycleHost;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exits the backend reports, for containers whose process ends by itself: NRI plugins hear
 * {@code StopContainer} for them as they do on containerd 2.x. Follows the backend's {@code
 * GetContainerEvents} stream (containerd 1.7+ and 2.x, CRI-O). Until that stream has delivered an
 * event (a backend without it answers {@code Unimplemented}; containerd 1.6 keeps it open and
 * silent), and again from the moment it breaks, asks {@code ListContainers} for exited containers
 * once a second while the host believes some container running (kubelet's generic PLEG polls at
 * the same rate); it does nothing while none is. A broken stream is followed again a second
 * later.
 */
final class ContainerExits implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ContainerExits.class);
    private static final long PERIOD_MILLIS = 1000;
    private static final int RECHECKS = 5;

    private final Channel backend;
    private final LifecycleHost host;
    private final Function<String, CompletionStage<Void>> exited;
    private final ContainerIds ids;
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "cri4j-proxy-exits");
                        t.setDaemon(true);
                        return t;
                    });
    private volatile ClientCall<GetEventsRequest, ContainerEventResponse> stream;
    private volatile boolean delivering;
    private volatile boolean unimplemented;
    private volatile boolean closed;

    /**
     * @param exited records an exit (by the proxy's id) and has the host announce it
     * @param ids the proxy's container ids for the runtime's the backend reports
     */
    ContainerExits(
            Channel backend,
            LifecycleHost host,
            Function<String, CompletionStage<Void>> exited,
            ContainerIds ids) {
        this.ids = ids;
        this.backend = backend;
        this.host = host;
        this.exited = exited;
    }

    /** Starts following; returns at once. */
    void start() {
        follow();
        timer.scheduleWithFixedDelay(
                () -> {
                    if (!delivering) {
                        poll();
                    }
                },
                PERIOD_MILLIS,
                PERIOD_MILLIS,
                TimeUnit.MILLISECONDS);
    }

    private void follow() {
        if (closed) {
            return;
        }
        ClientCall<GetEventsRequest, ContainerEventResponse> call =
                backend.newCall(
                        RuntimeServiceGrpc.getGetContainerEventsMethod(), CallOptions.DEFAULT);
        stream = call;
        Context.ROOT.run(
                () ->
                        ClientCalls.asyncServerStreamingCall(
                                call,
                                GetEventsRequest.getDefaultInstance(),
                                new StreamObserver<>() {
                                    @Override
                                    public void onNext(ContainerEventResponse e) {
                                        delivering = true;
                                        if (e.getContainerEventType()
                                                == ContainerEventType.CONTAINER_STOPPED_EVENT) {
                                            stopped(ids.toClient(e.getContainerId()), RECHECKS);
                                        }
                                    }

                                    @Override
                                    public void onError(Throwable t) {
                                        broken(Status.fromThrowable(t));
                                    }

                                    @Override
                                    public void onCompleted() {
                                        broken(Status.UNAVAILABLE.withDescription("stream ended"));
                                    }
                                }));
    }

    /** Records an exit; nothing here waits for the host to have announced it. */
    private void exit(String id) {
        var unused = exited.apply(id);
    }

    /**
     * A stop the runtime reported: announced once the host believes the container running. A
     * container whose process exits at once is reported stopped before its StartContainer call
     * has returned (and StartContainer reaches the hooks first): it is looked at again a few
     * times, a second apart.
     */
    private void stopped(String id, int rechecks) {
        if (host.running().contains(id)) {
            exit(id);
        } else if (rechecks > 0 && !closed && !host.isStopped(id)) {
            timer.schedule(() -> stopped(id, rechecks - 1), PERIOD_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    private void broken(Status status) {
        delivering = false;
        if (closed) {
            return;
        }
        if (status.getCode() == Status.Code.UNIMPLEMENTED) {
            LOG.info(
                    "the runtime has no GetContainerEvents; container exits are polled with"
                            + " ListContainers every {} ms while containers run",
                    PERIOD_MILLIS);
            unimplemented = true;
            return;
        }
        LOG.debug("GetContainerEvents ended ({}); following again in {} ms", status, PERIOD_MILLIS);
        timer.schedule(this::follow, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** One look for exited containers among those the host believes running. */
    private void poll() {
        Set<String> running = host.running();
        if (closed || running.isEmpty()) {
            return;
        }
        try {
            ListContainersResponse list =
                    RuntimeServiceGrpc.newBlockingStub(backend)
                            .withDeadlineAfter(5, TimeUnit.SECONDS)
                            .listContainers(
                                    ListContainersRequest.newBuilder()
                                            .setFilter(
                                                    ContainerFilter.newBuilder()
                                                            .setState(
                                                                    ContainerStateValue.newBuilder()
                                                                            .setState(
                                                                                    ContainerState
                                                                                            .CONTAINER_EXITED)))
                                            .build());
            list.getContainersList().stream()
                    // a runtime that ignores the filter answers with running ones too
                    .filter(c -> c.getState() == ContainerState.CONTAINER_EXITED)
                    .map(c -> ids.toClient(c.getId()))
                    .filter(running::contains)
                    .forEach(this::exit);
        } catch (RuntimeException e) {
            LOG.debug("ListContainers for exits failed: {}", e.toString());
        }
    }

    /** Whether exits are polled now (the backend's event stream is missing or silent). */
    boolean polling() {
        return !delivering;
    }

    /** Whether the backend answered GetContainerEvents with Unimplemented. */
    boolean unimplemented() {
        return unimplemented;
    }

    @Override
    public void close() {
        closed = true;
        ClientCall<GetEventsRequest, ContainerEventResponse> s = stream;
        if (s != null) {
            s.cancel("proxy closing", null);
        }
        timer.shutdownNow();
    }
}
