package io.cri4j.nri.internal;

/** The bytes on a connection are not the protocol expected there; the connection must close. */
public final class TtrpcProtocolException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** With a message naming what was wrong. */
    public TtrpcProtocolException(String message) {
        super(message);
    }
}
