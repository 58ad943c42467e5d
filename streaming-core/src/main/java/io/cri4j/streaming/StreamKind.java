package io.cri4j.streaming;

/** The kind of a streaming request; also the first path segment of its URL. */
public enum StreamKind {
    /** {@code /exec/{token}}. */
    EXEC("exec"),
    /** {@code /attach/{token}}. */
    ATTACH("attach"),
    /** {@code /portforward/{token}}. */
    PORT_FORWARD("portforward"),
    /**
     * {@code /imagePullProgress}: image pull progress (KEP-5334's shape), served by imagepull-core's
     * {@code PullProgressServer} with the same {@link StreamAuthorizer} hook; the target is the image
     * watched, empty for the list and the page. The streaming server serves no such URLs.
     */
    IMAGE_PULL_PROGRESS("imagePullProgress");

    private final String pathSegment;

    StreamKind(String pathSegment) {
        this.pathSegment = pathSegment;
    }

    /** The URL path segment, e.g. {@code portforward}. */
    public String pathSegment() {
        return pathSegment;
    }
}
