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
