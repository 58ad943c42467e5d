package io.cri4j.imagepull;

import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A backend the test drives by hand: every pull is a {@link Call} whose future the test completes. */
final class FakeBackend implements ImagePullBackend {

    record Call(
            String image,
            Optional<RegistryCredential> credential,
            ProgressSink sink,
            CompletableFuture<ImageInfo> future) {
        void succeed() {
            future.complete(info(image));
        }

        void fail(String message) {
            future.completeExceptionally(new RuntimeException(message));
        }
    }

    final BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    final Set<String> present = ConcurrentHashMap.newKeySet();
    volatile boolean closed;

    static ImageInfo info(String image) {
        return new ImageInfo(
                "sha256:" + Integer.toHexString(image.hashCode()),
                java.util.List.of(image),
                java.util.List.of(image.replaceAll(":[^:/]*$", "") + "@sha256:feed"),
                4242);
    }

    @Override
    public String name() {
        return "fake";
    }

    @Override
    public CompletableFuture<Optional<ImageInfo>> imageStatus(String image) {
        return CompletableFuture.completedFuture(
                present.contains(image) ? Optional.of(info(image)) : Optional.empty());
    }

    @Override
    public CompletableFuture<ImageInfo> pull(
            String image, Optional<RegistryCredential> credential, ProgressSink progress) {
        Call c = new Call(image, credential, progress, new CompletableFuture<>());
        calls.add(c);
        return c.future;
    }

    /** @return the next call, waiting up to 5 s */
    Call next() throws InterruptedException {
        Call c = calls.poll(5, TimeUnit.SECONDS);
        if (c == null) {
            throw new AssertionError("the puller made no backend call within 5 s");
        }
        return c;
    }

    @Override
    public void close() {
        closed = true;
    }
}
