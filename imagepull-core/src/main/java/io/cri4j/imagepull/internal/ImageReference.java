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

    /** The longest repository name (distribution/reference's NameTotalLengthMax). */
    static final int MAX_NAME_LENGTH = 255;

    // distribution/reference's grammar (regexp.go), as Docker and containerd apply it
    private static final String ALNUM = "[a-z0-9]+";
    private static final String SEPARATOR = "(?:[._]|__|[-]+)";
    private static final String PATH_COMPONENT = ALNUM + "(?:" + SEPARATOR + ALNUM + ")*";
    private static final String DOMAIN_COMPONENT =
            "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    private static final String HOST =
            "(?:" + DOMAIN_COMPONENT + "(?:\\." + DOMAIN_COMPONENT + ")*" + "|\\[[a-fA-F0-9:]+\\])";
    private static final String DOMAIN = HOST + "(?::[0-9]+)?";
    private static final String NAME =
            "(?:" + DOMAIN + "/)?" + PATH_COMPONENT + "(?:/" + PATH_COMPONENT + ")*";
    private static final String TAG = "[\\w][\\w.-]{0,127}";
    private static final String DIGEST =
            "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
    private static final java.util.regex.Pattern REFERENCE =
            java.util.regex.Pattern.compile("(" + NAME + ")(?::" + TAG + ")?(?:@" + DIGEST + ")?");
    private static final java.util.regex.Pattern IDENTIFIER =
            java.util.regex.Pattern.compile("[a-f0-9]{64}");

    /**
     * Checks a reference against distribution/reference's grammar, with Docker's normalisation
     * rules (a first component with a dot, a colon or upper case, or {@code localhost}, is a
     * registry; the repository must be lower case), so that a reference the runtime would refuse
     * is refused here, before any pull.
     *
     * @param image a reference
     * @throws IllegalArgumentException naming the reference and what is wrong with it
     */
    public static void validate(String image) {
        String problem = problem(image);
        if (problem != null) {
            throw new IllegalArgumentException(
                    "image reference '"
                            + (image.length() > 300 ? image.substring(0, 300) + "..." : image)
                            + "' is invalid: "
                            + problem);
        }
    }

    private static String problem(String image) {
        if (image.isEmpty()) {
            return "repository name must have at least one component";
        }
        if (image.length() > 4096) {
            return "invalid reference format";
        }
        if (IDENTIFIER.matcher(image).matches()) {
            return "cannot specify 64-byte hexadecimal strings";
        }
        int slash = image.indexOf('/');
        String remote = image;
        if (slash >= 0) {
            String first = image.substring(0, slash);
            if (first.contains(".")
                    || first.contains(":")
                    || first.equals("localhost")
                    || !first.toLowerCase(java.util.Locale.ROOT).equals(first)) {
                remote = image.substring(slash + 1);
            }
        }
        int end = remote.length();
        int at = remote.indexOf('@');
        if (at >= 0) {
            end = at;
        }
        int colon = remote.lastIndexOf(':', end - 1);
        if (colon >= 0) {
            end = colon;
        }
        String repository = remote.substring(0, end);
        if (!repository.toLowerCase(java.util.Locale.ROOT).equals(repository)) {
            return "repository name must be lowercase";
        }
        java.util.regex.Matcher m = REFERENCE.matcher(image);
        if (!m.matches()) {
            return "invalid reference format";
        }
        if (m.group(1).length() > MAX_NAME_LENGTH) {
            return "repository name must not be more than " + MAX_NAME_LENGTH + " characters";
        }
        return null;
    }

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
                throw new IllegalArgumentException(
                        "image reference '" + image + "' has a malformed digest");
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
