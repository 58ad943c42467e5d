package io.cri4j.proxy.internal.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** HTTP/2 frames for the relay's unit tests: written as a peer writes them, read back. */
final class Wire {
    static final int DATA = 0,
            HEADERS = 1,
            RST = 3,
            SETTINGS = 4,
            PING = 6,
            GOAWAY = 7,
            WINDOW_UPDATE = 8,
            CONTINUATION = 9;
    static final int END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4;
    static final long NO_ERROR = 0x0,
            PROTOCOL_ERROR = 0x1,
            FRAME_SIZE_ERROR = 0x6,
            CANCEL = 0x8,
            ENHANCE_YOUR_CALM = 0xb;
    static final String VERSION = "/runtime.v1.RuntimeService/Version";

    private Wire() {}

    /** A frame as it went over the wire. */
    record Frame(int type, int flags, int stream, byte[] payload) {
        boolean endStream() {
            return (flags & END_STREAM) != 0;
        }

        boolean ack() {
            return (flags & ACK) != 0;
        }

        /** The first 32 bits: a WINDOW_UPDATE's increment, an RST_STREAM's code. */
        long int0() {
            return ByteBuffer.wrap(payload).getInt() & 0xffffffffL;
        }

        long pingData() {
            return ByteBuffer.wrap(payload).getLong();
        }

        int goAwayLastStream() {
            return ByteBuffer.wrap(payload).getInt() & 0x7fffffff;
        }

        long goAwayCode() {
            return ByteBuffer.wrap(payload, 4, 4).getInt() & 0xffffffffL;
        }

        String goAwayDebug() {
            return new String(payload, 8, payload.length - 8, StandardCharsets.UTF_8);
        }

        /** A header block (the whole block: no CONTINUATION), decoded. */
        Http2Headers headers() {
            return decode(payload);
        }

        @Override
        public String toString() {
            return "Frame[type="
                    + type
                    + ", flags="
                    + flags
                    + ", stream="
                    + stream
                    + ", "
                    + payload.length
                    + " bytes]";
        }
    }

    static Http2Headers decode(byte[] block) {
        try {
            return new DefaultHttp2HeadersDecoder(true)
                    .decodeHeaders(0, Unpooled.wrappedBuffer(block));
        } catch (Http2Exception e) {
            throw new AssertionError("not a header block: " + e.getMessage(), e);
        }
    }

    static ByteBuf frame(int type, int flags, int stream, byte[] payload) {
        ByteBuf b = Unpooled.buffer(9 + payload.length);
        b.writeMedium(payload.length).writeByte(type).writeByte(flags).writeInt(stream);
        b.writeBytes(payload);
        return b;
    }

    static ByteBuf data(int stream, byte[] payload, boolean end) {
        return frame(DATA, end ? END_STREAM : 0, stream, payload);
    }

    static ByteBuf ping(long data, boolean ack) {
        return frame(PING, ack ? ACK : 0, 0, ByteBuffer.allocate(8).putLong(data).array());
    }

    static ByteBuf rst(int stream, long code) {
        return frame(RST, 0, stream, ByteBuffer.allocate(4).putInt((int) code).array());
    }

    static ByteBuf windowUpdate(int stream, int increment) {
        return frame(WINDOW_UPDATE, 0, stream, ByteBuffer.allocate(4).putInt(increment).array());
    }

    static ByteBuf goAway(int lastStream, long code) {
        return frame(
                GOAWAY, 0, 0, ByteBuffer.allocate(8).putInt(lastStream).putInt((int) code).array());
    }

    /** SETTINGS with these {@code id, value} pairs. */
    static ByteBuf settings(int... idValue) {
        ByteBuffer b = ByteBuffer.allocate(idValue.length * 3);
        for (int i = 0; i < idValue.length; i += 2) {
            b.putShort((short) idValue[i]).putInt(idValue[i + 1]);
        }
        return frame(SETTINGS, 0, 0, b.array());
    }

    static ByteBuf settingsAck() {
        return frame(SETTINGS, ACK, 0, new byte[0]);
    }

