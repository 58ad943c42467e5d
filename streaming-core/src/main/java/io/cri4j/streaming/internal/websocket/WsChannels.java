package io.cri4j.streaming.internal.websocket;

import io.cri4j.streaming.internal.io.WriteGate;
import io.cri4j.streaming.internal.io.WriterBuffers;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The channel framing of {@code channel.k8s.io} (binary: one channel byte, then data) and
 * {@code base64.channel.k8s.io} (text: the channel as an ASCII digit, then base64 data).
 */
public final class WsChannels {
    /** remotecommand.StreamClose: a v5 client's signal that it closed a channel. */
    public static final int CLOSE_SIGNAL = 255;

    static final int MAX_MESSAGE = 32 * 1024;

    /** RFC 6455 section 5.2: FIN and the binary opcode, the first byte of a whole binary frame. */
    private static final int FIN_BINARY = 0x82;

    private final boolean base64;
    private final boolean server;
    private final WriteGate gate;

    private WsChannels(boolean base64, boolean server, WriteGate gate) {
        this.base64 = base64;
        this.server = server;
        this.gate = gate;
    }

    /** The server's end: its binary messages go out as whole frames, encoded by the writer. */
    public static WsChannels server(boolean base64, WriteGate gate) {
        return new WsChannels(base64, true, gate);
    }

    /** A client's end (binary): Netty's encoder masks its frames, as a client's must be. */
    public static WsChannels client(WriteGate gate) {
        return new WsChannels(false, false, gate);
    }

    /** A decoded inbound message. */
    public record Message(int channel, byte[] data) {}

    /** Decodes a data frame, or returns null for an empty or invalid one. */
    public Message decode(WebSocketFrame frame) {
        ByteBuf c = frame.content();
        if (!c.isReadable()) {
            return null;
        }
        if (base64 || frame instanceof TextWebSocketFrame) {
            String s = c.toString(StandardCharsets.US_ASCII);
            int ch = s.charAt(0) - '0';
            try {
                return new Message(ch, Base64.getDecoder().decode(s.substring(1)));
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        int ch = c.readUnsignedByte();
        byte[] data = new byte[c.readableBytes()];
        c.readBytes(data);
        return new Message(ch, data);
    }

    /**
     * Encodes data for a channel: a server's binary message as the bytes of its frame (the
     * connection's frame encoder passes them on as they are), anything else as a frame for that
     * encoder.
     */
    public Object encode(int ch, byte[] data, int off, int len) {
        if (base64) {
            String s =
                    (char) ('0' + ch)
                            + Base64.getEncoder()
                                    .encodeToString(
                                            java.util.Arrays.copyOfRange(data, off, off + len));
            return new TextWebSocketFrame(Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII));
        }
        // called by writer threads (the event loop only for the empty announcement)
        if (server) {
            return serverFrame(ch, data, off, len);
        }
        ByteBuf b = WriterBuffers.allocator().buffer(len + 1);
        b.writeByte(ch);
        b.writeBytes(data, off, len);
        return new BinaryWebSocketFrame(b);
    }

    /**
     * A whole unmasked binary frame (RFC 6455 section 5.2), as Netty's encoder writes a server's:
     * FIN, RSV 0, opcode 2; the payload length in 7 bits, or 126 and 16 bits, or 127 and 64 bits;
     * then the channel byte and the data. Encoded here, on the writer's thread, in one buffer: the
     * event loop only writes it out (where the encoder would add a header buffer per frame).
     */
    static ByteBuf serverFrame(int ch, byte[] data, int off, int len) {
        int payload = len + 1;
        int header = payload <= 125 ? 2 : payload <= 0xFFFF ? 4 : 10;
        ByteBuf b = WriterBuffers.allocator().buffer(header + payload);
        b.writeByte(FIN_BINARY);
        if (payload <= 125) {
            b.writeByte(payload);
        } else if (payload <= 0xFFFF) {
            b.writeByte(126);
            b.writeShort(payload);
        } else {
            b.writeByte(127);
            b.writeLong(payload);
        }
        b.writeByte(ch);
        b.writeBytes(data, off, len);
        return b;
    }

    /** Writes one message (blocking for back-pressure when called off the event loop). */
    public void write(int ch, byte[] data, int off, int len) throws IOException {
        gate.write(encode(ch, data, off, len));
    }

    /** An output stream writing to a channel; close() only stops it (no per-channel close frame). */
    public OutputStream output(int ch) {
        return new OutputStream() {
            private volatile boolean closed;

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                java.util.Objects.checkFromIndexSize(off, len, b.length);
                if (closed) {
                    throw new IOException("channel " + ch + " closed");
                }
                while (len > 0) {
                    int n = Math.min(len, MAX_MESSAGE);
                    WsChannels.this.write(ch, b, off, n);
                    off += n;
                    len -= n;
                }
            }

            @Override
            public void close() {
                closed = true;
            }
        };
    }
}
