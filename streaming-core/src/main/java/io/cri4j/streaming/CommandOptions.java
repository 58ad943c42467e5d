package io.cri4j.streaming;

/**
 * Which streams a client opens for an exec or attach; must match what the CRI request that
 * produced the URL asked for.
 *
 * @param stdin send stdin
 * @param stdout receive stdout
 * @param stderr receive stderr (not with a TTY)
 * @param tty the session runs in a terminal (resize events are sent)
 */
public record CommandOptions(boolean stdin, boolean stdout, boolean stderr, boolean tty) {
    /** Validates like kubelet. */
    public CommandOptions {
        if (tty && stderr) {
            throw new IllegalArgumentException("tty and stderr cannot both be true");
        }
        if (!stdin && !stdout && !stderr) {
            throw new IllegalArgumentException("one of stdin, stdout, or stderr must be set");
        }
    }
}
