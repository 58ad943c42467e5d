package io.cri4j.imagepull;

/**
 * Progress of one layer (blob) of an image.
 *
 * @param id layer identifier: the short digest as Docker prints it (12 hex characters) when known
 * @param status what the backend says it is doing ("Downloading", "Pull complete", ...)
 * @param done bytes done
 * @param total the layer's size in bytes, or -1 while unknown
 */
public record LayerProgress(String id, String status, long done, long total) {

    /** @return true when the layer is known to be complete */
    public boolean complete() {
        return total >= 0 && done >= total;
    }
}
