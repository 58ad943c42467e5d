package io.cri4j.imagepull;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What actually pulls: a CRI runtime's ImageService, the Docker Engine API, or a test double.
 * The puller owns jobs, workers, retries, deadlines and progress; a backend does one attempt.
 *
 * <p>Both methods are asynchronous. When the puller cancels a returned future (attempt timeout,
 * deadline, {@link PullJob#cancel()}), the backend must abort the underlying call promptly.
 */
public interface ImagePullBackend extends AutoCloseable {

    /** @return a short name for messages, e.g. {@code cri unix:///run/containerd/containerd.sock} */
    String name();

    /**
     * Whether the image is present.
     *
     * @param image image reference
     * @return the image, or empty when absent
     */
    CompletableFuture<Optional<ImageInfo>> imageStatus(String image);

    /**
     * One pull attempt with one credential (or anonymously).
     *
     * @param image image reference
     * @param credential the credential to present, or empty for anonymous
     * @param progress where to report what the backend observes
     * @return the pulled image
     */
    CompletableFuture<ImageInfo> pull(
            String image, Optional<RegistryCredential> credential, ProgressSink progress);

    /** Releases connections and threads; idempotent. */
    @Override
    void close();

    /** Receives what a backend observes during one attempt. Thread-safe. */
    interface ProgressSink {
        /**
         * A layer's state.
         *
         * @param id layer id (digest or short digest)
         * @param status backend's words for what is happening
         * @param done bytes done
         * @param total layer size, or -1 when unknown
         */
        void layer(String id, String status, long done, long total);

        /**
         * The image's exact layers are known (from its manifest) and all are complete: replaces
         * the layers reported so far (which may include ones a backend could not attribute).
         *
         * @param layerSizes layer id to size, in manifest order
         */
        void layersResolved(java.util.LinkedHashMap<String, Long> layerSizes);

        /**
         * The backend cannot observe byte progress for this attempt.
         *
         * @param reason why, for the progress message
         */
        void unknown(String reason);

        /**
         * A status line without bytes ("Pulling from library/busybox", "Resolving", ...).
         *
         * @param message the line
         */
        void message(String message);
    }
}
