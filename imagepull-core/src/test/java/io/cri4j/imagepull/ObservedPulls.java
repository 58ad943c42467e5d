package io.cri4j.imagepull;

import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PullImageRequest;
import io.grpc.Channel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A pull as the proxy makes one for the observer's tests. */
final class ObservedPulls {
    private ObservedPulls() {}

    /**
     * Pulls {@code image} over {@code channel} (within two minutes) with {@code observer} told at
     * the start and at the end, as the proxy tells it.
     *
     * @return the image reference the runtime answered
     */
    static CompletableFuture<String> pull(PullObserver observer, Channel channel, String image) {
        PullObserver.ObservedPull seen = observer.pullStarted(image);
        CompletableFuture<String> done =
                CompletableFuture.supplyAsync(
                        () ->
                                ImageServiceGrpc.newBlockingStub(channel)
                                        .withDeadlineAfter(120, TimeUnit.SECONDS)
                                        .pullImage(
                                                PullImageRequest.newBuilder()
                                                        .setImage(
                                                                ImageSpec.newBuilder()
                                                                        .setImage(image))
                                                        .build())
                                        .getImageRef());
        done.whenComplete(
                (ref, e) -> {
                    if (e == null) {
                        seen.succeeded(ref);
                    } else {
                        seen.failed(
                                e.getCause() != null ? e.getCause().getMessage() : e.getMessage());
                    }
                });
        return done;
    }
}
