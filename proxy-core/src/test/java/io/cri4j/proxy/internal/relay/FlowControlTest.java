package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.cri4j.proxy.internal.relay.FlowControl.Half;
import io.cri4j.proxy.internal.relay.RelayConnection.Pair;
import io.cri4j.proxy.internal.relay.Wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One leg's flow control: what waits for the peer's windows and goes when they open, the credit
 * each write gives back to the other leg, and the window given back to the peer.
 */
class FlowControlTest {
    private final EmbeddedChannel ch = new EmbeddedChannel();
    private final Wire.Peer peer = new Wire.Peer(ch, false);
    private final FrameWriter out = new FrameWriter();

    /** Credit given back to the other leg, per stream. */
    private final Map<Pair, Integer> credited = new HashMap<>();

    private final List<Pair> closed = new ArrayList<>();
    private final List<Pair> open = new ArrayList<>();
    private final FlowControl flow =
            new FlowControl(
                    out,
                    new FlowControl.Streams() {
                        @Override
                        public Half half(Pair p) {
                            return p.down;
                        }

                        @Override
                        public void credit(Pair p, int bytes) {
                            credited.merge(p, bytes, Integer::sum);
                        }

                        @Override
                        public void closed(Pair p) {
                            closed.add(p);
                            open.remove(p);
                        }

                        @Override
                        public Iterable<Pair> streams() {
                            return open;
                        }
                    });

    FlowControlTest() {
        ChannelHandlerAdapter handler = new ChannelHandlerAdapter() {};
        ch.pipeline().addLast(handler);
        out.attach(ch.pipeline().context(handler));
    }

    @AfterEach
    void close() {
        ch.finishAndReleaseAll();
        peer.release();
    }

    private Pair stream(int id) {
        Pair p = new Pair(id);
        p.down.sendWindow = flow.peerInitialWindow;
        open.add(p);
        return p;
    }

    private static ByteBuf bytes(int n) {
        return Unpooled.wrappedBuffer(new byte[n]);
    }

    private static ByteBuf block() {
        ByteBuf b = Unpooled.buffer();
        b.writerIndex(HeaderBlocks.HEADROOM).readerIndex(HeaderBlocks.HEADROOM);
        b.writeBytes(Wire.block(Wire.trailers(0)));
        return b;
    }

    private List<Frame> written() {
        out.flush();
        return peer.all();
    }

    private int credit(Pair p) {
        return credited.getOrDefault(p, 0);
    }

    @Test
    void dataWithinTheWindowsGoesOutAtOnceAndItsCreditGoesBack() {
        Pair p = stream(1);
        flow.send(p, bytes(100), false, 105);

        List<Frame> frames = written();
        assertThat(frames).hasSize(1);
        assertThat(frames.get(0).payload()).hasSize(100);
        assertThat(credit(p)).isEqualTo(105);
        assertThat(p.down.sendWindow).isEqualTo(FlowControl.DEFAULT_WINDOW - 100);
        assertThat(flow.connWindow).isEqualTo(FlowControl.DEFAULT_WINDOW - 100);
    }

    @Test
    void dataBeyondTheStreamWindowWaitsAndGoesAsWindowUpdatesOpenIt() {
        flow.initialWindow(10);
        Pair p = stream(1);
        flow.send(p, bytes(25), true, 25);

        List<Frame> frames = written();
        assertThat(frames).extracting(f -> f.payload().length).containsExactly(10);
        assertThat(frames.get(0).endStream()).isFalse();
        assertThat(credit(p)).as("credit for what was written only").isEqualTo(10);

        flow.streamWindowUpdate(p, 10);
        assertThat(written()).extracting(f -> f.payload().length).containsExactly(10);
        assertThat(credit(p)).isEqualTo(20);

        flow.streamWindowUpdate(p, 100);
        frames = written();
        assertThat(frames).extracting(f -> f.payload().length).containsExactly(5);
        assertThat(frames.get(0).endStream()).isTrue();
        assertThat(credit(p)).isEqualTo(25);
        assertThat(p.down.sentEnd).isTrue();
    }

    @Test
    void dataLargerThanThePeersFramesIsSplitToThem() {
        Pair p = stream(1);
        int n = FrameWriter.DEFAULT_MAX_FRAME * 2 + 1;
        flow.send(p, bytes(n), true, 0);

        assertThat(written())
                .extracting(f -> f.payload().length, Frame::endStream)
                .containsExactly(
                        tuple(FrameWriter.DEFAULT_MAX_FRAME, false),
                        tuple(FrameWriter.DEFAULT_MAX_FRAME, false),
                        tuple(1, true));
    }

