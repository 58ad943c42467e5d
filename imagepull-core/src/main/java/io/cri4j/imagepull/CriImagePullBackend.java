package io.cri4j.imagepull;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriConversion;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.AuthConfig;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.ImageStatusResponse;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.imagepull.internal.ContentProgressPoller;
import io.cri4j.imagepull.internal.Futures2;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pulls through a CRI runtime's {@code ImageService.PullImage} ({@code runtime.v1}, falling back to
 * {@code runtime.v1alpha2} when the runtime answers UNIMPLEMENTED).
 *
 * <p>CRI's PullImage says nothing until it returns. When the runtime is containerd, this backend
 * polls containerd's content service ({@code containerd.services.content.v1.Content/ListStatuses},
 * namespace {@code k8s.io}) on the same socket while the pull runs, giving per-layer bytes done
 * and total; when the pull completes it reads the image's manifest from the content store so the
 * final layer list and byte counts are exact. Other runtimes (or containerd with the content
 * service unreachable) get an honest "unknown" percent until the pull finishes.
 */
public final class CriImagePullBackend implements ImagePullBackend {

    private static final Logger LOG = LoggerFactory.getLogger(CriImagePullBackend.class);

    /** The containerd namespace CRI uses. */
    public static final String CRI_NAMESPACE = "k8s.io";

    /** Default interval of content-service polls. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);

    private final String name;
    private final String endpointName;
    private final ManagedChannel channel;
    private final boolean ownsChannel;
    private final ScheduledExecutorService poller;
    private final ContentProgressPoller content;
    private volatile boolean v1alpha2;
    private volatile boolean closed;

    private CriImagePullBackend(Builder b) {
        this.name = "cri " + b.endpointName;
        this.endpointName = b.endpointName;
        this.channel = b.channel != null ? b.channel : CriChannels.newChannel(b.endpoint);
        this.ownsChannel = b.channel == null;
        if (b.contentProgress) {
            poller =
                    Executors.newSingleThreadScheduledExecutor(
                            r -> {
                                Thread t = new Thread(r, "cri4j-imagepull-content-poller");
                                t.setDaemon(true);
                                return t;
                            });
            content = new ContentProgressPoller(channel, b.namespace, b.pollInterval, poller);
        } else {
            poller = null;
            content = null;
        }
    }

    /**
     * @param endpoint the runtime's CRI endpoint (for containerd its main socket, which also serves the content service)
     * @return a builder
     */
    public static Builder builder(CriEndpoint endpoint) {
        return new Builder(Objects.requireNonNull(endpoint, "endpoint"), null, endpoint.toString());
    }

