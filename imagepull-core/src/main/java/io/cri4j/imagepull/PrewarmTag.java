package io.cri4j.imagepull;

import java.util.Objects;
import java.util.Optional;

/**
 * One tag of a pre-warming set, like a tag of OpenKruise's NodeImage spec: changing its
 * {@code version} re-pulls it.
 *
 * @param tag the tag (or a digest {@code sha256:...})
 * @param version opaque version; a different value restarts the tag's worker
 * @param policy retry and time limits, empty for the puller's default
 */
public record PrewarmTag(String tag, String version, Optional<PullPolicy> policy) {

    /** Validates. */
    public PrewarmTag {
        Objects.requireNonNull(tag, "tag");
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(policy, "policy");
        if (tag.isBlank()) {
            throw new IllegalArgumentException("tag is empty");
        }
    }

    /**
     * @param tag the tag
     * @param version its version
     * @return a tag with the default policy
     */
    public static PrewarmTag of(String tag, String version) {
        return new PrewarmTag(tag, version, Optional.empty());
    }
}