    /** A header block of {@code h} as a peer with no dynamic table encodes it. */
    static byte[] block(Http2Headers h) {
        DefaultHttp2HeadersEncoder encoder =
                new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);
        ByteBuf b = Unpooled.buffer();
        try {
            encoder.maxHeaderTableSize(0);
            encoder.encodeHeaders(0, h, b);
            return ByteBufUtil.getBytes(b);
        } catch (Http2Exception e) {
            throw new AssertionError(e);
        } finally {
            b.release();
        }
    }

    static ByteBuf headers(int stream, Http2Headers h, boolean end) {
        return frame(HEADERS, END_HEADERS | (end ? END_STREAM : 0), stream, block(h));
    }

    /** A gRPC request's headers for {@code path}. */
    static Http2Headers request(String path) {
        return new DefaultHttp2Headers()
                .method("POST")
                .scheme("http")
                .path(path)
                .authority("localhost")
                .add("content-type", "application/grpc")
                .add("te", "trailers");
    }

    static Http2Headers response() {
        return new DefaultHttp2Headers().status("200").add("content-type", "application/grpc");
    }

    static Http2Headers trailers(int grpcStatus) {
        return new DefaultHttp2Headers().add("grpc-status", Integer.toString(grpcStatus));
    }

    /** A gRPC message of {@code n} bytes (all {@code fill}) with its 5-byte prefix. */
    static byte[] message(int n, int fill) {
        byte[] b = new byte[5 + n];
        ByteBuffer.wrap(b).put((byte) 0).putInt(n);
        java.util.Arrays.fill(b, 5, b.length, (byte) fill);
        return b;
    }

    /**
     * One peer of the relay: an {@link EmbeddedChannel} one leg runs on, the frames the relay wrote
     * to it (in order, read as they come), and frames written to the relay as this peer.
     */
    static final class Peer {
        final EmbeddedChannel ch;
        private final ByteBuf received = Unpooled.buffer();
        private final ArrayDeque<Frame> frames = new ArrayDeque<>();
        private int prefaceLeft;

        /** Buffers the relay wrote (each a pipeline write). */
        int writes;

        /** @param expectPreface the relay writes the client preface first (a backend peer) */
        Peer(EmbeddedChannel ch, boolean expectPreface) {
            this.ch = ch;
            this.prefaceLeft = expectPreface ? FrameWriter.PREFACE.length : 0;
        }

        /** Writes {@code frames} to the relay, each as a read of its own, then runs due tasks. */
        void send(ByteBuf... bufs) {
            for (ByteBuf b : bufs) {
                ch.writeInbound(b);
            }
        }

        /** Reads what the relay wrote since the last look. */
        private void poll() {
            for (Object o; (o = ch.readOutbound()) != null; ) {
                ByteBuf b = (ByteBuf) o;
                writes++;
                received.writeBytes(b);
                b.release();
            }
            if (prefaceLeft > 0 && received.readableBytes() >= prefaceLeft) {
                byte[] preface = new byte[prefaceLeft];
                received.readBytes(preface);
                if (!java.util.Arrays.equals(preface, FrameWriter.PREFACE)) {
                    throw new AssertionError("no HTTP/2 client preface");
                }
                prefaceLeft = 0;
            }
            while (prefaceLeft == 0 && received.readableBytes() >= 9) {
                int len = received.getUnsignedMedium(received.readerIndex());
                if (received.readableBytes() < 9 + len) {
                    break;
                }
                received.skipBytes(3);
                int type = received.readUnsignedByte();
                int flags = received.readUnsignedByte();
                int stream = received.readInt() & 0x7fffffff;
                byte[] payload = new byte[len];
                received.readBytes(payload);
                frames.add(new Frame(type, flags, stream, payload));
            }
            received.discardReadBytes();
        }

        /** Every frame the relay wrote since the last look, SETTINGS and WINDOW_UPDATE included. */
        List<Frame> all() {
            poll();
            List<Frame> all = new ArrayList<>(frames);
            frames.clear();
            return all;
        }

        /** The frames since the last look, but for SETTINGS and WINDOW_UPDATE. */
        List<Frame> frames() {
            return all().stream()
                    .filter(f -> f.type() != SETTINGS && f.type() != WINDOW_UPDATE)
                    .toList();
        }

        /** The WINDOW_UPDATEs since the last look (others are dropped). */
        List<Frame> windowUpdates() {
            return all().stream().filter(f -> f.type() == WINDOW_UPDATE).toList();
        }

        void release() {
            all();
            received.release();
        }
    }
}
