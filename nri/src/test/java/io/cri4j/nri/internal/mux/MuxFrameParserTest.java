package io.cri4j.nri.internal.mux;

import static io.cri4j.nri.internal.Bytes.hex;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.nri.internal.Bytes;
import io.cri4j.nri.internal.NriProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.ByteArrayOutputStream;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * NRI's multiplexer framing ({@code containerd/nri pkg/net/multiplex/mux.go}): 8-byte header of
 * big-endian uint32 connection id and uint32 payload length. Golden bytes written from that
 * code, fed cut at every byte boundary; and the cut Go's bufio-based ttrpc needs on writes.
 */
class MuxFrameParserTest {

    /** "abc" on connection 1, nothing on 2, "de" on 2, "f" on 1. */
    private static final byte[] STREAM =
            hex(
                    "00000001"
                            + "00000003"
                            + "616263"
                            + "00000002"
                            + "00000000"
                            + "00000002"
                            + "00000002"
                            + "6465"
                            + "00000001"
                            + "00000001"
                            + "66");

    private final Map<Integer, ByteArrayOutputStream> streams = new TreeMap<>();
    private final MuxFrameParser parser =
            new MuxFrameParser(
                    (conn, bytes) ->
                            streams.computeIfAbsent(conn, c -> new ByteArrayOutputStream())
                                    .writeBytes(ByteBufUtil.getBytes(bytes)));

    @Test
    void demultiplexesCutAtEveryByte() {
        Bytes.forEveryCut(
                STREAM,
                pieces -> {
                    streams.clear();
                    pieces.forEach(parser::feed);
                    assertThat(streams.keySet()).containsExactly(1, 2);
                    assertThat(streams.get(1).toString()).isEqualTo("abcf");
                    assertThat(streams.get(2).toString()).isEqualTo("de");
                    assertThat(parser.partial()).isNull();
                });
    }

    @Test
    void refusesAFrameLongerThanNriAllows() {
        assertThat(MuxFrameParser.MAX_PAYLOAD).isEqualTo(10 + 4 * 1024 * 1024);
        parser.feed(Unpooled.wrappedBuffer(hex("00000001" + "0040000a")));
        assertThat(parser.partial())
                .isEqualTo("a mux frame on connection 1 lacking 4194314 payload bytes");
        MuxFrameParser fresh = new MuxFrameParser((c, b) -> {});
        assertThatThrownBy(() -> fresh.feed(Unpooled.wrappedBuffer(hex("00000001" + "0040000b"))))
                .isInstanceOf(NriProtocolException.class)
                .hasMessage(
                        "not NRI's multiplexer: frame header 000000010040000b announces 4194315 bytes "
                                + "on connection 1, more than the 4194314 NRI allows");
    }

    @Test
    void reportsAStreamThatEndsInAHeader() {
        parser.feed(Unpooled.wrappedBuffer(hex("000000")));
        assertThat(parser.partial()).isEqualTo("3 of 8 mux header bytes");
    }

    @Test
    void writesSmallTtrpcFramesAsOneMuxFrame() {
        byte[] frame = new byte[MuxFraming.GO_BUFIO_SIZE];
        frame[0] = 7;
        ByteBuf out = MuxFraming.frames(UnpooledByteBufAllocator.DEFAULT, 2, frame);
        assertThat(out.readableBytes()).isEqualTo(8 + 4096);
        assertThat(hex(ByteBufUtil.getBytes(out, 0, 9))).isEqualTo("00000002" + "00001000" + "07");
    }

    @Test
    void cutsLargerTtrpcFramesWhereGosBufioWriterDoes() {
        for (int size : new int[] {4097, 8192, 8193, 100_000}) {
            byte[] frame = new byte[size];
            for (int i = 0; i < size; i++) {
                frame[i] = (byte) i;
            }
            ByteBuf out = MuxFraming.frames(UnpooledByteBufAllocator.DEFAULT, 1, frame);
            assertThat(out.getInt(0)).isEqualTo(1);
            assertThat(out.getInt(4)).as("first mux frame: the first 4096 bytes").isEqualTo(4096);
            assertThat(out.getInt(8 + 4096)).isEqualTo(1);
            assertThat(out.getInt(8 + 4096 + 4)).as("second: all the rest").isEqualTo(size - 4096);
            assertThat(out.readableBytes()).isEqualTo(size + 16);
            streams.clear();
            parser.feed(out);
            assertThat(streams.get(1).toByteArray()).isEqualTo(frame);
        }
    }
}
