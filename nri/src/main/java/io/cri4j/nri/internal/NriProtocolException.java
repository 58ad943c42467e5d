package io.cri4j.nri.internal;

/**
 * The bytes on a connection are not the protocol expected there (NRI's multiplexer or ttrpc); the
 * connection must close.
 */
public final class NriProtocolException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** With a message naming what was wrong. */
    public NriProtocolException(String message) {
        super(message);
    }
}
