package io.cri4j.streaming;

import java.io.IOException;

/** A streaming request the server refused (HTTP status other than 101) or a protocol failure. */
public class StreamingException extends IOException {
    private static final long serialVersionUID = 1L;
    private final int httpStatus;

    public StreamingException(String message, int httpStatus) {
        super(message);
        this.httpStatus = httpStatus;
    }

    public StreamingException(String message, Throwable cause) {
        super(message, cause);
        this.httpStatus = 0;
    }

    /** The HTTP status of a refused upgrade, or 0. */
    public int httpStatus() {
        return httpStatus;
    }
}
