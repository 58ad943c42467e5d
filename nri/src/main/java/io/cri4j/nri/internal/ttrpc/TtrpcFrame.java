package io.cri4j.nri.internal.ttrpc;

import java.util.Objects;

/**
 * One ttrpc message frame (containerd/ttrpc {@code PROTOCOL.md}): a 10-byte header (data length
 * and stream id as big-endian unsigned 32-bit integers, then the message type and the flags, one
 * byte each) followed by the data.
 *
 * @param streamId the stream id, an unsigned 32-bit value (odd for client-initiated streams)
 * @param type {@link #REQUEST}, {@link #RESPONSE} or {@link #DATA}; other values are passed on
 * @param flags type-specific flags
 * @param data the message data (a protobuf {@code ttrpc.Request} or {@code ttrpc.Response})
 */
public record TtrpcFrame(int streamId, int type, int flags, byte[] data) {

    /** Length of the frame header in bytes. */
    public static final int HEADER_LENGTH = 10;

    /** The largest data length a frame may carry: 4 MiB. */
    public static final int MAX_DATA_LENGTH = 4 << 20;

    /** Message type: initiates a stream. */
    public static final int REQUEST = 0x1;

    /** Message type: final stream data, terminates the stream. */
    public static final int RESPONSE = 0x2;

    /** Message type: stream data. */
    public static final int DATA = 0x3;

    /** Flag of requests and data: no more data expected from the sender. */
    public static final int FLAG_REMOTE_CLOSED = 0x1;

    /** Flag of requests: the sender still sends data. */
    public static final int FLAG_REMOTE_OPEN = 0x2;

    /** Flag of data frames: the frame carries no data. */
    public static final int FLAG_NO_DATA = 0x4;

    /** Validates the ranges. */
    public TtrpcFrame {
        Objects.requireNonNull(data, "data");
        if (type < 0 || type > 0xff || flags < 0 || flags > 0xff) {
            throw new IllegalArgumentException("ttrpc type and flags are single bytes");
        }
    }

    /**
     * The frame as bytes on the wire.
     *
     * @throws io.grpc.StatusRuntimeException with {@code RESOURCE_EXHAUSTED} when the data exceeds
     *     {@link #MAX_DATA_LENGTH}
     */
    public byte[] encode() {
        checkLength(data.length);
        byte[] out = new byte[HEADER_LENGTH + data.length];
        putInt(out, 0, data.length);
        putInt(out, 4, streamId);
        out[8] = (byte) type;
        out[9] = (byte) flags;
        System.arraycopy(data, 0, out, HEADER_LENGTH, data.length);
        return out;
    }

    /** Throws the error ttrpc gives for a message longer than {@link #MAX_DATA_LENGTH}. */
    public static void checkLength(long length) {
        if (length > MAX_DATA_LENGTH) {
            throw TtrpcStatus.error(
                    io.grpc.Status.Code.RESOURCE_EXHAUSTED,
                    "message length "
                            + length
                            + " exceeds ttrpc's maximum message size of "
                            + MAX_DATA_LENGTH
                            + " bytes");
        }
    }

    /** The type's name in logs. */
    public static String typeName(int type) {
        return switch (type) {
            case REQUEST -> "request";
            case RESPONSE -> "response";
            case DATA -> "data";
            default -> "unknown type 0x" + Integer.toHexString(type);
        };
    }

    static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    @Override
    public String toString() {
        return "TtrpcFrame["
                + typeName(type)
                + " stream "
                + Integer.toUnsignedString(streamId)
                + " flags 0x"
                + Integer.toHexString(flags)
                + ", "
                + data.length
                + " bytes]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TtrpcFrame f
                && f.streamId == streamId
                && f.type == type
                && f.flags == flags
                && java.util.Arrays.equals(f.data, data);
    }

    @Override
    public int hashCode() {
        return Objects.hash(streamId, type, flags, java.util.Arrays.hashCode(data));
    }
}
