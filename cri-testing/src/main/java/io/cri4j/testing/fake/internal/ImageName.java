package io.cri4j.testing.fake.internal;

import java.util.regex.Pattern;

/**
 * A parsed, docker-normalised image reference ({@code nginx} → {@code docker.io/library/nginx:latest}), the
 * way containerd's CRI plugin normalises what kubelet sends.
 *
 * @param repository normalised repository, e.g. {@code docker.io/library/nginx}
 * @param tag        tag, or {@code null} when the reference only has a digest
 * @param digest     {@code sha256:<hex>} digest, or {@code null}
 */
public record ImageName(String repository, String tag, String digest) {

    private static final Pattern COMPONENT =
            Pattern.compile("[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*");
    private static final Pattern DOMAIN =
            Pattern.compile(
                    "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?");
    private static final Pattern TAG = Pattern.compile("[\\w][\\w.-]{0,127}");
    private static final Pattern DIGEST = Pattern.compile("sha256:[a-f0-9]{64}");

    /**
     * Parses and normalises a reference.
     *
     * @throws IllegalArgumentException naming the problem when the reference is not valid
     */
    public static ImageName parse(String reference) {
        if (reference == null || reference.isBlank()) {
            throw new IllegalArgumentException("image reference is empty");
        }
        String rest = reference;
        String digest = null;
        int at = rest.indexOf('@');
        if (at >= 0) {
            digest = rest.substring(at + 1);
            rest = rest.substring(0, at);
            if (!DIGEST.matcher(digest).matches()) {
                throw new IllegalArgumentException(
                        "invalid digest " + digest + " in image reference " + reference);
            }
        }
        String tag = null;
        int colon = rest.lastIndexOf(':');
        if (colon > rest.lastIndexOf('/')) {
            tag = rest.substring(colon + 1);
            rest = rest.substring(0, colon);
            if (!TAG.matcher(tag).matches()) {
                throw new IllegalArgumentException(
                        "invalid tag " + tag + " in image reference " + reference);
            }
        }
        String domain;
        String path;
        int slash = rest.indexOf('/');
        String first = slash < 0 ? null : rest.substring(0, slash);
        if (first != null
                && (first.contains(".") || first.contains(":") || first.equals("localhost"))) {
            domain = first;
            path = rest.substring(slash + 1);
            if (!DOMAIN.matcher(domain).matches()) {
                throw new IllegalArgumentException(
                        "invalid registry host " + domain + " in image reference " + reference);
            }
        } else {
            domain = "docker.io";
            path = rest;
        }
        if (domain.equals("docker.io") && !path.contains("/")) {
            path = "library/" + path;
        }
        for (String component : path.split("/", -1)) {
            if (!COMPONENT.matcher(component).matches()) {
                throw new IllegalArgumentException(
                        "invalid repository name component '"
                                + component
                                + "' in image reference "
                                + reference
                                + " (must be lowercase alphanumerics and separators)");
            }
        }
        if (tag == null && digest == null) {
            tag = "latest";
        }
        return new ImageName(domain + "/" + path, tag, digest);
    }

    /** The repo:tag form, or {@code null} when there is no tag. */
    public String repoTag() {
        return tag == null ? null : repository + ":" + tag;
    }

    /** The normalised form as given: repo:tag, repo@digest or repo:tag@digest. */
    public String normalized() {
        return repository + (tag == null ? "" : ":" + tag) + (digest == null ? "" : "@" + digest);
    }
}