    @Test
    void trailersAndAResetWaitBehindTheDataThatWaitsForWindow() {
        flow.initialWindow(4);
        Pair p = stream(1);
        Pair q = stream(3);
        flow.send(p, bytes(8), false, 8);
        flow.sendHeaders(p, block(), true);
        flow.send(q, bytes(8), false, 8);
        flow.sendResetAfter(q, Wire.NO_ERROR);
        assertThat(written())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.DATA, 1), tuple(Wire.DATA, 3));
        assertThat(p.down.ending).as("no more writes accepted once the end is queued").isTrue();

        flow.streamWindowUpdate(p, 4);
        flow.streamWindowUpdate(q, 4);
        List<Frame> frames = written();
        assertThat(frames)
                .extracting(Frame::type, Frame::stream)
                .containsExactly(
                        tuple(Wire.DATA, 1),
                        tuple(Wire.HEADERS, 1),
                        tuple(Wire.DATA, 3),
                        tuple(Wire.RST, 3));
        assertThat(frames.get(1).endStream()).isTrue();
        assertThat(frames.get(3).int0()).isEqualTo(Wire.NO_ERROR);
        assertThat(closed).as("a reset ends both sides").containsExactly(q);
    }

    @Test
    void streamsHeldUpByTheConnectionWindowGoOnInTheOrderTheyRanOut() {
        Pair p = stream(1);
        Pair q = stream(3);
        flow.send(p, bytes(FlowControl.DEFAULT_WINDOW - 10), false, 0);
        flow.send(q, bytes(30), false, 0);
        flow.send(p, bytes(30), false, 0);
        List<Frame> frames = written();
        assertThat(frames)
                .extracting(Frame::stream, f -> f.payload().length)
                .endsWith(tuple(3, 10));
        assertThat(flow.connWindow).isZero();

        flow.streamWindowUpdate(p, 1000); // no connection window yet: nothing moves
        assertThat(written()).isEmpty();

        flow.connectionWindowUpdate(25);
        assertThat(written())
                .extracting(Frame::stream, f -> f.payload().length)
                .containsExactly(tuple(3, 20), tuple(1, 5));

        flow.connectionWindowUpdate(1000);
        assertThat(written())
                .extracting(Frame::stream, f -> f.payload().length)
                .containsExactly(tuple(1, 25));
    }

    @Test
    void aNewInitialWindowMovesTheWindowOfEveryOpenStream() {
        Pair p = stream(1);
        flow.send(p, bytes(1000), false, 0);
        written();
        flow.initialWindow(500);
        assertThat(p.down.sendWindow).as("may go below zero").isEqualTo(500 - 1000);
        flow.send(p, bytes(100), false, 0);
        assertThat(written()).isEmpty();

        flow.initialWindow(700);
        assertThat(written()).isEmpty();
        flow.initialWindow(1200);
        assertThat(written()).extracting(f -> f.payload().length).containsExactly(100);
        Pair later = stream(3);
        assertThat(later.down.sendWindow).isEqualTo(1200);
    }

    @Test
    void aResetNowDropsWhatWaitsAndGivesItsCreditBack() {
        flow.initialWindow(0);
        Pair p = stream(1);
        ByteBuf data = bytes(50);
        flow.send(p, data, false, 55);
        flow.resetNow(p, Wire.CANCEL);

        List<Frame> frames = written();
        assertThat(frames).extracting(Frame::type).containsExactly(Wire.RST);
        assertThat(frames.get(0).int0()).isEqualTo(Wire.CANCEL);
        assertThat(data.refCnt()).isZero();
        assertThat(credit(p)).isEqualTo(55);
        assertThat(closed).containsExactly(p);
    }

    @Test
    void aStreamNeverOpenedOnThisLegIsResetWithoutAFrame() {
        Pair p = new Pair(1);
        p.down.id = 0;
        flow.resetNow(p, Wire.CANCEL);
        assertThat(written()).isEmpty();
    }

    @Test
    void writesAfterTheEndAreDroppedAndTheirCreditGoesBack() {
        Pair p = stream(1);
        flow.sendHeaders(p, block(), true);
        ByteBuf late = bytes(7);
        flow.send(p, late, false, 7);
        ByteBuf lateBlock = block();
        flow.sendHeaders(p, lateBlock, true);

        assertThat(written()).extracting(Frame::type).containsExactly(Wire.HEADERS);
        assertThat(late.refCnt()).isZero();
        assertThat(lateBlock.refCnt()).isZero();
        assertThat(credit(p)).isEqualTo(7);
    }

    @Test
    void aStreamIsClosedOnceItEndedBothWays() {
        Pair p = stream(1);
        flow.send(p, bytes(1), true, 0);
        assertThat(closed).isEmpty();
        flow.gotEnd(p, p.down);
        assertThat(closed).containsExactly(p);
    }

    @Test
    void bytesTakenAreGivenBackInStepsOfHalfTheWindowForTheConnectionAndTheStream() {
        Pair p = stream(1);
        int half = FlowControl.WINDOW / 2;
        flow.consumed(p, half - 1);
        flow.consumed(null, 10); // on a stream the relay forgot: the connection's only
        out.flush();
        List<Frame> updates = peer.windowUpdates();
        assertThat(updates)
                .extracting(Frame::stream, Frame::int0)
                .containsExactly(tuple(0, (long) half + 9));

        flow.consumed(p, 1);
        out.flush();
        assertThat(peer.windowUpdates())
                .extracting(Frame::stream, Frame::int0)
                .containsExactly(tuple(1, (long) half));

        flow.consumed(p, 0);
        p.down.gotEnd = true;
        flow.consumed(p, half);
        out.flush();
        assertThat(peer.windowUpdates())
                .as("the connection's; none for a stream the peer ended")
                .extracting(Frame::stream)
                .containsExactly(0);
    }

    @Test
    void dropAllReleasesWhatWaitsOnEveryStream() {
        flow.initialWindow(0);
        Pair p = stream(1);
        Pair q = stream(3);
        ByteBuf a = bytes(5);
        ByteBuf b = bytes(6);
        flow.send(p, a, false, 5);
        flow.send(q, b, false, 6);
        flow.dropAllPending(List.of(p, q));
        assertThat(a.refCnt()).isZero();
        assertThat(b.refCnt()).isZero();
        assertThat(credit(p) + credit(q)).isEqualTo(11);
        flow.initialWindow(100);
        assertThat(written()).isEmpty();
    }
}