    /**
     * @param channel an existing channel to the runtime; the backend does not close it
     * @return a builder
     */
    public static Builder builder(ManagedChannel channel) {
        return new Builder(null, Objects.requireNonNull(channel, "channel"), channel.authority());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public CompletableFuture<Optional<ImageInfo>> imageStatus(String image) {
        ImageStatusRequest req =
                ImageStatusRequest.newBuilder()
                        .setImage(ImageSpec.newBuilder().setImage(image))
                        .build();
        return call(
                        req,
                        r ->
                                Futures2.toCompletable(
                                        ImageServiceGrpc.newFutureStub(channel)
                                                .withDeadlineAfter(30, TimeUnit.SECONDS)
                                                .imageStatus(r)),
                        io.cri4j.cri.v1alpha2.ImageStatusRequest.class,
                        r ->
                                Futures2.toCompletable(
                                        io.cri4j.cri.v1alpha2.ImageServiceGrpc.newFutureStub(
                                                        channel)
                                                .withDeadlineAfter(30, TimeUnit.SECONDS)
                                                .imageStatus(r)),
                        ImageStatusResponse.class)
                .thenApply(
                        resp ->
                                resp.hasImage() && !resp.getImage().getId().isEmpty()
                                        ? Optional.of(
                                                new ImageInfo(
                                                        resp.getImage().getId(),
                                                        resp.getImage().getRepoTagsList(),
                                                        resp.getImage().getRepoDigestsList(),
                                                        resp.getImage().getSize()))
                                        : Optional.<ImageInfo>empty());
    }

    @Override
    public CompletableFuture<ImageInfo> pull(
            String image, Optional<RegistryCredential> credential, ProgressSink progress) {
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException(name + " is closed"));
        }
        PullImageRequest.Builder req =
                PullImageRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(image));
        credential.ifPresent(
                c -> {
                    // server_address stays empty: the credential was matched to the registry
                    // already, and
                    // containerd 1.6 parses the field as a URL (a bare host:port fails to parse)
                    AuthConfig.Builder a = AuthConfig.newBuilder();
                    if (!c.identityToken().isEmpty()) {
                        a.setIdentityToken(c.identityToken());
                    }
                    if (!c.username().isEmpty() || !c.password().isEmpty()) {
                        a.setUsername(c.username()).setPassword(c.password());
                    }
                    req.setAuth(a);
                });
        ContentProgressPoller.Tracked tracked =
                content == null ? null : content.track(image, progress);
        if (content == null) {
            progress.unknown("CRI PullImage reports no byte progress");
        }
        CompletableFuture<PullImageResponse> call =
                call(
                        req.build(),
                        r ->
                                Futures2.toCompletable(
                                        ImageServiceGrpc.newFutureStub(channel).pullImage(r)),
                        io.cri4j.cri.v1alpha2.PullImageRequest.class,
                        r ->
                                Futures2.toCompletable(
                                        io.cri4j.cri.v1alpha2.ImageServiceGrpc.newFutureStub(
                                                        channel)
                                                .pullImage(r)),
                        PullImageResponse.class);
        CompletableFuture<ImageInfo> result =
                call.thenCompose(
                                resp ->
                                        imageStatus(image)
                                                .thenApply(
                                                        info ->
                                                                info.orElseGet(
                                                                        () ->
                                                                                new ImageInfo(
                                                                                        resp
                                                                                                .getImageRef(),
                                                                                        java.util
                                                                                                .List
                                                                                                .of(),
                                                                                        java.util
                                                                                                .List
                                                                                                .of(),
                                                                                        0))))
                        .thenCompose(
                                info ->
                                        content == null
                                                ? CompletableFuture.completedFuture(info)
                                                : content.resolveFinal(
                                                                tracked, info, image, progress)
                                                        .handle((v, e) -> info));
        result.whenComplete(
                (r, e) -> {
                    if (tracked != null) {
                        tracked.close();
                    }
                    if (result.isCancelled()) {
                        call.cancel(true);
                    }
                });
        return result;
    }

    /** Calls v1, or v1alpha2 once the runtime has said it lacks v1. */
    private <
                    Q1 extends com.google.protobuf.Message,
                    Q2 extends com.google.protobuf.Message,
                    R2 extends com.google.protobuf.Message,
                    R1 extends com.google.protobuf.Message>
            CompletableFuture<R1> call(
                    Q1 v1Request,
                    Function<Q1, CompletableFuture<R1>> v1Call,
                    Class<Q2> v1alpha2Type,
                    Function<Q2, CompletableFuture<R2>> v1alpha2Call,
                    Class<R1> v1ResponseType) {
        if (v1alpha2) {
            return v1alpha2Call
                    .apply(CriConversion.convert(v1Request, v1alpha2Type))
                    .thenApply(r -> CriConversion.convert(r, v1ResponseType));
        }
        CompletableFuture<R1> first = v1Call.apply(v1Request);
        CompletableFuture<R1> out =
                first.handle(
                                (r, e) -> {
                                    if (e == null) {
                                        return CompletableFuture.completedFuture(r);
                                    }
                                    Throwable cause =
                                            e instanceof CompletionException && e.getCause() != null
                                                    ? e.getCause()
                                                    : e;
                                    if (Status.fromThrowable(cause).getCode()
                                            == Status.Code.UNIMPLEMENTED) {
                                        LOG.info(
                                                "{} does not serve CRI runtime.v1 images; using runtime.v1alpha2",
                                                name);
                                        v1alpha2 = true;
                                        return v1alpha2Call
                                                .apply(
                                                        CriConversion.convert(
                                                                v1Request, v1alpha2Type))
                                                .thenApply(
                                                        r2 ->
                                                                CriConversion.convert(
                                                                        r2, v1ResponseType));
                                    }
                                    return CompletableFuture.<R1>failedFuture(explain(cause));
                                })
                        .thenCompose(f -> f);
        out.whenComplete(
                (r, e) -> {
                    if (out.isCancelled()) {
                        first.cancel(true);
                    }
                });
        return out;
    }

    /** Transport failures name the endpoint and the root cause (gRPC says only "io exception"). */
    private Throwable explain(Throwable cause) {
        Status status = Status.fromThrowable(cause);
        if (status.getCode() != Status.Code.UNAVAILABLE) {
            return cause;
        }
        return new java.io.IOException(
                "runtime at "
                        + endpointName
                        + " is unreachable: "
                        + io.cri4j.cri.internal.IoErrors.describe(status),
                cause);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (content != null) {
            content.close();
            poller.shutdownNow();
            try {
                poller.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (ownsChannel) {
            channel.shutdownNow();
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Configures a {@link CriImagePullBackend}. */
    public static final class Builder {
        private final CriEndpoint endpoint;
        private final ManagedChannel channel;
        private final String endpointName;
        private boolean contentProgress = true;
        private String namespace = CRI_NAMESPACE;
        private Duration pollInterval = DEFAULT_POLL_INTERVAL;

        private Builder(CriEndpoint endpoint, ManagedChannel channel, String endpointName) {
            this.endpoint = endpoint;
            this.channel = channel;
            this.endpointName = endpointName;
        }

        /**
         * @param enabled poll containerd's content service for byte progress (default true; turned
         *                off automatically when the runtime answers UNIMPLEMENTED)
         * @return this
         */
        public Builder contentProgress(boolean enabled) {
            this.contentProgress = enabled;
            return this;
        }

        /**
         * @param ns containerd namespace of CRI's images (default {@value CriImagePullBackend#CRI_NAMESPACE})
         * @return this
         */
        public Builder containerdNamespace(String ns) {
            this.namespace = Objects.requireNonNull(ns, "namespace");
            return this;
        }

        /**
         * @param interval content-service poll interval (default 200 ms)
         * @return this
         */
        public Builder pollInterval(Duration interval) {
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException(
                        "poll interval must be positive, got " + interval);
            }
            this.pollInterval = interval;
            return this;
        }

        /** @return the backend */
        public CriImagePullBackend build() {
            return new CriImagePullBackend(this);
        }
    }
}
