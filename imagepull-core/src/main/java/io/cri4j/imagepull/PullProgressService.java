package io.cri4j.imagepull;

import com.google.protobuf.Timestamp;
import io.cri4j.imagepull.v1.ImagePullProgress;
import io.cri4j.imagepull.v1.ListRequest;
import io.cri4j.imagepull.v1.ListResponse;
import io.cri4j.imagepull.v1.Phase;
import io.cri4j.imagepull.v1.PullProgressGrpc;
import io.cri4j.imagepull.v1.WatchRequest;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * {@code cri4j.imagepull.v1.PullProgress} over a {@link PullObserver}: {@code Watch} streams a pull's
 * snapshots (or every pull's), {@code List} answers the current and recent ones. A CRI proxy that observes
 * pulls answers it on its own socket; any gRPC server can serve it too. The client cancelling a watch
 * (or going away) closes it; too many open watches answer RESOURCE_EXHAUSTED.
 */
public final class PullProgressService extends PullProgressGrpc.PullProgressImplBase {

    private final PullObserver observer;

    /** @param observer the pulls to serve */
    public PullProgressService(PullObserver observer) {
        this.observer = Objects.requireNonNull(observer, "observer");
    }

    @Override
    public void watch(WatchRequest request, StreamObserver<ImagePullProgress> out) {
        Context context = Context.current();
        Object lock = new Object();
        boolean[] over = {false};
        PullObserver.Watch w;
        try {
            w =
                    observer.watch(
                            request.getImage(),
                            new PullObserver.Listener() {
                                @Override
                                public void onProgress(PullProgress progress) {
                                    synchronized (lock) {
                                        if (!over[0]) {
                                            out.onNext(toMessage(progress));
                                        }
                                    }
                                }

                                @Override
                                public void onEnd() {
                                    synchronized (lock) {
                                        if (!over[0]) {
                                            over[0] = true;
                                            out.onCompleted();
                                        }
                                    }
                                }
                            });
        } catch (PullObserver.TooManyWatchersException e) {
            out.onError(
                    Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
            return;
        } catch (IllegalStateException e) {
            out.onError(Status.UNAVAILABLE.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        Runnable cancelled =
                () -> {
                    synchronized (lock) {
                        over[0] = true;
                    }
                    w.close();
                };
        if (out instanceof io.grpc.stub.ServerCallStreamObserver<?> call) {
            call.setOnCancelHandler(
                    cancelled); // and a message racing the cancellation is dropped quietly
        }
        context.addListener(
                c -> cancelled.run(), Runnable::run); // also where the call is not grpc-java's
    }

    @Override
    public void list(ListRequest request, StreamObserver<ListResponse> out) {
        out.onNext(list());
        out.onCompleted();
    }

    /** The current and recent pulls as a {@code List} answer. */
    public ListResponse list() {
        ListResponse.Builder b = ListResponse.newBuilder();
        observer.pulls().forEach(p -> b.addPulls(toMessage(p)));
        return b.build();
    }

    /**
     * A snapshot as a message.
     *
     * @param p a snapshot
     * @return its message
     */
    public static ImagePullProgress toMessage(PullProgress p) {
        Instant at = p.at();
        ImagePullProgress.Builder b =
                ImagePullProgress.newBuilder()
                        .setImage(p.image())
                        .setProgress(p.bytesDone())
                        .setTotal(p.percentKnown() ? p.bytesTotal() : -1)
                        .setPercent(p.percent())
                        .setPhase(
                                switch (p.phase()) {
                                    case SUCCEEDED -> Phase.PHASE_SUCCEEDED;
                                    case FAILED, CANCELLED -> Phase.PHASE_FAILED;
                                    default -> Phase.PHASE_PULLING;
                                })
                        .setAt(
                                Timestamp.newBuilder()
                                        .setSeconds(at.getEpochSecond())
                                        .setNanos(at.getNano()));
        if (p.phase() == PullProgress.Phase.FAILED || p.phase() == PullProgress.Phase.CANCELLED) {
            b.setError(p.message());
        } else {
            b.setMessage(p.message());
        }
        for (LayerProgress l : p.layers()) {
            b.addLayers(
                    io.cri4j.imagepull.v1.LayerProgress.newBuilder()
                            .setLayer(l.id())
                            .setProgress(l.done())
                            .setTotal(l.total())
                            .setStatus(l.status()));
        }
        return b.build();
    }

    /**
     * A message as a snapshot (the attempt is 1, the rate 0).
     *
     * @param m a message
     * @return its snapshot
     */
    public static PullProgress fromMessage(ImagePullProgress m) {
        List<LayerProgress> layers = new ArrayList<>(m.getLayersCount());
        m.getLayersList()
                .forEach(
                        l ->
                                layers.add(
                                        new LayerProgress(
                                                l.getLayer(),
                                                l.getStatus(),
                                                l.getProgress(),
                                                l.getTotal())));
        PullProgress.Phase phase =
                switch (m.getPhase()) {
                    case PHASE_SUCCEEDED -> PullProgress.Phase.SUCCEEDED;
                    case PHASE_FAILED -> PullProgress.Phase.FAILED;
                    default -> PullProgress.Phase.PULLING;
                };
        return new PullProgress(
                m.getImage(),
                phase,
                1,
                m.getPercent(),
                m.getProgress(),
                Math.max(0, m.getTotal()),
                0,
                layers,
                phase == PullProgress.Phase.FAILED ? m.getError() : m.getMessage(),
                Instant.ofEpochSecond(m.getAt().getSeconds(), m.getAt().getNanos()));
    }
}
