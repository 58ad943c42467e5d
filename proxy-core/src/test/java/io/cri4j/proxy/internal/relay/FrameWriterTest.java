package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.proxy.internal.relay.Wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.Http2Error;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The frames one leg writes, and how small ones are staged into one buffer per flush. */
class FrameWriterTest {
    private final EmbeddedChannel ch = new EmbeddedChannel();
    private final Wire.Peer peer = new Wire.Peer(ch, false);
    private final FrameWriter out = new FrameWriter();

    FrameWriterTest() {
        ChannelHandlerAdapter handler = new ChannelHandlerAdapter() {};
        ch.pipeline().addLast(handler);
        out.attach(ch.pipeline().context(handler));
    }

    @AfterEach
    void close() {
        ch.finishAndReleaseAll();
        peer.release();
    }

    /** A header block as the relay keeps one: {@code n} bytes after the headroom. */
    private static ByteBuf block(int n) {
        ByteBuf b = Unpooled.buffer(HeaderBlocks.HEADROOM + n);
        b.writerIndex(HeaderBlocks.HEADROOM).readerIndex(HeaderBlocks.HEADROOM);
        for (int i = 0; i < n; i++) {
            b.writeByte(i);
        }
        return b;
    }

    private static byte[] bytes(int n, int fill) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) fill);
        return b;
    }

    /** The buffers written so far, each as it went into the pipeline. */
    private List<ByteBuf> buffers() {
        List<ByteBuf> all = new ArrayList<>();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            all.add((ByteBuf) o);
        }
        return all;
    }

    @Test
    void smallFramesGoOutInOneBufferAtTheFlushAndNotBefore() {
        out.ping(42, false);
        out.rst(3, Wire.CANCEL);
        out.windowUpdate(0, 1000);
        out.data(5, Unpooled.wrappedBuffer(bytes(10, 1)), true);
        out.headers(5, block(20), true);
        out.settingsAck();
        assertThat((Object) ch.readOutbound()).as("nothing before the flush").isNull();

        out.flush();

        List<Frame> frames = peer.all();
        assertThat(peer.writes).as("one buffer for all six frames").isEqualTo(1);
        assertThat(frames)
                .extracting(Frame::type)
                .containsExactly(
                        Wire.PING,
                        Wire.RST,
                        Wire.WINDOW_UPDATE,
                        Wire.DATA,
                        Wire.HEADERS,
                        Wire.SETTINGS);
        assertThat(frames.get(0).pingData()).isEqualTo(42);
        assertThat(frames.get(0).ack()).isFalse();
        assertThat(frames.get(1).stream()).isEqualTo(3);
        assertThat(frames.get(1).int0()).isEqualTo(Wire.CANCEL);
        assertThat(frames.get(2).int0()).isEqualTo(1000);
        assertThat(frames.get(3).payload()).isEqualTo(bytes(10, 1));
        assertThat(frames.get(3).flags()).isEqualTo(Wire.END_STREAM);
        assertThat(frames.get(4).flags()).isEqualTo(Wire.END_STREAM | Wire.END_HEADERS);
        assertThat(frames.get(4).payload()).hasSize(20);
        assertThat(frames.get(5).flags()).isEqualTo(Wire.ACK);
    }

    @Test
    void aFlushWithNothingWrittenWritesNothing() {
        out.ping(1, true);
        out.flush();
        peer.all();
        int writes = peer.writes;
        out.flush();
        assertThat(peer.all()).isEmpty();
        assertThat(peer.writes).isEqualTo(writes);
    }

    @Test
    void theStagedBufferGoesOutWhenTheNextFrameWouldTakeItPastItsMaximum() {
        int payload = FrameWriter.STAGE_BELOW - 1;
        int perBuffer = FrameWriter.STAGED_MAX / (FrameWriter.FRAME_HEADER + payload);
        for (int i = 0; i < perBuffer + 1; i++) {
            out.data(1, Unpooled.wrappedBuffer(bytes(payload, i)), false);
        }
        out.flush();

        List<ByteBuf> written = buffers();
        assertThat(written)
                .as("the full staged buffer, then one for the frame that did not fit")
                .hasSize(2);
        assertThat(written.get(0).readableBytes())
                .isEqualTo(perBuffer * (FrameWriter.FRAME_HEADER + payload))
                .isLessThanOrEqualTo(FrameWriter.STAGED_MAX);
        assertThat(written.get(1).readableBytes()).isEqualTo(FrameWriter.FRAME_HEADER + payload);
        written.forEach(ch::writeOutbound); // back, to be read as frames
        List<Frame> frames = peer.all();
        assertThat(peer.writes).isEqualTo(2);
        assertThat(frames).hasSize(perBuffer + 1);
        for (int i = 0; i < frames.size(); i++) {
            assertThat(frames.get(i).payload()).isEqualTo(bytes(payload, i));
        }
    }

    @Test
    void largeDataGoesOutAsTheBufferItCameInBehindItsStagedHeaderAndTheFramesBefore() {
        out.ping(7, true);
        ByteBuf large = Unpooled.wrappedBuffer(bytes(FrameWriter.STAGE_BELOW, 9));
        out.data(3, large, false);
        out.ping(8, true);
        out.flush();

        List<ByteBuf> written = buffers();
        assertThat(written).hasSize(3);
        assertThat(written.get(1)).as("the payload's own buffer, not a copy").isSameAs(large);
        written.forEach(ch::writeOutbound);
        ch.flushOutbound();
        List<Frame> frames = peer.all();
        assertThat(frames).extracting(Frame::type).containsExactly(Wire.PING, Wire.DATA, Wire.PING);
        assertThat(frames.get(1).payload()).isEqualTo(bytes(FrameWriter.STAGE_BELOW, 9));
        assertThat(frames.get(2).pingData()).isEqualTo(8);
    }

    @Test
    void aLargeHeaderBlockGoesOutAsItsOwnBufferWithTheFrameHeaderInItsHeadroom() {
        ByteBuf b = block(FrameWriter.STAGE_BELOW);
        out.headers(1, b, false);
        out.flush();

        List<ByteBuf> written = buffers();
        assertThat(written)
                .as("the block itself, its frame header in its headroom")
                .containsExactly(b);
        written.forEach(ch::writeOutbound);
        ch.flushOutbound();
        List<Frame> frames = peer.all();
        assertThat(frames).hasSize(1);
        assertThat(frames.get(0).type()).isEqualTo(Wire.HEADERS);
        assertThat(frames.get(0).flags()).isEqualTo(Wire.END_HEADERS);
        assertThat(frames.get(0).payload()).isEqualTo(payload(block(FrameWriter.STAGE_BELOW)));
    }

    private static byte[] payload(ByteBuf b) {
        byte[] bytes = new byte[b.readableBytes()];
        b.readBytes(bytes);
        b.release();
        return bytes;
    }

    @Test
    void aHeaderBlockLargerThanThePeersFramesGoesInHeadersAndContinuationFrames() {
        int n = 2 * FrameWriter.DEFAULT_MAX_FRAME + 100;
        out.headers(7, block(n), true);
        out.flush();

        List<Frame> frames = peer.all();
        assertThat(frames)
                .extracting(Frame::type)
                .containsExactly(Wire.HEADERS, Wire.CONTINUATION, Wire.CONTINUATION);
        assertThat(frames).extracting(Frame::stream).containsOnly(7);
        assertThat(frames)
                .extracting(f -> f.payload().length)
                .containsExactly(FrameWriter.DEFAULT_MAX_FRAME, FrameWriter.DEFAULT_MAX_FRAME, 100);
        assertThat(frames)
                .extracting(Frame::flags)
                .containsExactly(Wire.END_STREAM, 0, Wire.END_HEADERS);
        assertThat(concat(frames)).isEqualTo(payload(block(n)));
    }

    private static byte[] concat(List<Frame> frames) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        frames.forEach(f -> all.writeBytes(f.payload()));
        return all.toByteArray();
    }

    @Test
    void aLargerMaximumFrameOfThePeerKeepsALargeBlockInOneFrame() {
        out.peerMaxFrame = 1 << 16;
        out.headers(1, block(20_000), false);
        out.flush();

        List<Frame> frames = peer.all();
        assertThat(frames).hasSize(1);
        assertThat(frames.get(0).payload()).hasSize(20_000);
    }

    @Test
    void theBlockAfterThePeerChangedItsTableSizeStartsWithASizeUpdateToZero() {
        out.oweSizeUpdate = true;
        out.headers(1, block(5), false);
        out.headers(3, block(5), false);
        out.oweSizeUpdate = true;
        out.headers(5, block(FrameWriter.STAGE_BELOW), false);
        out.oweSizeUpdate = true;
        out.headers(7, block(FrameWriter.DEFAULT_MAX_FRAME + 1), false);
        out.flush();

        List<Frame> frames = peer.all();
        byte[] small = payload(block(5));
        assertThat(frames.get(0).payload()).startsWith((byte) 0x20).endsWith(small).hasSize(6);
        assertThat(frames.get(1).payload()).isEqualTo(small);
        assertThat(frames.get(2).payload())
                .startsWith((byte) 0x20)
                .hasSize(FrameWriter.STAGE_BELOW + 1);
        byte[] split = concat(frames.subList(3, frames.size()));
        assertThat(split).startsWith((byte) 0x20).hasSize(FrameWriter.DEFAULT_MAX_FRAME + 2);
        assertThat(frames.get(3).payload()).hasSize(FrameWriter.DEFAULT_MAX_FRAME);
    }

    @Test
    void theSettingsOfTheServerAndOfTheClientSide() {
        out.settings(true, FlowControl.WINDOW, 1 << 20);
        out.settings(false, FlowControl.WINDOW, 1 << 20);
        out.flush();

        List<Frame> frames = peer.all();
        assertThat(frames)
                .extracting(Frame::type)
                .containsExactly(
                        Wire.SETTINGS, Wire.WINDOW_UPDATE, Wire.SETTINGS, Wire.WINDOW_UPDATE);
        assertThat(settings(frames.get(0)))
                .containsExactly(1, 0, 4, FlowControl.WINDOW, 6, 1 << 20);
        assertThat(settings(frames.get(2)))
                .containsExactly(1, 0, 4, FlowControl.WINDOW, 6, 1 << 20, 2, 0);
        assertThat(frames.get(1).stream()).isZero();
        assertThat(frames.get(1).int0()).isEqualTo(FlowControl.WINDOW - FlowControl.DEFAULT_WINDOW);
    }

    private static List<Integer> settings(Frame f) {
        List<Integer> all = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(f.payload());
        while (b.hasRemaining()) {
            all.add((int) b.getShort());
            all.add(b.getInt());
        }
        return all;
    }

    @Test
    void aGoAwayNamesTheLastStreamTheErrorAndWhy() {
        out.goAway(9, Http2Error.ENHANCE_YOUR_CALM, "too_many_pings");
        out.flush();

        Frame f = peer.all().get(0);
        assertThat(f.type()).isEqualTo(Wire.GOAWAY);
        assertThat(f.goAwayLastStream()).isEqualTo(9);
        assertThat(f.goAwayCode()).isEqualTo(Wire.ENHANCE_YOUR_CALM);
        assertThat(f.goAwayDebug()).isEqualTo("too_many_pings");
    }

    @Test
    void theClientPrefaceComesFirst() {
        Wire.Peer backendSide = new Wire.Peer(ch, true);
        out.preface();
        out.ping(1, false);
        out.flush();
        assertThat(backendSide.all()).extracting(Frame::type).containsExactly(Wire.PING);
        backendSide.release();
    }

    @Test
    void onlyHeadersAndDataCountAsAnAnswerBeforeAPing() {
        out.ping(1, true);
        out.rst(1, 0);
        out.windowUpdate(1, 1);
        out.settingsAck();
        assertThat(out.answeredSincePing).isFalse();
        out.data(1, Unpooled.wrappedBuffer(new byte[1]), false);
        assertThat(out.answeredSincePing).isTrue();
        out.answeredSincePing = false;
        out.headers(1, block(3), false);
        assertThat(out.answeredSincePing).isTrue();
        out.flush();
    }

    @Test
    void afterTheHandlerWasRemovedFramesGoNowhereAndTheirBuffersAreReleased() {
        out.ping(1, false); // staged, never flushed
        out.detach();
        ByteBuf data = Unpooled.wrappedBuffer(bytes(10, 1));
        ByteBuf block = block(10);
        out.data(1, data, false);
        out.headers(1, block, false);
        out.rst(1, 0);
        out.flush();

        assertThat(peer.all()).isEmpty();
        assertThat(data.refCnt()).isZero();
        assertThat(block.refCnt()).isZero();
    }
}
