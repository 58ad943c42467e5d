package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.proxy.internal.relay.Wire.Frame;
import io.grpc.MethodDescriptor;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An intercepted call's trip through the relay: its request goes out on the backend leg with the
 * client's header block, the backend's answer is collected ({@link Capture}) for the chain, and
 * an answer the chain passes on unchanged reaches the client as the runtime sent it.
 */
class InterceptedRelayTest {
    /** Passes every Version call on unchanged, without blocking. */
    private static final AsyncCriInterceptor PASS_ON =
            new AsyncCriInterceptor() {
                @Override
                public <ReqT, RespT> CompletionStage<RespT> interceptUnaryAsync(
                        AsyncUnaryChain<ReqT, RespT> chain) {
                    return chain.proceed(chain.request());
                }
            };

    private final RelayHarness h =
            new RelayHarness(
                    List.of(PASS_ON),
                    List.<MethodDescriptor<?, ?>>of(RuntimeServiceGrpc.getVersionMethod()));

    @AfterEach
    void close() {
        h.close();
    }

    private static byte[] framed(byte[] message) {
        byte[] b = Wire.message(message.length, 0);
        System.arraycopy(message, 0, b, 5, message.length);
        return b;
    }

    /** The client's Version call; returns its header block. */
    private byte[] call(int stream) {
        byte[] block = Wire.block(Wire.request(Wire.VERSION));
        h.fromClient(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS, stream, block),
                Wire.data(stream, Wire.message(0, 0), true));
        return block;
    }

    @Test
    void anAnswerTheChainPassesOnReachesTheClientAsTheRuntimeSentIt() {
        h.ready();
        byte[] request = call(1);
        List<Frame> up = h.backend().frames();
        assertThat(up)
                .extracting(Frame::type, Frame::stream, Frame::endStream)
                .containsExactly(tuple(Wire.HEADERS, 1, false), tuple(Wire.DATA, 1, true));
        assertThat(up.get(0).payload()).as("the client's block as it came").isEqualTo(request);
        assertThat(up.get(1).payload()).isEqualTo(Wire.message(0, 0));

        byte[] response = Wire.block(Wire.response());
        byte[] message =
                framed(
                        VersionResponse.newBuilder()
                                .setRuntimeName("test")
                                .setRuntimeVersion("1.0")
                                .build()
                                .toByteArray());
        byte[] trailers = Wire.block(Wire.trailers(0));
        h.fromBackend(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS, 1, response),
                Wire.data(1, message, false),
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 1, trailers));

        List<Frame> down = h.client.frames();
        assertThat(down)
                .extracting(Frame::type, Frame::stream, Frame::endStream)
                .containsExactly(
                        tuple(Wire.HEADERS, 1, false),
                        tuple(Wire.DATA, 1, false),
                        tuple(Wire.HEADERS, 1, true));
        assertThat(down.get(0).payload()).isEqualTo(response);
        assertThat(down.get(1).payload()).isEqualTo(message);
        assertThat(down.get(2).payload()).isEqualTo(trailers);
    }

    @Test
    void aRuntimeErrorReachesTheClientAsTheRuntimeSentIt() {
        h.ready();
        call(1);
        byte[] trailersOnly =
                Wire.block(Wire.response().add("grpc-status", "9").add("grpc-message", "not now"));
        h.fromBackend(
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 1, trailersOnly));

        List<Frame> down = h.client.frames();
        assertThat(down)
                .extracting(Frame::type, Frame::endStream)
                .containsExactly(tuple(Wire.HEADERS, true));
        assertThat(down.get(0).payload()).isEqualTo(trailersOnly);
    }

    @Test
    void aRuntimeLostUnderAnInterceptedCallFailsItWithUnavailable() {
        h.ready();
        call(1);
        h.backend().ch.close();
        h.settle();

        List<Frame> down = h.client.frames();
        assertThat(down).hasSize(1);
        assertThat(down.get(0).endStream()).isTrue();
        assertThat(down.get(0).headers().get("grpc-status")).hasToString("14");
        assertThat(down.get(0).headers().get("grpc-message").toString())
                .contains("connection to the runtime test-runtime was lost");
    }

    @Test
    void aClientsResetOfAnInterceptedCallDropsTheRuntimesLaterAnswer() {
        h.ready();
        call(1);
        h.fromClient(Wire.rst(1, Wire.CANCEL));
        h.fromBackend(
                Wire.headers(1, Wire.response(), false),
                Wire.data(1, framed(new byte[0]), false),
                Wire.headers(1, Wire.trailers(0), true));
        assertThat(h.client.frames()).isEmpty();

        call(3);
        assertThat(h.backend().frames())
                .extracting(Frame::type, Frame::stream)
                .endsWith(tuple(Wire.HEADERS, 3), tuple(Wire.DATA, 3));
    }
}
