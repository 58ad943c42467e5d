package io.cri4j.streaming.internal.spdy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.spdy.DefaultSpdyDataFrame;
import io.netty.handler.codec.spdy.DefaultSpdyGoAwayFrame;
import io.netty.handler.codec.spdy.DefaultSpdyHeadersFrame;
import io.netty.handler.codec.spdy.DefaultSpdyPingFrame;
import io.netty.handler.codec.spdy.DefaultSpdyRstStreamFrame;
import io.netty.handler.codec.spdy.DefaultSpdySettingsFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynReplyFrame;
import io.netty.handler.codec.spdy.DefaultSpdySynStreamFrame;
import io.netty.handler.codec.spdy.DefaultSpdyWindowUpdateFrame;
import io.netty.handler.codec.spdy.SpdyDataFrame;
import io.netty.handler.codec.spdy.SpdyFrameCodec;
import io.netty.handler.codec.spdy.SpdyHeadersFrame;
import io.netty.handler.codec.spdy.SpdyProtocolException;
import io.netty.handler.codec.spdy.SpdySessionStatus;
import io.netty.handler.codec.spdy.SpdyStreamStatus;
import io.netty.handler.codec.spdy.SpdyVersion;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The DATA splitter in front of Netty's SPDY decoder yields the same frames in the same order as
 * Netty's decoder alone, however the bytes are cut into socket reads, and releases every buffer.
 */
class SpdyCodecTest {
    private static final Random RANDOM = new Random(42);

    /** A session's worth of frames as Netty's encoder writes them (one zlib stream for headers). */
    private static byte[] encodedSession() {
        EmbeddedChannel enc = new EmbeddedChannel(new SpdyFrameCodec(SpdyVersion.SPDY_3_1));
        List<Object> frames = new ArrayList<>();
        DefaultSpdySynStreamFrame error = new DefaultSpdySynStreamFrame(1, 0, (byte) 0);
        error.headers().add("streamtype", "error");
        frames.add(error);
        DefaultSpdySynStreamFrame stdout = new DefaultSpdySynStreamFrame(3, 0, (byte) 0);
        stdout.headers().add("streamtype", "stdout");
        frames.add(stdout);
        DefaultSpdySynReplyFrame reply = new DefaultSpdySynReplyFrame(3);
        reply.headers().add(":status", "200");
        frames.add(reply);
        frames.add(data(3, 32 * 1024, false));
        frames.add(new DefaultSpdyPingFrame(2));
        frames.add(data(1, 10, false));
        frames.add(data(3, 100 * 1024, false)); // larger than Netty's 64 KiB chunks
        frames.add(new DefaultSpdySettingsFrame().setValue(7, 65536));
        frames.add(new DefaultSpdyWindowUpdateFrame(3, 1000));
        for (int i = 0; i < 1000; i++) { // many small frames, as a chatty process writes them
            frames.add(data(3 + 2 * (i % 2), 1 + i % 20, false));
        }
        DefaultSpdyHeadersFrame headers = new DefaultSpdyHeadersFrame(3);
        headers.headers().add("x-trailer", "1");
        frames.add(headers);
        frames.add(data(3, 0, true)); // empty DATA with FIN, as spdystream half-closes
        frames.add(data(1, 3, true));
        frames.add(data(5, 5000, true));
        frames.add(new DefaultSpdyRstStreamFrame(7, SpdyStreamStatus.CANCEL));
        frames.add(new DefaultSpdyGoAwayFrame(7, SpdySessionStatus.OK));
        for (Object f : frames) {
            assertThat(enc.writeOutbound(f)).isTrue();
        }
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        ByteBuf b;
        while ((b = enc.readOutbound()) != null) {
            all.writeBytes(ByteBufUtil.getBytes(b));
            b.release();
        }
        enc.finishAndReleaseAll();
        return all.toByteArray();
    }

