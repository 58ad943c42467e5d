package io.cri4j.nri.internal.ttrpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.proto.Response;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * ttrpc's rules as containerd/ttrpc's server enforces them ({@code server.go}) and the 4 MiB
 * limit in both directions. The peer's frames are written here byte by byte from the protocol;
 * the real Go peers are in the golden and containerd tests.
 */
class TtrpcPeerTest {

    private final EmbeddedChannel loop = new EmbeddedChannel();
    private final List<TtrpcFrame> sent = new ArrayList<>();
    private final List<TtrpcPeer.Call> served = new ArrayList<>();

    private TtrpcPeer peer(TtrpcPeer.Service service) {
        return new TtrpcPeer(
                "test",
                loop.eventLoop(),
                f -> {
                    TtrpcFrameParser p =
                            new TtrpcFrameParser(
                                    new TtrpcFrameParser.Listener() {
                                        @Override
                                        public void frame(TtrpcFrame frame) {
                                            sent.add(frame);
                                        }

                                        @Override
                                        public void oversized(int streamId, int type, long length) {
                                            throw new AssertionError("sent an oversized frame");
                                        }
                                    });
                    p.feed(Unpooled.wrappedBuffer(f));
                },
                service);
    }

    private final TtrpcPeer echo =
            peer(
                    call -> {
                        served.add(call);
                        return CompletableFuture.completedFuture(call.payload());
                    });

    @AfterEach
    void close() {
        loop.finishAndReleaseAll();
    }

    private static byte[] request(String method, byte[] payload) {
        return Request.newBuilder()
                .setService("svc")
                .setMethod(method)
                .setPayload(ByteString.copyFrom(payload))
                .setTimeoutNano(2_000_000_000L)
                .build()
                .toByteArray();
    }

    private void receive(TtrpcPeer p, int stream, int type, byte[] data) {
        p.receive(Unpooled.wrappedBuffer(new TtrpcFrame(stream, type, 0, data).encode()));
    }

    private Response lastResponse(int stream) throws Exception {
        TtrpcFrame f = sent.get(sent.size() - 1);
        assertThat(f.streamId()).isEqualTo(stream);
        assertThat(f.type()).isEqualTo(TtrpcFrame.RESPONSE);
        return Response.parseFrom(f.data());
    }

    @Test
    void servesARequestAndAnswersOnItsStreamWithoutAStatus() throws Exception {
        receive(echo, 1, TtrpcFrame.REQUEST, request("Echo", new byte[] {1, 2}));
        Response r = lastResponse(1);
        assertThat(r.hasStatus()).isFalse();
        assertThat(r.getPayload().toByteArray()).containsExactly(1, 2);
        assertThat(served.get(0).fullMethod()).isEqualTo("svc/Echo");
        assertThat(served.get(0).timeoutNanos()).isEqualTo(2_000_000_000L);
        assertThat(served.get(0).deadlineNanos()).isPresent();
    }

