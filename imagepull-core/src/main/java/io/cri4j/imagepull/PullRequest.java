package io.cri4j.imagepull;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One image to pull, with its policy.
 *
 * @param image image reference ({@code busybox}, {@code registry:5000/team/app:1.2}, {@code name@sha256:...}),
 *     well-formed by distribution/reference's grammar (a malformed one is refused here, before
 *     any pull, as the runtime would refuse it)
 * @param policy retry and time limits; empty means the puller's default
 * @param force pull even when the runtime already has the image
 * @param credentials credentials to try first, before those the puller's {@link CredentialStore} matches
 */
public record PullRequest(
        String image,
        Optional<PullPolicy> policy,
        boolean force,
        List<RegistryCredential> credentials) {

    /** Validates. */
    public PullRequest {
        Objects.requireNonNull(image, "image");
        if (image.isBlank() || image.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException(
                    "image reference '" + image + "' is empty or contains whitespace");
        }
        io.cri4j.imagepull.internal.ImageReference.validate(image);
        Objects.requireNonNull(policy, "policy");
        credentials = List.copyOf(credentials);
    }

    /**
     * @param image image reference
     * @return a request with the puller's defaults
     */
    public static PullRequest of(String image) {
        return new PullRequest(image, Optional.empty(), false, List.of());
    }

    /** @param p policy @return a copy with it */
    public PullRequest withPolicy(PullPolicy p) {
        return new PullRequest(image, Optional.of(p), force, credentials);
    }

    /** @param f force @return a copy with it */
    public PullRequest withForce(boolean f) {
        return new PullRequest(image, policy, f, credentials);
    }

    /** @param c credentials to try first @return a copy with them */
    public PullRequest withCredentials(List<RegistryCredential> c) {
        return new PullRequest(image, policy, force, c);
    }
}
