package io.cri4j.streaming.internal.websocket;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket08FrameEncoder;
import java.util.Random;
import org.junit.jupiter.api.Test;

class WsChannelsTest {
    @Test
    void serverFramesAreTheBytesNettysServerEncoderWrites() {
        Random r = new Random(7);
        // each length encoding and its edges (payload = the channel byte and the data)
        for (int len : new int[] {0, 1, 124, 125, 126, 1000, 32 * 1024 - 1, 65534, 65535, 70000}) {
            byte[] data = new byte[len + 3];
            r.nextBytes(data);
            int ch = len % 5;
            ByteBuf ours = WsChannels.serverFrame(ch, data, 2, len);

            EmbeddedChannel netty = new EmbeddedChannel(new WebSocket08FrameEncoder(false));
            ByteBuf payload = Unpooled.buffer(len + 1).writeByte(ch).writeBytes(data, 2, len);
            netty.writeOutbound(new BinaryWebSocketFrame(payload));
            ByteBuf theirs = written(netty);
            assertThat(ByteBufUtil.hexDump(ours, 0, Math.min(16, ours.readableBytes())))
                    .as("first bytes, payload %d", len + 1)
                    .isEqualTo(
                            ByteBufUtil.hexDump(theirs, 0, Math.min(16, theirs.readableBytes())));
            assertThat(ByteBufUtil.equals(ours, theirs)).as("payload %d", len + 1).isTrue();
            ours.release();
            theirs.release();
            netty.finishAndReleaseAll();
        }
    }

    @Test
    void aServersBinaryMessagesPassTheFrameEncoderAsTheyAre() {
        EmbeddedChannel netty = new EmbeddedChannel(new WebSocket08FrameEncoder(false));
        Object frame = WsChannels.server(false, null).encode(1, new byte[] {9, 8, 7}, 0, 3);
        netty.writeOutbound(frame);
        ByteBuf out = netty.readOutbound();
        assertThat(ByteBufUtil.hexDump(out)).isEqualTo("820401090807");
        out.release();
        assertThat((Object) netty.readOutbound()).isNull();
        netty.finishAndReleaseAll();
    }

    @Test
    void aClientsMessagesAreFramesForTheEncoderToMask() {
        Object frame = WsChannels.client(null).encode(0, new byte[] {1, 2}, 0, 2);
        assertThat(frame).isInstanceOf(BinaryWebSocketFrame.class);
        EmbeddedChannel netty = new EmbeddedChannel(new WebSocket08FrameEncoder(true));
        netty.writeOutbound(frame);
        ByteBuf out = written(netty);
        // FIN and binary; the mask bit and 3 payload bytes; a 4-byte key; 3 masked bytes
        assertThat(out.getUnsignedByte(0)).isEqualTo((short) 0x82);
        assertThat(out.getUnsignedByte(1)).isEqualTo((short) (0x80 | 3));
        assertThat(out.readableBytes()).isEqualTo(2 + 4 + 3);
        out.release();
        netty.finishAndReleaseAll();
    }

    /** What the encoder wrote, its buffers joined. */
    private static ByteBuf written(EmbeddedChannel ch) {
        ByteBuf out = Unpooled.buffer();
        ByteBuf part;
        while ((part = ch.readOutbound()) != null) {
            out.writeBytes(part);
            part.release();
        }
        return out;
    }
}
