package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.cri4j.proxy.internal.relay.Wire.Frame;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The relay between a client connection and its backend connections, frame by frame, both legs
 * on EmbeddedChannels: what goes on as it came, flow control across the legs, resets both ways,
 * the runtime's GOAWAY, backend connections that fail, and the client connection's rules.
 */
class RelayConnectionTest {
    private RelayHarness h = new RelayHarness();

    @AfterEach
    void close() {
        h.close();
    }

    private static int dataBytes(List<Frame> frames) {
        return frames.stream()
                .filter(f -> f.type() == Wire.DATA)
                .mapToInt(f -> f.payload().length)
                .sum();
    }

    private static void assertUnavailable(Frame f, String message) {
        assertThat(f.type()).isEqualTo(Wire.HEADERS);
        assertThat(f.endStream()).as("trailers-only").isTrue();
        Http2Headers trailers = f.headers();
        assertThat(trailers.get("grpc-status")).hasToString("14");
        assertThat(trailers.get("grpc-message").toString()).contains(message);
    }

    // ---------------------------------------------------------------- relayed as it came

    @Test
    void theRelaysOwnSettingsAndItsAcksOfThePeers() {
        h.clientHello();
        List<Frame> toClient = h.client.all();
        assertThat(toClient)
                .extracting(Frame::type, Frame::flags)
                .containsExactly(
                        tuple(Wire.SETTINGS, 0),
                        tuple(Wire.WINDOW_UPDATE, 0),
                        tuple(Wire.SETTINGS, Wire.ACK));
        assertThat(toClient.get(0).payload()).hasSize(3 * 6);

        h.backendHello();
        List<Frame> toBackend = h.backend().all();
        assertThat(toBackend)
                .extracting(Frame::type, Frame::flags)
                .containsExactly(
                        tuple(Wire.SETTINGS, 0),
                        tuple(Wire.WINDOW_UPDATE, 0),
                        tuple(Wire.SETTINGS, Wire.ACK));
        assertThat(toBackend.get(0).payload()).as("push disabled too").hasSize(4 * 6);
    }

    @Test
    void aRequestAndItsAnswerGoOnAsTheBytesTheyCameAs() {
        h.ready();
        byte[] request = Wire.block(Wire.request(Wire.VERSION));
        byte[] message = Wire.message(3, 7);
        h.fromClient(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS, 1, request),
                Wire.data(1, message, true));

        List<Frame> up = h.backend().frames();
        assertThat(up)
                .extracting(Frame::type, Frame::stream, Frame::flags)
                .containsExactly(
                        tuple(Wire.HEADERS, 1, Wire.END_HEADERS),
                        tuple(Wire.DATA, 1, Wire.END_STREAM));
        assertThat(up.get(0).payload()).isEqualTo(request);
        assertThat(up.get(1).payload()).isEqualTo(message);

