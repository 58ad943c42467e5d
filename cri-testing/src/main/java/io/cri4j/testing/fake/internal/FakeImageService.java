package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.FilesystemIdentifier;
import io.cri4j.cri.v1.FilesystemUsage;
import io.cri4j.cri.v1.Image;
import io.cri4j.cri.v1.ImageFsInfoRequest;
import io.cri4j.cri.v1.ImageFsInfoResponse;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.ImageStatusResponse;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.ListImagesResponse;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.cri.v1.RemoveImageResponse;
import io.cri4j.cri.v1.StreamImagesRequest;
import io.cri4j.cri.v1.StreamImagesResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/** The fake {@code runtime.v1.ImageService}. */
public final class FakeImageService extends ImageServiceGrpc.ImageServiceImplBase {

    private final FakeState state;
    private final FakeContent content;

    public FakeImageService(FakeState state, FakeContent content) {
        this.state = state;
        this.content = content;
    }

    private static <T> void answer(StreamObserver<T> out, Supplier<T> body) {
        T response;
        try {
            response = body.get();
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        }
        out.onNext(response);
        out.onCompleted();
    }

    private static String image(String ref) {
        if (ref.isEmpty()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("image.image must not be empty")
                    .asRuntimeException();
        }
        return ref;
    }

    /**
     * Stores the image's blobs in the content store, downloading its layers at the configured rate (the call
     * answers once they are committed), then records the image. The client cancelling the call abandons the
     * downloads no other pull needs, and the image is not recorded.
     */
    @Override
    public void pullImage(PullImageRequest request, StreamObserver<PullImageResponse> out) {
        String ref;
        FakeState.ImagePlan plan;
        try {
            ref = image(request.getImage().getImage());
            plan = state.planPull(ref);
        } catch (StatusRuntimeException e) {
            out.onError(e);
            return;
        }
        java.util.concurrent.CompletableFuture<Void> downloaded = content.pull(plan);
        io.grpc.Context.current().addListener(c -> downloaded.cancel(false), Runnable::run);
        downloaded.whenComplete(
                (v, e) -> {
                    if (e == null) {
                        answer(
                                out,
                                () ->
                                        PullImageResponse.newBuilder()
                                                .setImageRef(state.pullImage(ref))
                                                .build());
                    } else if (!downloaded.isCancelled()) {
                        out.onError(Status.fromThrowable(e).asRuntimeException());
                    }
                });
    }

    @Override
    public void imageStatus(ImageStatusRequest request, StreamObserver<ImageStatusResponse> out) {
        answer(
                out,
                () -> {
                    // containerd answers an empty response (no error) for an image it does not have
                    Optional<Image> image = state.imageStatus(image(request.getImage().getImage()));
                    ImageStatusResponse.Builder b = ImageStatusResponse.newBuilder();
                    image.ifPresent(
                            i -> {
                                b.setImage(i);
                                if (request.getVerbose()) {
                                    b.putInfo(
                                            "info",
                                            "{\"chainID\":\""
                                                    + i.getId()
                                                    + "\",\"size\":"
                                                    + i.getSize()
                                                    + "}");
                                }
                            });
                    return b.build();
                });
    }

    @Override
    public void listImages(ListImagesRequest request, StreamObserver<ListImagesResponse> out) {
        answer(
                out,
                () ->
                        ListImagesResponse.newBuilder()
                                .addAllImages(
                                        state.listImages(request.getFilter().getImage().getImage()))
                                .build());
    }

    @Override
    public void streamImages(
            StreamImagesRequest request, StreamObserver<StreamImagesResponse> out) {
        List<Image> images = state.listImages(request.getFilter().getImage().getImage());
        for (int i = 0; i < images.size(); i += FakeRuntimeService.STREAM_CHUNK) {
            out.onNext(
                    StreamImagesResponse.newBuilder()
                            .addAllImages(
                                    images.subList(
                                            i,
                                            Math.min(
                                                    images.size(),
                                                    i + FakeRuntimeService.STREAM_CHUNK)))
                            .build());
        }
        out.onCompleted();
    }

    @Override
    public void removeImage(RemoveImageRequest request, StreamObserver<RemoveImageResponse> out) {
        answer(
                out,
                () -> {
                    String ref = image(request.getImage().getImage());
                    List<String> manifests =
                            state.imageStatus(ref)
                                    .map(
                                            i ->
                                                    i.getRepoDigestsList().stream()
                                                            .map(
                                                                    d ->
                                                                            d.substring(
                                                                                    d.indexOf('@')
                                                                                            + 1))
                                                            .toList())
                                    .orElse(List.of());
                    state.removeImage(ref);
                    manifests.forEach(content::forget);
                    return RemoveImageResponse.getDefaultInstance();
                });
    }

    @Override
    public void imageFsInfo(ImageFsInfoRequest request, StreamObserver<ImageFsInfoResponse> out) {
        answer(
                out,
                () -> {
                    long now = state.now();
                    FilesystemUsage images =
                            FilesystemUsage.newBuilder()
                                    .setTimestamp(now)
                                    .setFsId(
                                            FilesystemIdentifier.newBuilder()
                                                    .setMountpoint(FakeStats.ROOT + "/images"))
                                    .setUsedBytes(FakeStats.u64(state.imagesSize()))
                                    .setInodesUsed(FakeStats.u64(state.imageCount() * 1200L))
                                    .build();
                    FilesystemUsage containers =
                            FilesystemUsage.newBuilder()
                                    .setTimestamp(now)
                                    .setFsId(
                                            FilesystemIdentifier.newBuilder()
                                                    .setMountpoint(FakeStats.ROOT + "/snapshots"))
                                    .setUsedBytes(
                                            FakeStats.u64(state.containers().size() * 64L * 1024))
                                    .setInodesUsed(FakeStats.u64(state.containers().size() * 16L))
                                    .build();
                    return ImageFsInfoResponse.newBuilder()
                            .addImageFilesystems(images)
                            .addContainerFilesystems(containers)
                            .build();
                });
    }
}
