package io.cri4j.imagepull;

import java.util.List;
import java.util.Objects;

/**
 * An image as the runtime knows it after a pull.
 *
 * @param id the runtime's image ID (for containerd and Docker the config digest {@code sha256:...})
 * @param repoTags tags the runtime has for it
 * @param repoDigests {@code name@sha256:...} references (the manifest digest the registry served)
 * @param size size in bytes as the runtime reports it (0 when unknown)
 */
public record ImageInfo(String id, List<String> repoTags, List<String> repoDigests, long size) {

    /** Copies the lists. */
    public ImageInfo {
        Objects.requireNonNull(id, "id");
        repoTags = List.copyOf(repoTags);
        repoDigests = List.copyOf(repoDigests);
    }

    /**
     * The manifest digest under which {@code image} was pulled: the repo digest of the same
     * repository (a runtime lists one per repository sharing this image ID), else the first.
     *
     * @param image the reference that was pulled
     * @return {@code sha256:...}, or empty
     */
    public String digestFor(String image) {
        String wanted;
        try {
            wanted = io.cri4j.imagepull.internal.ImageReference.parse(image).name();
        } catch (IllegalArgumentException e) {
            return digest();
        }
        for (String rd : repoDigests) {
            int at = rd.indexOf('@');
            if (at > 0) {
                try {
                    if (io.cri4j.imagepull.internal.ImageReference.parse(rd.substring(0, at))
                            .name()
                            .equals(wanted)) {
                        return rd.substring(at + 1);
                    }
                } catch (IllegalArgumentException ignored) {
                    // not a reference we understand
                }
            }
        }
        return digest();
    }

    /** @return the digest part of the first repo digest ({@code sha256:...}), or empty */
    public String digest() {
        for (String rd : repoDigests) {
            int at = rd.indexOf('@');
            if (at >= 0) {
                return rd.substring(at + 1);
            }
        }
        return "";
    }
}
