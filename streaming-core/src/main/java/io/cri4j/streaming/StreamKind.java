package io.cri4j.streaming;

/** The kind of a streaming request; also the first path segment of its URL. */
public enum StreamKind {
    /** {@code /exec/{token}}. */
    EXEC("exec"),
    /** {@code /attach/{token}}. */
    ATTACH("attach"),
    /** {@code /portforward/{token}}. */
    PORT_FORWARD("portforward");

    private final String pathSegment;

    StreamKind(String pathSegment) {
        this.pathSegment = pathSegment;
    }

    /** The URL path segment, e.g. {@code portforward}. */
    public String pathSegment() {
        return pathSegment;
    }
}
