package io.cri4j.streaming.internal.remotecommand;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The stdout/stderr splitter in front of Netty's WebSocket decoder yields the same messages in the
 * same order, and the same protocol errors, as Netty's decoder alone, however the bytes are cut
 * into socket reads.
 */
class WsChannelSplitterTest {
    private static final int MAX = 4 << 20;
    private static final Random RANDOM = new Random(7);

    /** A server-to-client frame (unmasked unless {@code mask}); {@code longLength} forces the 64-bit length form. */
    private static byte[] frame(
            boolean fin, int rsv, int opcode, boolean mask, byte[] payload, boolean longLength) {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write((fin ? 0x80 : 0) | rsv << 4 | opcode);
        int m = mask ? 0x80 : 0;
        int n = payload.length;
        if (longLength) {
            f.write(m | 127);
            for (int i = 7; i >= 0; i--) {
                f.write((int) ((long) n >>> (8 * i)));
            }
        } else if (n < 126) {
            f.write(m | n);
        } else if (n < 65536) {
            f.write(m | 126);
            f.write(n >>> 8);
            f.write(n);
        } else {
            return frame(fin, rsv, opcode, mask, payload, true);
        }
        if (mask) {
            f.writeBytes(new byte[] {0, 0, 0, 0}); // zero key: payload unchanged
        }
        f.writeBytes(payload);
        return f.toByteArray();
    }