    @Test
    void refusesEvenAndReusedStreamIdsAsGosServerDoes() throws Exception {
        receive(echo, 2, TtrpcFrame.REQUEST, request("Echo", new byte[0]));
        assertThat(lastResponse(2).getStatus().getMessage())
                .isEqualTo("StreamID must be odd for client initiated streams");
        receive(echo, 5, TtrpcFrame.REQUEST, request("Echo", new byte[0]));
        receive(echo, 3, TtrpcFrame.REQUEST, request("Echo", new byte[0]));
        Response reused = lastResponse(3);
        assertThat(reused.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(reused.getStatus().getMessage())
                .isEqualTo("StreamID cannot be re-used and must increment");
        assertThat(served).hasSize(1);
    }

    @Test
    void answersGarbageAndStreamDataWithInvalidArgumentAndGoesOn() throws Exception {
        receive(echo, 1, TtrpcFrame.REQUEST, new byte[] {(byte) 0xff, (byte) 0xff, 0x01});
        assertThat(lastResponse(1).getStatus().getCode())
                .isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(lastResponse(1).getStatus().getMessage())
                .startsWith("unmarshal request error: ");
        receive(echo, 3, TtrpcFrame.DATA, new byte[] {1});
        assertThat(lastResponse(3).getStatus().getMessage())
                .isEqualTo("StreamID is no longer active");
        receive(echo, 5, TtrpcFrame.REQUEST, request("Echo", new byte[] {9}));
        assertThat(lastResponse(5).getPayload().toByteArray()).containsExactly(9);
    }

    @Test
    void answersAnOversizedRequestWithResourceExhaustedAndServesTheNext() throws Exception {
        byte[] big = new byte[TtrpcFrame.MAX_DATA_LENGTH + 100];
        // header by hand: the encoder refuses this size
        echo.receive(Unpooled.buffer().writeInt(big.length).writeInt(1).writeByte(1).writeByte(0));
        echo.receive(Unpooled.wrappedBuffer(big));
        Response r = lastResponse(1);
        assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
        assertThat(r.getStatus().getMessage())
                .isEqualTo("message length 4194404 exceed maximum message size of 4194304");
        receive(echo, 3, TtrpcFrame.REQUEST, request("Echo", new byte[] {7}));
        assertThat(lastResponse(3).getPayload().toByteArray()).containsExactly(7);
    }

    @Test
    void answersWithResourceExhaustedInsteadOfAnAnswerOverFourMebibytes() throws Exception {
        TtrpcPeer huge =
                peer(
                        call ->
                                CompletableFuture.completedFuture(
                                        new byte[TtrpcFrame.MAX_DATA_LENGTH]));
        receive(huge, 1, TtrpcFrame.REQUEST, request("Big", new byte[0]));
        Response r = lastResponse(1);
        assertThat(r.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
        assertThat(r.getStatus().getMessage()).contains("the answer to svc/Big has 4194309 bytes");
    }

    @Test
    void keepsAHandlersStatusAndMessage() throws Exception {
        TtrpcPeer failing =
                peer(
                        call ->
                                CompletableFuture.failedFuture(
                                        Status.NOT_FOUND
                                                .withDescription("no container c1")
                                                .asRuntimeException()));
        receive(failing, 1, TtrpcFrame.REQUEST, request("Get", new byte[0]));
        assertThat(lastResponse(1).getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND.value());
        assertThat(lastResponse(1).getStatus().getMessage()).isEqualTo("no container c1");
        TtrpcPeer throwing =
                peer(
                        call -> {
                            throw new IllegalStateException("boom");
                        });
        receive(throwing, 1, TtrpcFrame.REQUEST, request("Get", new byte[0]));
        assertThat(lastResponse(1).getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN.value());
        assertThat(lastResponse(1).getStatus().getMessage()).isEqualTo("boom");
    }

    @Test
    void callsOnOddStreamsCountingUpAndCompletesFromTheAnswer() throws Exception {
        TtrpcPeer client = peer(null);
        CompletableFuture<byte[]> a =
                client.call("svc", "A", new byte[] {1}, Duration.ofSeconds(2));
        CompletableFuture<byte[]> b = client.call("svc", "B", new byte[0], Duration.ofSeconds(2));
        assertThat(sent).extracting(TtrpcFrame::streamId).containsExactly(1, 3);
        Request ra = Request.parseFrom(sent.get(0).data());
        assertThat(ra.getMethod()).isEqualTo("A");
        assertThat(ra.getTimeoutNano()).isEqualTo(2_000_000_000L);
        receive(
                client,
                3,
                TtrpcFrame.RESPONSE,
                Response.newBuilder()
                        .setStatus(
                                io.cri4j.nri.internal.proto.Status.newBuilder()
                                        .setCode(Status.Code.PERMISSION_DENIED.value())
                                        .setMessage("no"))
                        .build()
                        .toByteArray());
        receive(
                client,
                1,
                TtrpcFrame.RESPONSE,
                Response.newBuilder()
                        .setPayload(ByteString.copyFrom(new byte[] {5}))
                        .build()
                        .toByteArray());
        assertThat(a.join()).containsExactly(5);
        assertThat(b).isCompletedExceptionally();
        StatusRuntimeException e =
                (StatusRuntimeException) TtrpcStatus.unwrap(b.handle((v, t) -> t).join());
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(e.getStatus().getDescription()).isEqualTo("no");
    }

    @Test
    void aCallWithoutAnswerFailsAtItsTimeoutAndALateAnswerIsDropped() {
        loop.freezeTime();
        TtrpcPeer client = peer(null);
        CompletableFuture<byte[]> a =
                client.call("svc", "Slow", new byte[0], Duration.ofMillis(300));
        loop.advanceTimeBy(299, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertThat(a).isNotDone();
        loop.advanceTimeBy(2, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertThat(a).isCompletedExceptionally();
        assertThat(a.handle((v, t) -> TtrpcStatus.unwrap(t).getMessage()).join())
                .isEqualTo("DEADLINE_EXCEEDED: test: no answer to svc/Slow within 300 ms");
        receive(client, 1, TtrpcFrame.RESPONSE, new byte[0]);
    }

    @Test
    void refusesToSendARequestOverFourMebibytes() {
        TtrpcPeer client = peer(null);
        CompletableFuture<byte[]> a =
                client.call(
                        "svc", "Big", new byte[TtrpcFrame.MAX_DATA_LENGTH], Duration.ofSeconds(1));
        assertThat(a.handle((v, t) -> TtrpcStatus.unwrap(t).getMessage()).join())
                .startsWith("RESOURCE_EXHAUSTED: request svc/Big: message length ")
                .endsWith("exceeds ttrpc's maximum message size of 4194304 bytes");
        assertThat(sent).isEmpty();
    }

    @Test
    void closingFailsPendingCallsAndLaterOnes() {
        TtrpcPeer client = peer(null);
        CompletableFuture<byte[]> a = client.call("svc", "A", new byte[0], Duration.ofSeconds(1));
        client.close("connection closed: runtime went away");
        assertThat(a.handle((v, t) -> TtrpcStatus.unwrap(t).getMessage()).join())
                .isEqualTo("UNAVAILABLE: test: connection closed: runtime went away");
        CompletableFuture<byte[]> b = client.call("svc", "B", new byte[0], Duration.ofSeconds(1));
        assertThat(b).isCompletedExceptionally();
    }
}
