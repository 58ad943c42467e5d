package io.cri4j.nri.internal.ttrpc;

import static io.cri4j.nri.internal.Bytes.hex;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.nri.internal.Bytes;
import io.cri4j.nri.internal.NriProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ttrpc frame layout of containerd/ttrpc {@code PROTOCOL.md}: big-endian uint32 data length,
 * uint32 stream id, uint8 type, uint8 flags, data. Golden bytes written from that text, fed cut
 * at every byte boundary.
 */
class TtrpcFrameParserTest {

    /** A request on stream 1 with 3 data bytes, then a response on stream 1 with none. */
    private static final byte[] TWO_FRAMES =
            hex(
                    "00000003"
                            + "00000001"
                            + "01"
                            + "00"
                            + "0a0178"
                            + "00000000"
                            + "00000001"
                            + "02"
                            + "00");

    private final List<TtrpcFrame> frames = new ArrayList<>();
    private final List<String> oversized = new ArrayList<>();
    private final TtrpcFrameParser parser =
            new TtrpcFrameParser(
                    new TtrpcFrameParser.Listener() {
                        @Override
                        public void frame(TtrpcFrame frame) {
                            frames.add(frame);
                        }

                        @Override
                        public void oversized(int streamId, int type, long length) {
                            oversized.add(streamId + "/" + type + "/" + length);
                        }
                    });

    @Test
    void encodesTheHeaderAsTheProtocolSays() {
        assertThat(hex(new TtrpcFrame(1, TtrpcFrame.REQUEST, 0, hex("0a0178")).encode()))
                .isEqualTo("00000003" + "00000001" + "01" + "00" + "0a0178");
        assertThat(
                        hex(
                                new TtrpcFrame(
                                                0xfffffffd,
                                                TtrpcFrame.DATA,
                                                TtrpcFrame.FLAG_REMOTE_CLOSED
                                                        | TtrpcFrame.FLAG_NO_DATA,
                                                new byte[0])
                                        .encode()))
                .isEqualTo("00000000" + "fffffffd" + "03" + "05");
    }

    @Test
    void parsesFramesCutAtEveryByte() {
        Bytes.forEveryCut(
                TWO_FRAMES,
                pieces -> {
                    frames.clear();
                    pieces.forEach(parser::feed);
                    assertThat(frames)
                            .containsExactly(
                                    new TtrpcFrame(1, TtrpcFrame.REQUEST, 0, hex("0a0178")),
                                    new TtrpcFrame(1, TtrpcFrame.RESPONSE, 0, new byte[0]));
                    assertThat(parser.partial()).isNull();
                });
    }

    @Test
    void reportsWhereAStreamEndsInTheMiddleOfAFrame() {
        parser.feed(Unpooled.wrappedBuffer(TWO_FRAMES, 0, 4));
        assertThat(parser.partial()).isEqualTo("4 of 10 header bytes");
        parser.feed(Unpooled.wrappedBuffer(TWO_FRAMES, 4, 7));
        assertThat(parser.partial()).isEqualTo("1 of 3 data bytes of a frame on stream 1");
    }

    @Test
    void skipsAFrameOverFourMebibytesWithoutBufferingItAndGoesOn() {
        int length = TtrpcFrame.MAX_DATA_LENGTH + 1;
        ByteBuf big = Unpooled.buffer().writeInt(length).writeInt(7).writeByte(1).writeByte(0);
        parser.feed(big);
        byte[] chunk = new byte[64 * 1024];
        int left = length;
        while (left > 0) {
            int n = Math.min(left, chunk.length);
            parser.feed(Unpooled.wrappedBuffer(chunk, 0, n));
            left -= n;
            if (left > 0) {
                assertThat(oversized).isEmpty();
            }
        }
        assertThat(oversized).containsExactly("7/1/" + length);
        parser.feed(Unpooled.wrappedBuffer(TWO_FRAMES));
        assertThat(frames).hasSize(2);
    }

    @Test
    void acceptsExactlyFourMebibytes() {
        byte[] data = new byte[TtrpcFrame.MAX_DATA_LENGTH];
        parser.feed(
                Unpooled.wrappedBuffer(new TtrpcFrame(3, TtrpcFrame.REQUEST, 0, data).encode()));
        assertThat(frames).hasSize(1);
        assertThat(frames.get(0).data()).hasSize(TtrpcFrame.MAX_DATA_LENGTH);
        assertThatThrownBy(
                        () ->
                                new TtrpcFrame(3, 1, 0, new byte[TtrpcFrame.MAX_DATA_LENGTH + 1])
                                        .encode())
                .hasMessageContaining(
                        "message length 4194305 exceeds ttrpc's maximum message size of 4194304");
    }

    @Test
    void refusesAHeaderWhoseReservedByteIsSet() {
        assertThatThrownBy(() -> parser.feed(Unpooled.wrappedBuffer(hex("474554202f20485454502f"))))
                .isInstanceOf(NriProtocolException.class)
                .hasMessage(
                        "not a ttrpc frame: header 474554202f2048545450 has a non-zero reserved "
                                + "first byte (a data length of 1195725856 bytes)");
    }
}