    private static SpdyDataFrame data(int stream, int n, boolean last) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return new DefaultSpdyDataFrame(stream, Unpooled.wrappedBuffer(b)).setLast(last);
    }

    /** Decodes {@code bytes} cut at {@code cuts} (offsets); returns the normalised events. */
    private static List<String> decode(EmbeddedChannel ch, byte[] bytes, List<Integer> cuts) {
        List<ByteBuf> inputs = new ArrayList<>();
        int from = 0;
        for (int to : cuts) {
            inputs.add(piece(bytes, from, to));
            from = to;
        }
        inputs.add(piece(bytes, from, bytes.length));
        for (ByteBuf in : inputs) {
            ch.writeInbound(in);
        }
        List<String> events = new ArrayList<>();
        Object m;
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        int dataStream = -1;
        while ((m = ch.readInbound()) != null) {
            try {
                if (m instanceof SpdyDataFrame f) {
                    if (dataStream != f.streamId() && dataStream != -1) {
                        events.add(dataEvent(dataStream, data, false));
                    }
                    dataStream = f.streamId();
                    data.writeBytes(ByteBufUtil.getBytes(f.content()));
                    if (f.isLast()) {
                        events.add(dataEvent(dataStream, data, true));
                        dataStream = -1;
                    }
                } else {
                    if (dataStream != -1) {
                        events.add(dataEvent(dataStream, data, false));
                        dataStream = -1;
                    }
                    events.add(
                            m instanceof SpdyHeadersFrame h
                                    ? m.getClass().getSimpleName()
                                            + " "
                                            + h.streamId()
                                            + " "
                                            + h.headers()
                                            + " last="
                                            + h.isLast()
                                    : m.toString());
                }
            } finally {
                ReferenceCountUtil.release(m);
            }
        }
        if (dataStream != -1) {
            events.add(dataEvent(dataStream, data, false));
        }
        for (ByteBuf in : inputs) {
            assertThat(in.refCnt()).as("input buffer released").isZero();
        }
        return events;
    }

    /** Consecutive DATA of one stream merged: frames may arrive in pieces, bytes and FIN may not change. */
    private static String dataEvent(int stream, ByteArrayOutputStream data, boolean last) {
        String e =
                "DATA "
                        + stream
                        + " "
                        + data.size()
                        + " bytes, hash "
                        + java.util.Arrays.hashCode(data.toByteArray())
                        + (last ? " FIN" : "");
        data.reset();
        return e;
    }

    private static ByteBuf piece(byte[] bytes, int from, int to) {
        // like a socket read: a buffer larger than what was read into it, so pieces of frames
        // are sliced or (when small next to the buffer) copied
        ByteBuf b = Unpooled.buffer(2 * (to - from));
        return b.writeBytes(bytes, from, to - from);
    }

    private static EmbeddedChannel netty() {
        return new EmbeddedChannel(
                new SpdyFrameCodec(SpdyVersion.SPDY_3_1, 64 * 1024, 64 * 1024, 6, 15, 8));
    }

    @Test
    void sameFramesAsNettyHoweverTheBytesAreCut() {
        byte[] bytes = encodedSession();
        List<String> expected = decode(netty(), bytes, List.of());
        assertThat(expected).hasSizeGreaterThan(10);
        assertThat(expected.get(expected.size() - 1)).contains("GoAway");

        assertThat(decode(new EmbeddedChannel(new SpdyCodec()), bytes, List.of()))
                .isEqualTo(expected);
        List<Integer> everyByte = new ArrayList<>();
        for (int i = 1; i < bytes.length; i++) {
            everyByte.add(i);
        }
        assertThat(decode(new EmbeddedChannel(new SpdyCodec()), bytes, everyByte))
                .isEqualTo(expected);
        for (int seed = 0; seed < 50; seed++) {
            Random r = new Random(seed);
            List<Integer> cuts = new ArrayList<>();
            int at = 0;
            while (true) {
                at += 1 + r.nextInt(seed % 2 == 0 ? 20 : 70_000);
                if (at >= bytes.length) {
                    break;
                }
                cuts.add(at);
            }
            assertThat(decode(new EmbeddedChannel(new SpdyCodec()), bytes, cuts))
                    .as("seed %d", seed)
                    .isEqualTo(expected);
        }
    }

    @Test
    void payloadsAreSlicesOfTheReadBufferExceptSmallPieces() {
        byte[] bytes = encodedSession();
        EmbeddedChannel ch = new EmbeddedChannel(new SpdyCodec());
        ByteBuf in = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
        ch.writeInbound(in);
        Object m;
        int slices = 0;
        int copies = 0;
        while ((m = ch.readInbound()) != null) {
            if (m instanceof SpdyDataFrame f && f.content().isReadable()) {
                if (root(f.content()) == root(in)) {
                    slices++;
                } else {
                    copies++;
                }
            }
            ReferenceCountUtil.release(m);
        }
        // the 100 KiB and the 32 KiB frame (over a fifth of this "read"); the others are small
        assertThat(slices).isEqualTo(2);
        assertThat(copies).isGreaterThan(1000);

        EmbeddedChannel big = new EmbeddedChannel(new SpdyCodec());
        byte[] frame = new byte[8 + 32 * 1024];
        frame[3] = 3; // stream 3
        frame[4] = 1; // FIN
        frame[6] = (byte) 0x80; // length 32768
        ByteBuf read = Unpooled.directBuffer(frame.length).writeBytes(frame);
        big.writeInbound(read);
        SpdyDataFrame f = big.readInbound();
        assertThat(root(f.content())).isSameAs(root(read));
        assertThat(f.content().readableBytes()).isEqualTo(32 * 1024);
        assertThat(f.isLast()).isTrue();
        f.release();
        assertThat(read.refCnt()).isZero();
    }

    @Test
    void dataFrameOnStreamZeroFailsLikeNettyAndDiscardsTheRest() {
        byte[] bad = {0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'};
        byte[] next = {0, 0, 0, 3, 1, 0, 0, 1, 'x'};
        for (EmbeddedChannel ch : List.of(netty(), new EmbeddedChannel(new SpdyCodec()))) {
            assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(bad)))
                    .isInstanceOf(SpdyProtocolException.class);
            ch.writeInbound(Unpooled.wrappedBuffer(next));
            assertThat((Object) ch.readInbound()).isNull();
        }
    }

    @Test
    void dataWithoutControlBytesNeverAsksForAnotherReadWhileAutoReadIsOff() {
        int[] reads = {0};
        ChannelOutboundHandlerAdapter counter =
                new ChannelOutboundHandlerAdapter() {
                    @Override
                    public void read(ChannelHandlerContext ctx) {
                        reads[0]++;
                    }
                };
        EmbeddedChannel ch = new EmbeddedChannel(counter, new SpdyCodec());
        ch.config().setAutoRead(false);
        reads[0] = 0;
        byte[] frame = {0, 0, 0, 3, 0, 0, 0, 4, 'a', 'b'}; // 2 of 4 payload bytes
        ch.writeInbound(Unpooled.wrappedBuffer(frame));
        assertThat(reads[0]).as("reads asked for by a DATA-only socket read").isZero();
        SpdyDataFrame f = ch.readInbound();
        assertThat(f.content().toString(java.nio.charset.StandardCharsets.US_ASCII))
                .isEqualTo("ab");
        f.release();
        // A partial control frame still makes Netty's decoder ask for the rest (the counter works).
        ch.writeInbound(
                Unpooled.wrappedBuffer(
                        new byte[] {'c', 'd', (byte) 0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0}));
        assertThat(reads[0]).isPositive();
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {0, 9}));
        f = ch.readInbound();
        assertThat(f.content().toString(java.nio.charset.StandardCharsets.US_ASCII))
                .isEqualTo("cd");
        assertThat(f.isLast()).isFalse();
        f.release();
        assertThat(ch.readInbound().toString()).contains("DefaultSpdyPingFrame").contains("9");
        ch.finishAndReleaseAll();
    }

    @Test
    void dataFramesEncodedByTheWriterAreTheBytesNettysEncoderWrites() {
        for (int len : new int[] {0, 1, 1000, 32 * 1024, 70_000}) {
            for (boolean fin : new boolean[] {false, true}) {
                byte[] payload = new byte[len + 3];
                RANDOM.nextBytes(payload);
                int streamId = 0x7FFFFFFD;
                EmbeddedChannel netty = netty();
                netty.writeOutbound(
                        new DefaultSpdyDataFrame(streamId, Unpooled.wrappedBuffer(payload, 3, len))
                                .setLast(fin));
                byte[] expected = outbound(netty);

                EmbeddedChannel ours = new EmbeddedChannel(new SpdyCodec());
                ours.writeOutbound(
                        SpdyCodec.dataFrame(ours.alloc(), streamId, fin, payload, 3, len));
                assertThat(outbound(ours)).as("%d bytes, fin %s", len, fin).isEqualTo(expected);
                assertThat(expected).hasSize(8 + len);
            }
        }
    }

    private static byte[] outbound(EmbeddedChannel ch) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        ByteBuf b;
        while ((b = ch.readOutbound()) != null) {
            all.writeBytes(ByteBufUtil.getBytes(b));
            b.release();
        }
        return all.toByteArray();
    }

    /** The buffer under any wrappers (Netty's leak detector wraps a sampled allocation). */
    private static ByteBuf root(ByteBuf b) {
        while (b.unwrap() != null) {
            b = b.unwrap();
        }
        return b;
    }
}