        byte[] response = Wire.block(Wire.response());
        byte[] answer = Wire.message(2, 1);
        byte[] trailers = Wire.block(Wire.trailers(0));
        h.fromBackend(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS, 1, response),
                Wire.data(1, answer, false),
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 1, trailers));

        List<Frame> down = h.client.frames();
        assertThat(down)
                .extracting(Frame::type, Frame::stream, Frame::flags)
                .containsExactly(
                        tuple(Wire.HEADERS, 1, Wire.END_HEADERS),
                        tuple(Wire.DATA, 1, 0),
                        tuple(Wire.HEADERS, 1, Wire.END_HEADERS | Wire.END_STREAM));
        assertThat(down.get(0).payload()).isEqualTo(response);
        assertThat(down.get(1).payload()).isEqualTo(answer);
        assertThat(down.get(2).payload()).isEqualTo(trailers);
    }

    @Test
    void streamIdsAreEachLegsOwn() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.call(5, Wire.message(0, 0));
        h.call(9, Wire.message(0, 0));
        assertThat(h.backend().frames())
                .filteredOn(f -> f.type() == Wire.HEADERS)
                .extracting(Frame::stream)
                .containsExactly(1, 3, 5);

        h.fromBackend(Wire.headers(3, Wire.trailers(0), true));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 5));
    }

    @Test
    void aPeerThatChangesItsHeaderTableGetsASizeUpdateToZeroInItsNextBlock() {
        h.clientHello(0x1, 100); // HEADER_TABLE_SIZE
        h.backendHello();
        h.client.all();
        h.call(1, Wire.message(0, 0));
        byte[] response = Wire.block(Wire.response());
        byte[] trailers = Wire.block(Wire.trailers(0));
        h.fromBackend(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS, 1, response),
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 1, trailers));

        List<Frame> down = h.client.frames();
        assertThat(down.get(0).payload())
                .startsWith((byte) 0x20)
                .endsWith(response)
                .hasSize(response.length + 1);
        assertThat(down.get(1).payload()).isEqualTo(trailers);
    }

    @Test
    void aHeaderBlockInContinuationFramesGoesOnInFramesTheClientTakes() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        byte[] big = new byte[20_000];
        java.util.Arrays.fill(big, (byte) 'x');
        byte[] response =
                Wire.block(
                        Wire.response().add("x-big", new String(big, StandardCharsets.US_ASCII)));
        assertThat(response.length).isGreaterThan(FrameWriter.DEFAULT_MAX_FRAME);
        int first = FrameWriter.DEFAULT_MAX_FRAME;
        h.fromBackend(
                Wire.frame(Wire.HEADERS, 0, 1, java.util.Arrays.copyOfRange(response, 0, first)),
                Wire.frame(
                        Wire.CONTINUATION,
                        Wire.END_HEADERS,
                        1,
                        java.util.Arrays.copyOfRange(response, first, response.length)));

        List<Frame> down = h.client.frames();
        assertThat(down)
                .extracting(Frame::type, Frame::flags)
                .containsExactly(
                        tuple(Wire.HEADERS, 0), tuple(Wire.CONTINUATION, Wire.END_HEADERS));
        ByteArrayOutputStream block = new ByteArrayOutputStream();
        down.forEach(f -> block.writeBytes(f.payload()));
        assertThat(block.toByteArray()).isEqualTo(response);
    }

    // ---------------------------------------------------------------- flow control across legs

    /** Sends {@code frames} DATA frames of {@code size} bytes on backend stream 1. */
    private void backendData(int frames, int size) {
        for (int i = 0; i < frames; i++) {
            h.backend().send(Wire.data(1, new byte[size], false));
        }
        h.settle();
    }

    @Test
    void aSlowClientHoldsTheAnswerBackAndTheRuntimeGetsWindowOnlyForWhatTheClientTook() {
        h.clientHello(0x4, 1000); // INITIAL_WINDOW_SIZE
        h.backendHello();
        h.client.all();
        h.backend().all();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.headers(1, Wire.response(), false));
        backendData(40, 16_000);

        assertThat(dataBytes(h.client.all())).as("the client's stream window").isEqualTo(1000);
        assertThat(h.backend().windowUpdates())
                .as("no window for what waits in the proxy")
                .isEmpty();

        h.fromClient(Wire.windowUpdate(1, 1 << 24), Wire.windowUpdate(0, 1 << 24));

        assertThat(dataBytes(h.client.all())).isEqualTo(40 * 16_000 - 1000);
        List<Frame> updates = h.backend().windowUpdates();
        assertThat(updates).extracting(Frame::stream).containsExactlyInAnyOrder(0, 1);
        assertThat(updates)
                .allSatisfy(
                        f ->
                                assertThat(f.int0())
                                        .isBetween((long) FlowControl.WINDOW / 2, 40L * 16_000));
    }

    @Test
    void theTrailersOfAHeldBackAnswerFollowItsLastByte() {
        h.clientHello(0x4, 10);
        h.backendHello();
        h.client.all();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(
                Wire.headers(1, Wire.response(), false),
                Wire.data(1, new byte[30], false),
                Wire.headers(1, Wire.trailers(0), true));
        assertThat(h.client.frames())
                .extracting(Frame::type, f -> f.payload().length)
                .containsExactly(
                        tuple(Wire.HEADERS, Wire.block(Wire.response()).length),
                        tuple(Wire.DATA, 10));

        h.fromClient(Wire.windowUpdate(1, 15));
        assertThat(h.client.frames())
                .extracting(Frame::type, f -> f.payload().length)
                .containsExactly(tuple(Wire.DATA, 15));

        h.fromClient(Wire.windowUpdate(1, 100));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::endStream)
                .containsExactly(tuple(Wire.DATA, false), tuple(Wire.HEADERS, true));
    }

    @Test
    void aSlowRuntimeHoldsTheRequestBackAndTheClientGetsWindowOnlyForWhatTheRuntimeTook() {
        h.clientHello();
        h.backendHello(0x4, 10);
        h.client.all();
        h.backend().all();
        h.fromClient(Wire.headers(1, Wire.request(Wire.VERSION), false));
        for (int i = 0; i < 40; i++) {
            h.client.send(Wire.data(1, new byte[16_000], false));
        }
        h.fromClient(Wire.data(1, new byte[0], true));

        assertThat(dataBytes(h.backend().all())).isEqualTo(10);
        assertThat(h.client.windowUpdates()).isEmpty();

        h.fromBackend(Wire.windowUpdate(1, 1 << 24), Wire.windowUpdate(0, 1 << 24));

        List<Frame> up = h.backend().frames();
        assertThat(dataBytes(up)).isEqualTo(40 * 16_000 - 10);
        assertThat(up.get(up.size() - 1).endStream()).isTrue();
        assertThat(h.client.windowUpdates())
                .extracting(Frame::stream)
                .as("the connection's only: the client ended its stream")
                .containsExactly(0);
    }

    // ---------------------------------------------------------------- resets

    @Test
    void aClientsResetReachesTheRuntimeAndTheStreamsLaterFramesAreDropped() {
        h.ready();
        h.fromClient(Wire.headers(1, Wire.request(Wire.VERSION), false));
        h.fromClient(Wire.rst(1, Wire.CANCEL));

        List<Frame> up = h.backend().frames();
        assertThat(up)
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 1), tuple(Wire.RST, 1));
        assertThat(up.get(1).int0()).isEqualTo(Wire.CANCEL);

        h.fromBackend(Wire.headers(1, Wire.response(), false), Wire.data(1, new byte[5], false));
        assertThat(h.client.frames()).isEmpty();

        h.call(3, Wire.message(0, 0));
        assertThat(h.backend().frames())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 3), tuple(Wire.DATA, 3));
    }

    @Test
    void aClientsResetAfterItsCompleteRequestReachesTheRuntime() {
        h.ready();
        h.call(1, Wire.message(0, 0)); // the whole request, END_STREAM included: a unary call
        h.backend().all();
        h.fromClient(Wire.rst(1, Wire.CANCEL)); // kubelet's deadline or cancel while it waits

        List<Frame> up = h.backend().frames();
        assertThat(up).extracting(Frame::type, Frame::stream).containsExactly(tuple(Wire.RST, 1));
        assertThat(up.get(0).int0()).isEqualTo(Wire.CANCEL);
        h.fromBackend(Wire.headers(1, Wire.response(), false), Wire.data(1, new byte[5], false));
        assertThat(h.client.frames()).as("nothing of the cancelled call goes back").isEmpty();
    }

    @Test
    void aRuntimesResetReachesTheClientWithItsCode() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.call(3, Wire.message(0, 0));
        h.backend().all();
        h.fromBackend(Wire.rst(1, Wire.CANCEL), Wire.rst(3, 0x7)); // REFUSED_STREAM

        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::stream, Frame::int0)
                .containsExactly(tuple(Wire.RST, 1, Wire.CANCEL), tuple(Wire.RST, 3, 0x7L));
        assertThat(h.backend().frames()).as("no reset back").isEmpty();
    }

    @Test
    void aRuntimesResetNoErrorAfterACompleteAnswerReachesTheClientAfterTheAnswer() {
        h.clientHello(0x4, 10);
        h.backendHello();
        h.client.all();
        // the request is still open: the runtime answers in full and wants no more of it
        h.fromClient(
                Wire.headers(1, Wire.request(Wire.VERSION), false),
                Wire.data(1, Wire.message(0, 0), false));
        h.fromBackend(
                Wire.headers(1, Wire.response(), false),
                Wire.data(1, new byte[30], false),
                Wire.headers(1, Wire.trailers(0), true),
                Wire.rst(1, Wire.NO_ERROR));
        assertThat(h.client.frames())
                .extracting(Frame::type)
                .containsExactly(Wire.HEADERS, Wire.DATA);

        h.fromClient(Wire.windowUpdate(1, 100));
        List<Frame> down = h.client.frames();
        assertThat(down).extracting(Frame::type).containsExactly(Wire.DATA, Wire.HEADERS, Wire.RST);
        assertThat(down.get(1).endStream()).isTrue();
        assertThat(down.get(2).int0()).isEqualTo(Wire.NO_ERROR);
    }

    @Test
    void aRuntimesResetOnAStreamThatEndedBothWaysChangesNothing() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.headers(1, Wire.trailers(0), true), Wire.rst(1, Wire.CANCEL));
        assertThat(h.client.frames()).extracting(Frame::type).containsExactly(Wire.HEADERS);
    }

    // ---------------------------------------------------------------- backend connections

    @Test
    void aRuntimesGoAwayEndsTheCallsItDidNotTakeAndNewCallsGoToANewConnection() {
        h.ready();
        Wire.Peer first = h.backend();
        h.call(1, Wire.message(0, 0));
        h.call(3, Wire.message(0, 0));
        first.all();
        h.fromBackend(Wire.goAway(1, Wire.NO_ERROR));

        List<Frame> down = h.client.frames();
        assertThat(down).hasSize(1);
        assertThat(down.get(0).stream()).isEqualTo(3);
        assertUnavailable(down.get(0), "the runtime test-runtime is going away and did not take");
        assertThat(first.frames()).as("the runtime ended stream 3 itself").isEmpty();

        h.call(5, Wire.message(0, 0));
        assertThat(h.dials).isEqualTo(2);
        Wire.Peer second = h.backend();
        assertThat(second.frames())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 1), tuple(Wire.DATA, 1));

        assertThat(first.ch.isOpen()).as("open while stream 1 runs").isTrue();
        h.fromBackend(first, Wire.headers(1, Wire.trailers(0), true));
        assertThat(h.client.frames())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 1));
        assertThat(first.ch.isOpen()).as("closed once its last stream ended").isFalse();
        assertThat(second.ch.isOpen()).isTrue();
    }

    @Test
    void aRuntimeThatCannotBeReachedFailsTheCallAndTheNextCallConnectsAgain() {
        h.close();
        h = new RelayHarness(RelayHarness.Dial.REFUSE);
        h.clientHello();
        h.client.all();
        h.call(1, Wire.message(0, 0));

        List<Frame> down = h.client.frames();
        assertThat(down).hasSize(1);
        assertUnavailable(down.get(0), "backend test-runtime is unavailable: connection refused");
        assertThat(h.dials).isEqualTo(2);

        h.dial = RelayHarness.Dial.CONNECT;
        h.call(3, Wire.message(0, 0));
        assertThat(h.dials).isEqualTo(3);
        assertThat(h.backend().frames())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(tuple(Wire.HEADERS, 1), tuple(Wire.DATA, 1));
    }

    @Test
    void callsWaitWhileTheRuntimeConnectsAndGoOnOnceItIs() {
        h.close();
        h = new RelayHarness(RelayHarness.Dial.HOLD);
        h.clientHello();
        h.client.all();
        h.call(1, Wire.message(0, 0));
        h.call(3, Wire.message(0, 0));
        assertThat(h.backends).isEmpty();
        assertThat(h.client.frames()).isEmpty();

        Wire.Peer b = h.connectHeld();
        assertThat(b.all())
                .extracting(Frame::type, Frame::stream)
                .containsExactly(
                        tuple(Wire.SETTINGS, 0),
                        tuple(Wire.WINDOW_UPDATE, 0),
                        tuple(Wire.HEADERS, 1),
                        tuple(Wire.DATA, 1),
                        tuple(Wire.HEADERS, 3),
                        tuple(Wire.DATA, 3));
        assertThat(h.dials).isEqualTo(1);
    }

    @Test
    void aLostRuntimeFailsItsCallsAndTheNextCallConnectsAgain() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.headers(1, Wire.response(), false));
        h.client.all();
        h.backend().ch.close();
        h.settle();

        List<Frame> down = h.client.frames();
        assertThat(down).hasSize(1);
        assertThat(down.get(0).endStream()).isTrue();
        assertThat(down.get(0).headers().get("grpc-status")).hasToString("14");
        assertThat(down.get(0).headers().get("grpc-message").toString())
                .contains("connection to the runtime test-runtime was lost");

        h.call(3, Wire.message(0, 0));
        assertThat(h.dials).isEqualTo(2);
        assertThat(h.backend().frames()).extracting(Frame::type).contains(Wire.HEADERS);
    }

    @Test
    void theClientsConnectionClosingClosesItsRuntimeConnections() {
        h.clientHello(0x4, 0);
        h.backendHello();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.headers(1, Wire.response(), false), Wire.data(1, new byte[100], false));
        h.client.ch.close();
        h.settle();
        assertThat(h.backend().ch.isOpen()).isFalse();
    }

    // ---------------------------------------------------------------- the client's rules

    /** The GOAWAY the client got, after which its connection closed. */
    private Frame goAwayAndClosed() {
        List<Frame> down = h.client.frames();
        assertThat(down).isNotEmpty();
        Frame last = down.get(down.size() - 1);
        assertThat(last.type()).isEqualTo(Wire.GOAWAY);
        assertThat(h.client.ch.isOpen()).as("closed after the GOAWAY").isFalse();
        return last;
    }

    @Test
    void headersOnAnEvenStreamIdEndTheConnection() {
        h.ready();
        h.fromClient(Wire.headers(2, Wire.request(Wire.VERSION), true));
        Frame f = goAwayAndClosed();
        assertThat(f.goAwayCode()).isEqualTo(Wire.PROTOCOL_ERROR);
        assertThat(f.goAwayLastStream()).isZero();
        assertThat(f.goAwayDebug()).isEqualTo("received an illegal stream id: 2");
        assertThat(h.backend().ch.isOpen()).as("the backend leg goes with it").isFalse();
    }

    @Test
    void headersOnAStreamIdAlreadyUsedEndTheConnection() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.fromClient(Wire.headers(1, Wire.request(Wire.VERSION), true));
        Frame f = goAwayAndClosed();
        assertThat(f.goAwayCode()).isEqualTo(Wire.PROTOCOL_ERROR);
        assertThat(f.goAwayLastStream()).isEqualTo(1);
    }

    @Test
    void headersOnAStreamIdBelowAnEarlierOneEndTheConnection() {
        h.ready();
        h.call(5, Wire.message(0, 0));
        h.fromClient(Wire.headers(3, Wire.request(Wire.VERSION), true));
        Frame f = goAwayAndClosed();
        assertThat(f.goAwayCode()).isEqualTo(Wire.PROTOCOL_ERROR);
        assertThat(f.goAwayLastStream()).isEqualTo(5);
    }

    @Test
    void aClientThatDoesNotSpeakHttp2GetsAGoAwaySayingSo() {
        h.fromClient(
                Unpooled.copiedBuffer(
                        "GET / HTTP/1.1\r\nHost: x\r\n\r\n", StandardCharsets.US_ASCII));
        Frame f = goAwayAndClosed();
        assertThat(f.goAwayCode()).isEqualTo(Wire.PROTOCOL_ERROR);
        assertThat(f.goAwayDebug()).isEqualTo("not an HTTP/2 connection preface");
    }

    @Test
    void aFrameLargerThanTheProxyTakesEndsTheConnection() {
        h.ready();
        h.fromClient(Wire.headers(1, Wire.request(Wire.VERSION), false));
        h.fromClient(Wire.data(1, new byte[FrameWriter.DEFAULT_MAX_FRAME + 1], true));
        Frame f = goAwayAndClosed();
        assertThat(f.goAwayCode()).isEqualTo(Wire.FRAME_SIZE_ERROR);
        assertThat(f.goAwayLastStream()).isEqualTo(1);
    }

    @Test
    void dataOnAStreamTheClientAlreadyEndedIsDropped() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.backend().all();
        h.fromClient(Wire.data(1, new byte[3], false));
        assertThat(h.backend().frames()).isEmpty();
        assertThat(h.client.ch.isOpen()).isTrue();
    }
}
