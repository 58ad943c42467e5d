package io.cri4j.nri.internal.mux;

import io.cri4j.nri.internal.NriProtocolException;
import io.netty.buffer.ByteBuf;

/**
 * Splits the byte stream of NRI's connection multiplexer ({@code containerd/nri}
 * {@code pkg/net/multiplex}) into its logical connections. Each mux frame is an 8-byte header (the
 * connection id and the payload length, big-endian unsigned 32-bit integers) and the payload;
 * the payloads of one connection, concatenated, are that connection's byte stream (ttrpc). The
 * payload is handed on as it arrives, never buffered. A payload longer than NRI's maximum
 * ({@value #MAX_PAYLOAD} bytes, a ttrpc header plus its largest message) means the stream is not
 * NRI's: {@link #feed} throws {@link NriProtocolException}. Not thread-safe.
 */
public final class MuxFrameParser {

    /** Length of the mux frame header. */
    public static final int HEADER_LENGTH = 8;

    /** The largest payload NRI's multiplexer writes: a ttrpc header plus 4 MiB. */
    public static final int MAX_PAYLOAD = 10 + (4 << 20); // a ttrpc header + ttrpc's 4 MiB

    /** Receives the demultiplexed bytes. */
    public interface Listener {
        /**
         * Bytes of connection {@code connId}'s stream, valid only during the call.
         */
        void data(int connId, ByteBuf bytes);
    }

    private final Listener listener;
    private final byte[] header = new byte[HEADER_LENGTH];
    private int headerFill;
    private long remaining = -1;
    private int connId;

    /** A parser reporting to {@code listener}. */
    public MuxFrameParser(Listener listener) {
        this.listener = listener;
    }

    /**
     * Consumes every readable byte of {@code in}.
     *
     * @throws NriProtocolException on a frame longer than NRI allows
     */
    public void feed(ByteBuf in) {
        while (in.isReadable()) {
            if (remaining < 0) {
                int n = Math.min(HEADER_LENGTH - headerFill, in.readableBytes());
                in.readBytes(header, headerFill, n);
                headerFill += n;
                if (headerFill < HEADER_LENGTH) {
                    return;
                }
                headerFill = 0;
                connId = getInt(header, 0);
                remaining = Integer.toUnsignedLong(getInt(header, 4));
                if (remaining > MAX_PAYLOAD) {
                    long length = remaining;
                    remaining = -1;
                    throw new NriProtocolException(
                            String.format(
                                    "not NRI's multiplexer: frame header %s announces %d bytes on "
                                            + "connection %d, more than the %d NRI allows",
                                    hex(header),
                                    length,
                                    Integer.toUnsignedLong(connId),
                                    MAX_PAYLOAD));
                }
                if (remaining == 0) {
                    remaining = -1;
                }
                continue;
            }
            int n = (int) Math.min(remaining, in.readableBytes());
            ByteBuf slice = in.readSlice(n);
            remaining -= n;
            if (remaining == 0) {
                remaining = -1;
            }
            listener.data(connId, slice);
        }
    }

    /**
     * Where the parser stands, for the error when the stream ends: {@code null} between frames,
     * else a description like {@code "3 of 8 header bytes"}.
     */
    public String partial() {
        if (remaining > 0) {
            return "a mux frame on connection "
                    + Integer.toUnsignedLong(connId)
                    + " lacking "
                    + remaining
                    + " payload bytes";
        }
        if (headerFill > 0) {
            return headerFill + " of " + HEADER_LENGTH + " mux header bytes";
        }
        return null;
    }

    private static int getInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24)
                | ((b[at + 1] & 0xff) << 16)
                | ((b[at + 2] & 0xff) << 8)
                | (b[at + 3] & 0xff);
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }
}
