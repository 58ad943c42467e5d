package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.cri4j.proxy.internal.relay.Wire.Frame;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * PINGs through the relay, both legs on EmbeddedChannels: the runtime's go to the client and
 * only the client's ack goes back; the client's go to the runtime while that is no ping strike
 * there; the proxy acks what may not wait; a client PING flood ends the connection.
 */
class PingRelayTest {
    private RelayHarness h = new RelayHarness();

    @AfterEach
    void close() {
        h.close();
    }

    private static List<Frame> pings(List<Frame> frames) {
        return frames.stream().filter(f -> f.type() == Wire.PING).toList();
    }

    /** A call on stream {@code stream} whose response headers came: the runtime answered. */
    private void answered(int stream) {
        h.call(stream, Wire.message(0, 0));
        int upStream =
                h.backend().frames().stream()
                        .filter(f -> f.type() == Wire.HEADERS)
                        .mapToInt(Frame::stream)
                        .max()
                        .orElseThrow();
        h.fromBackend(Wire.headers(upStream, Wire.response(), false));
        h.client.all();
    }

    @Test
    void aRuntimesPingReachesTheClientAndOnlyTheClientsAckGoesBack() {
        h.ready();
        h.fromBackend(Wire.ping(5, false));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, false, 5L));
        assertThat(h.backend().frames()).as("no ack from the proxy").isEmpty();

        h.fromClient(Wire.ping(5, true));
        assertThat(h.backend().frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, true, 5L));
        assertThat(h.client.frames()).isEmpty();
    }

    @Test
    void anAckToAPingNobodyWaitsForIsDropped() {
        h.ready();
        h.fromClient(Wire.ping(99, true));
        h.fromBackend(Wire.ping(98, true));
        assertThat(h.backend().frames()).isEmpty();
        assertThat(h.client.frames()).isEmpty();
    }

    @Test
    void theProxyAcksTheRuntimesPingsBeyondThoseWaitingForTheClient() {
        h.ready();
        int waiting = PingRelay.MAX_FORWARDED_PINGS;
        for (long i = 1; i <= waiting + 2; i++) {
            h.backend().send(Wire.ping(i, false));
        }
        h.settle();
        assertThat(pings(h.client.frames()))
                .extracting(Frame::pingData)
                .containsExactlyElementsOf(LongStream.rangeClosed(1, waiting).boxed().toList());
        assertThat(pings(h.backend().frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, waiting + 1L), tuple(true, waiting + 2L));

        for (long i = 1; i <= waiting; i++) {
            h.client.send(Wire.ping(i, true));
        }
        h.settle();
        assertThat(pings(h.backend().frames()))
                .extracting(Frame::pingData)
                .containsExactlyElementsOf(LongStream.rangeClosed(1, waiting).boxed().toList());
    }

    @Test
    void aClientsPingThatFollowsNoDataOfTheRuntimeIsAckedByTheProxy() {
        h.ready();
        h.fromClient(Wire.ping(1, false));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, true, 1L));
        assertThat(h.backend().frames()).isEmpty();
    }

    @Test
    void aClientsPingAfterTheRuntimesAnswerGoesToTheRuntimeAndItsAckComesBack() {
        h.ready();
        answered(1);
        h.fromClient(Wire.ping(2, false));
        assertThat(h.backend().frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, false, 2L));
        assertThat(h.client.frames()).isEmpty();

        h.fromBackend(Wire.ping(2, true));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, true, 2L));

        h.fromClient(Wire.ping(3, false)); // nothing from the runtime since the last
        assertThat(h.client.frames())
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, 3L));
        assertThat(h.backend().frames()).isEmpty();
    }

    @Test
    void theProxyAcksTheClientsPingsBeyondThoseWaitingForTheRuntime() {
        h.ready();
        answered(1);
        int waiting = PingRelay.MAX_FORWARDED_PINGS;
        for (long i = 1; i <= waiting + 2; i++) {
            h.fromBackend(Wire.data(1, new byte[1], false));
            h.fromClient(Wire.ping(i, false));
        }
        assertThat(pings(h.backend().frames()))
                .extracting(Frame::pingData)
                .containsExactlyElementsOf(LongStream.rangeClosed(1, waiting).boxed().toList());
        assertThat(pings(h.client.frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, waiting + 1L), tuple(true, waiting + 2L));
    }

    @Test
    void theClientsPingsALostRuntimeTookWithItAreAckedByTheProxy() {
        h.ready();
        answered(1);
        h.fromClient(Wire.ping(7, false));
        assertThat(pings(h.backend().frames())).hasSize(1);
        h.backend().ch.close();
        h.settle();
        assertThat(pings(h.client.frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, 7L));
    }

    @Test
    void pingsOfALostRuntimeAreForgottenAndTheNextRuntimesGoToTheClient() {
        h.ready();
        Wire.Peer first = h.backend();
        int waiting = PingRelay.MAX_FORWARDED_PINGS;
        for (long i = 1; i <= waiting; i++) {
            first.send(Wire.ping(i, false));
        }
        h.settle();
        assertThat(pings(h.client.frames())).hasSize(waiting);
        first.ch.close();
        h.settle();

        h.call(1, Wire.message(0, 0));
        Wire.Peer second = h.backend();
        assertThat(second).isNotSameAs(first);
        second.all();
        h.fromBackend(Wire.ping(100, false));
        assertThat(pings(h.client.frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(false, 100L));
        h.fromClient(Wire.ping(1, true));
        assertThat(pings(second.frames())).as("an ack for the runtime that went away").isEmpty();
        h.fromClient(Wire.ping(100, true));
        assertThat(pings(second.frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, 100L));
    }

    @Test
    void theClientsAckReachesARuntimeThatIsGoingAway() {
        h.ready();
        Wire.Peer first = h.backend();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.ping(5, false), Wire.goAway(1, Wire.NO_ERROR));
        assertThat(pings(h.client.frames())).hasSize(1);
        first.all();

        h.fromClient(Wire.ping(5, true));
        assertThat(pings(first.frames()))
                .extracting(Frame::ack, Frame::pingData)
                .containsExactly(tuple(true, 5L));
    }

    @Test
    void withNoRuntimeTheProxyAcksTheClientsPing() {
        h.close();
        h = new RelayHarness(RelayHarness.Dial.REFUSE);
        h.clientHello();
        h.client.all();
        h.fromClient(Wire.ping(3, false));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::ack, Frame::pingData)
                .containsExactly(tuple(Wire.PING, true, 3L));
    }

    @Test
    void aPingFloodEndsWithGoAwayEnhanceYourCalmAsAtContainerd() {
        h.ready();
        for (long i = 1; i <= PingRelay.MAX_FORWARDED_PINGS; i++) {
            h.fromClient(Wire.ping(i, false));
            if (!h.client.ch.isOpen()) {
                break;
            }
        }
        List<Frame> down = h.client.frames();
        int acks = PingPolicy.MAX_PING_STRIKES + 2; // the first PING is no strike
        assertThat(down).hasSize(acks + 1);
        assertThat(down.subList(0, acks))
                .extracting(Frame::type, Frame::ack)
                .containsOnly(tuple(Wire.PING, true));
        Frame goAway = down.get(acks);
        assertThat(goAway.type()).isEqualTo(Wire.GOAWAY);
        assertThat(goAway.goAwayCode()).isEqualTo(Wire.ENHANCE_YOUR_CALM);
        assertThat(goAway.goAwayDebug()).isEqualTo("too_many_pings");
        assertThat(h.client.ch.isOpen()).isFalse();
    }

    @Test
    void aPingAfterAnAnswerIsNoStrike() {
        h.ready();
        for (int i = 0; i < 10; i++) {
            int stream = 1 + 2 * i;
            h.call(stream, Wire.message(0, 0));
            h.fromBackend(Wire.headers(stream, Wire.trailers(0), true));
            h.fromClient(Wire.ping(i, false));
            List<Frame> toBackend = pings(h.backend().frames());
            assertThat(toBackend).extracting(Frame::pingData).containsExactly((long) i);
            h.fromBackend(Wire.ping(i, true));
        }
        assertThat(h.client.frames()).extracting(Frame::type).doesNotContain(Wire.GOAWAY);
        assertThat(h.client.ch.isOpen()).isTrue();
    }
}
