package io.cri4j.imagepull.internal;

/**
 * A parsed image reference, normalised the way Docker and containerd do it: no registry means
 * {@code docker.io}, a single-component Docker Hub name gets {@code library/}, no tag means
 * {@code latest} (unless a digest is given).
 *
 * @param registry registry host[:port]
 * @param repository repository path
 * @param tag tag, empty when only a digest is given
 * @param digest digest, empty when none
 */
public record ImageReference(String registry, String repository, String tag, String digest) {

    /** Docker Hub's canonical registry name. */
    public static final String DOCKER_HUB = "docker.io";

    /**
     * @param image a reference
     * @return the parsed form
     * @throws IllegalArgumentException when the reference is empty or malformed
     */
    public static ImageReference parse(String image) {
        if (image == null || image.isBlank()) {
            throw new IllegalArgumentException("image reference is empty");
        }
        String rest = image.strip();
        String digest = "";
        int at = rest.indexOf('@');
        if (at >= 0) {
            digest = rest.substring(at + 1);
            rest = rest.substring(0, at);
            if (!digest.contains(":")) {
                throw new IllegalArgumentException("image reference '" + image + "' has a malformed digest");
            }
        }
        String tag = "";
        int slash = rest.lastIndexOf('/');
        int colon = rest.lastIndexOf(':');
        if (colon > slash) {
            tag = rest.substring(colon + 1);
            rest = rest.substring(0, colon);
        }
        String registry = DOCKER_HUB;
        int first = rest.indexOf('/');
        if (first > 0) {
            String head = rest.substring(0, first);
            if (head.contains(".") || head.contains(":") || head.equals("localhost")) {
                registry = head;
                rest = rest.substring(first + 1);
            }
        }
        registry = canonicalRegistry(registry);
        if (rest.isEmpty()) {
            throw new IllegalArgumentException("image reference '" + image + "' has no repository");
        }
        if (registry.equals(DOCKER_HUB) && !rest.contains("/")) {
            rest = "library/" + rest;
        }
        if (tag.isEmpty() && digest.isEmpty()) {
            tag = "latest";
        }
        return new ImageReference(registry, rest, tag, digest);
    }

    /**
     * @param host a registry host as written in a config file or reference
     * @return Docker Hub's aliases mapped to {@code docker.io}, others unchanged
     */
    public static String canonicalRegistry(String host) {
        return switch (host) {
            case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com" -> DOCKER_HUB;
            default -> host;
        };
    }

    /** @return {@code registry/repository} */
    public String name() {
        return registry + "/" + repository;
    }

    /** @return the fully qualified reference */
    @Override
    public String toString() {
        return name() + (tag.isEmpty() ? "" : ":" + tag) + (digest.isEmpty() ? "" : "@" + digest);
    }
}
