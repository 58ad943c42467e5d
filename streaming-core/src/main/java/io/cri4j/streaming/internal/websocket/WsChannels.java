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

    private final boolean base64;
    private final WriteGate gate;

    public WsChannels(boolean base64, WriteGate gate) {
        this.base64 = base64;
        this.gate = gate;
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

    /** Encodes data for a channel. */
    public WebSocketFrame encode(int ch, byte[] data, int off, int len) {
        if (base64) {
            String s =
                    (char) ('0' + ch)
                            + Base64.getEncoder()
                                    .encodeToString(
                                            java.util.Arrays.copyOfRange(data, off, off + len));
            return new TextWebSocketFrame(Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII));
        }
        // called by writer threads (the event loop only for the empty announcement)
        ByteBuf b = WriterBuffers.allocator().buffer(len + 1);
        b.writeByte(ch);
        b.writeBytes(data, off, len);
        return new BinaryWebSocketFrame(b);
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
