package io.cri4j.testing.real.internal;

/** A daemon the harness started exited while it was expected to run. */
public final class DaemonExitedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** Creates the exception with a message that includes the daemon's log tail. */
    public DaemonExitedException(String message) {
        super(message);
    }
}
