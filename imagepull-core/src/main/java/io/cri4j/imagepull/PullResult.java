package io.cri4j.imagepull;

import java.time.Duration;

/**
 * The outcome of a successful pull.
 *
 * @param image the reference that was requested
 * @param imageId the runtime's image ID
 * @param digest the manifest digest ({@code sha256:...}) when the runtime reports one, else empty
 * @param size image size in bytes as the runtime reports it
 * @param elapsed wall time from submission to completion
 * @param attempts attempts made (0 when the image was already present)
 * @param alreadyPresent true when no pull was needed
 */
public record PullResult(
        String image,
        String imageId,
        String digest,
        long size,
        Duration elapsed,
        int attempts,
        boolean alreadyPresent) {}
