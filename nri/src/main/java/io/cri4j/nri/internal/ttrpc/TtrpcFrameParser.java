package io.cri4j.nri.internal.ttrpc;

import io.cri4j.nri.internal.NriProtocolException;
import io.netty.buffer.ByteBuf;

/**
 * Splits a ttrpc byte stream into {@link TtrpcFrame}s, fed in pieces of any size. A frame whose
 * data length exceeds {@link TtrpcFrame#MAX_DATA_LENGTH} is skipped without being buffered and
 * reported to {@link Listener#oversized}, as ttrpc does (the peer then answers that stream with
 * {@code RESOURCE_EXHAUSTED}). A header whose first byte, reserved by the protocol and always
 * zero for lengths below 16 MiB, is not zero means the stream is not ttrpc: {@link #feed} throws
 * {@link NriProtocolException} and the connection has to be closed. Not thread-safe.
 */
public final class TtrpcFrameParser {

    /** Receives what the parser finds. */
    public interface Listener {
        /** A complete frame. */
        void frame(TtrpcFrame frame);

        /** A frame too long to accept, whose data was skipped. */
        void oversized(int streamId, int type, long length);
    }

    private final Listener listener;
    private final byte[] header = new byte[TtrpcFrame.HEADER_LENGTH];
    private int headerFill;
    private byte[] data;
    private int dataFill;
    private long skip;
    private long skipLength;
    private int skipStream;
    private int skipType;

    /** A parser reporting to {@code listener}. */
    public TtrpcFrameParser(Listener listener) {
        this.listener = listener;
    }

    /**
     * Consumes every readable byte of {@code in}, reporting each frame it completes.
     *
     * @throws NriProtocolException when the bytes are not a ttrpc stream
     */
    public void feed(ByteBuf in) {
        while (in.isReadable()) {
            if (skip > 0) {
                int n = (int) Math.min(skip, in.readableBytes());
                in.skipBytes(n);
                skip -= n;
                if (skip == 0) {
                    listener.oversized(skipStream, skipType, skipLength);
                }
                continue;
            }
            if (data == null) {
                int n = Math.min(TtrpcFrame.HEADER_LENGTH - headerFill, in.readableBytes());
                in.readBytes(header, headerFill, n);
                headerFill += n;
                if (headerFill < TtrpcFrame.HEADER_LENGTH) {
                    return;
                }
                headerFill = 0;
                if (header[0] != 0) {
                    throw new NriProtocolException(
                            String.format(
                                    "not a ttrpc frame: header %s has a non-zero reserved first byte "
                                            + "(a data length of %d bytes)",
                                    hex(header), Integer.toUnsignedLong(getInt(header, 0))));
                }
                long length = Integer.toUnsignedLong(getInt(header, 0));
                int stream = getInt(header, 4);
                if (length > TtrpcFrame.MAX_DATA_LENGTH) {
                    skip = length;
                    skipLength = length;
                    skipStream = stream;
                    skipType = header[8] & 0xff;
                    continue;
                }
                data = new byte[(int) length];
                dataFill = 0;
            }
            int n = Math.min(data.length - dataFill, in.readableBytes());
            in.readBytes(data, dataFill, n);
            dataFill += n;
            if (dataFill == data.length) {
                TtrpcFrame f =
                        new TtrpcFrame(getInt(header, 4), header[8] & 0xff, header[9] & 0xff, data);
                data = null;
                listener.frame(f);
            }
        }
    }

    /**
     * Where the parser stands, for the error when the stream ends: {@code null} between frames,
     * else a description like {@code "4 of 10 header bytes"}.
     */
    public String partial() {
        if (skip > 0) {
            return (skipLength - skip) + " of " + skipLength + " bytes of an oversized frame";
        }
        if (data != null) {
            return dataFill
                    + " of "
                    + data.length
                    + " data bytes of a frame on stream "
                    + Integer.toUnsignedString(getInt(header, 4));
        }
        if (headerFill > 0) {
            return headerFill + " of " + TtrpcFrame.HEADER_LENGTH + " header bytes";
        }
        return null;
    }

    static int getInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24)
                | ((b[at + 1] & 0xff) << 16)
                | ((b[at + 2] & 0xff) << 8)
                | (b[at + 3] & 0xff);
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }
}