    private static byte[] binary(int channel, int n) {
        byte[] p = new byte[n + 1];
        RANDOM.nextBytes(p);
        p[0] = (byte) channel;
        return frame(true, 0, 2, false, p, false);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] concat(List<byte[]> frames) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        frames.forEach(all::writeBytes);
        return all.toByteArray();
    }

    /** What an exec session's server may send: every kind of frame the splitter must pass by. */
    private static List<byte[]> session() {
        List<byte[]> f = new ArrayList<>();
        f.add(frame(true, 0, 2, false, new byte[] {1}, false)); // announcement: channel byte only
        f.add(binary(1, 32 * 1024));
        f.add(binary(2, 10));
        f.add(frame(true, 0, 9, false, bytes("ping"), false));
        f.add(binary(1, 100 * 1024)); // 64-bit length
        for (int i = 0; i < 500; i++) {
            f.add(binary(1 + i % 2, 1 + i % 30));
        }
        f.add(
                frame(
                        false,
                        0,
                        2,
                        false,
                        new byte[] {1, 'f', 'r'},
                        false)); // fragmented stdout message
        f.add(frame(true, 0, 10, false, bytes("pong in between"), false));
        f.add(frame(false, 0, 0, false, bytes("ag"), false));
        f.add(frame(true, 0, 0, false, bytes("ment"), false));
        f.add(frame(true, 0, 1, false, bytes("1text"), false));
        f.add(binary(3, 40)); // status channel: not split off
        f.add(frame(true, 0, 2, false, bytes("\u0001x"), true)); // 64-bit form for 2 bytes: invalid
        return f;
    }

    /** The splitter in front of Netty's client-side frame decoder, as an exec client has them. */
    private static EmbeddedChannel splitter() {
        return new EmbeddedChannel(
                new WsChannelSplitter(MAX), new WebSocket13FrameDecoder(false, false, MAX, false));
    }

    private static List<String> decode(boolean split, byte[] bytes, List<Integer> cuts) {
        EmbeddedChannel ch =
                split
                        ? splitter()
                        : new EmbeddedChannel(
                                new WebSocket13FrameDecoder(false, false, MAX, false));
        List<String> events = new ArrayList<>();
        List<ByteBuf> inputs = new ArrayList<>();
        int from = 0;
        List<Integer> ends = new ArrayList<>(cuts);
        ends.add(bytes.length);
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        int[] dataChannel = {-1};
        for (int to : ends) {
            ByteBuf in = Unpooled.buffer(2 * (to - from)).writeBytes(bytes, from, to - from);
            inputs.add(in);
            from = to;
            String failure = null;
            try {
                ch.writeInbound(in);
            } catch (Exception e) {
                failure = "EXCEPTION " + e.getClass().getSimpleName();
            }
            Object m;
            while ((m = ch.readInbound()) != null) {
                try {
                    int channel;
                    ByteBuf content;
                    if (m instanceof WsChannelSplitter.ChannelData d) {
                        channel = d.channel();
                        content = d.content();
                    } else if (m instanceof BinaryWebSocketFrame b
                            && b.isFinalFragment()
                            && b.content().readableBytes() >= 2
                            && (b.content().getByte(0) == 1 || b.content().getByte(0) == 2)) {
                        channel = b.content().getByte(0);
                        content = b.content().slice(1, b.content().readableBytes() - 1);
                    } else {
                        flush(events, data, dataChannel);
                        WebSocketFrame w = (WebSocketFrame) m;
                        events.add(
                                w.getClass().getSimpleName()
                                        + " fin="
                                        + w.isFinalFragment()
                                        + " "
                                        + ByteBufUtil.hexDump(w.content()));
                        continue;
                    }
                    if (channel != dataChannel[0]) {
                        flush(events, data, dataChannel);
                        dataChannel[0] = channel;
                    }
                    data.writeBytes(ByteBufUtil.getBytes(content));
                } finally {
                    ReferenceCountUtil.release(m);
                }
            }
            if (failure != null) {
                flush(events, data, dataChannel);
                events.add(failure);
                break;
            }
        }
        flush(events, data, dataChannel);
        ch.finishAndReleaseAll();
        for (ByteBuf in : inputs) {
            assertThat(in.refCnt()).as("input buffer released").isZero();
        }
        return events;
    }

    private static void flush(List<String> events, ByteArrayOutputStream data, int[] channel) {
        if (channel[0] != -1) {
            events.add(
                    "DATA "
                            + channel[0]
                            + " "
                            + data.size()
                            + " bytes, hash "
                            + java.util.Arrays.hashCode(data.toByteArray()));
            data.reset();
            channel[0] = -1;
        }
    }

    private static void assertSameAsNetty(byte[] bytes) {
        List<String> expected = decode(false, bytes, List.of());
        assertThat(decode(true, bytes, List.of())).isEqualTo(expected);
        List<Integer> everyByte = new ArrayList<>();
        for (int i = 1; i < bytes.length; i++) {
            everyByte.add(i);
        }
        assertThat(decode(true, bytes, everyByte)).isEqualTo(expected);
        for (int seed = 0; seed < 30; seed++) {
            Random r = new Random(seed);
            List<Integer> cuts = new ArrayList<>();
            int at = 0;
            while ((at += 1 + r.nextInt(seed % 2 == 0 ? 16 : 70_000)) < bytes.length) {
                cuts.add(at);
            }
            assertThat(decode(true, bytes, cuts)).as("seed %d", seed).isEqualTo(expected);
        }
    }

    @Test
    void sameMessagesAsNettyHoweverTheBytesAreCut() {
        byte[] bytes = concat(session());
        List<String> expected = decode(false, bytes, List.of());
        assertThat(expected).hasSizeGreaterThan(100);
        assertThat(expected.get(expected.size() - 1)).startsWith("EXCEPTION");
        assertSameAsNetty(bytes);
    }

    /** Each frame Netty's decoder rejects fails the session at the same point, with nothing split off after it. */
    @Test
    void framesNettyRejectsFailTheSessionAsWithoutTheSplitter() {
        byte[] stdout = new byte[] {1, 'o', 'k'};
        List<byte[]> invalid =
                List.of(
                        frame(true, 1, 2, false, stdout, false), // RSV set
                        frame(true, 0, 2, true, stdout, false), // masked
                        frame(true, 0, 3, false, stdout, false), // reserved data opcode
                        frame(true, 0, 11, false, stdout, false), // reserved control opcode
                        frame(false, 0, 9, false, bytes("p"), false), // fragmented ping
                        frame(true, 0, 9, false, new byte[126], false), // ping too long
                        frame(true, 0, 8, false, new byte[] {3}, false), // close with 1 byte
                        frame(
                                true, 0, 0, false, stdout,
                                false), // continuation outside a fragmented message
                        concat(
                                List.of(
                                        frame(false, 0, 2, false, stdout, false),
                                        frame(true, 0, 2, false, stdout, false))),
                        concat(
                                List.of(
                                        new byte[] {(byte) 0x82, 126, 0, 3},
                                        stdout)), // 16-bit form for 3 bytes
                        frame(true, 0, 2, false, new byte[MAX + 1], false)); // too long
        for (byte[] bad : invalid) {
            byte[] bytes = concat(List.of(binary(1, 5), bad, binary(1, 7), binary(2, 3)));
            List<String> expected = decode(false, bytes, List.of());
            assertThat(expected.get(expected.size() - 1)).startsWith("EXCEPTION");
            assertThat(decode(true, bytes, List.of())).isEqualTo(expected);
            List<Integer> everyByte = new ArrayList<>();
            for (int i = 1; i < Math.min(bytes.length, 200); i++) {
                everyByte.add(i);
            }
            assertThat(decode(true, bytes, everyByte)).isEqualTo(expected);
        }
        // and a close frame ends the splitting: what follows goes to Netty's decoder
        byte[] closing =
                concat(
                        List.of(
                                binary(1, 5),
                                frame(true, 0, 8, false, new byte[] {3, (byte) 232}, false),
                                binary(1, 7)));
        assertSameAsNetty(closing);
    }

    @Test
    void stdoutPayloadsAreSlicesOfTheReadBufferExceptSmallPieces() {
        EmbeddedChannel ch = splitter();
        byte[] f = binary(1, 32 * 1024);
        ByteBuf read = Unpooled.directBuffer(f.length).writeBytes(f);
        ch.writeInbound(read);
        WsChannelSplitter.ChannelData d = ch.readInbound();
        assertThat(d.channel()).isEqualTo(1);
        assertThat(root(d.content())).isSameAs(root(read));
        assertThat(d.content().readableBytes()).isEqualTo(32 * 1024);
        d.release();
        assertThat(read.refCnt()).isZero();

        ByteBuf big = Unpooled.directBuffer(64 * 1024).writeBytes(binary(2, 100));
        ch.writeInbound(big);
        d = ch.readInbound();
        assertThat(root(d.content()))
                .isNotSameAs(root(big)); // small next to its read buffer: copied
        assertThat(big.refCnt()).isZero();
        d.release();
        ch.finishAndReleaseAll();
    }

    @Test
    void fullMessagesOfAClientsLargestReadAreSlices() {
        // a server's 32 KiB messages (a channel byte and 32,767 data bytes), four in one 128 KiB
        // read, the client's largest
        EmbeddedChannel ch = splitter();
        ByteBuf read = Unpooled.directBuffer(128 * 1024);
        while (read.writableBytes() >= 32 * 1024 + 4) {
            read.writeBytes(binary(1, 32 * 1024 - 1));
        }
        ch.writeInbound(read);
        for (int i = 0; i < 3; i++) {
            WsChannelSplitter.ChannelData d = ch.readInbound();
            assertThat(d.content().readableBytes()).isEqualTo(32 * 1024 - 1);
            assertThat(root(d.content())).isSameAs(root(read));
            d.release();
        }
        assertThat((Object) ch.readInbound()).isNull();
        assertThat(read.refCnt()).isZero();
        ch.finishAndReleaseAll();
    }

    /** The buffer under any wrappers (Netty's leak detector wraps a sampled allocation). */
    private static ByteBuf root(ByteBuf b) {
        while (b.unwrap() != null) {
            b = b.unwrap();
        }
        return b;
    }
}
