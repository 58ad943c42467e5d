package io.cri4j.streaming;

/**
 * A terminal size sent by the client when a TTY session starts or its window changes
 * (remotecommand JSON {@code {"Width":W,"Height":H}}).
 *
 * @param width columns, 0..65535
 * @param height rows, 0..65535
 */
public record TerminalSize(int width, int height) {
    /** Validates the range of an unsigned 16-bit size, as upstream's {@code uint16} fields. */
    public TerminalSize {
        if (width < 0 || width > 0xFFFF || height < 0 || height > 0xFFFF) {
            throw new IllegalArgumentException(
                    "terminal size out of range: " + width + "x" + height);
        }
    }
}
