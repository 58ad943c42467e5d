package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.EmptyHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A backend answer collected for an intercepted call. */
class CaptureTest {
    private final List<Capture> told = new ArrayList<>();
    private final Capture capture = new Capture(10, told::add);

    /** A header block as the relay keeps it (after headroom). */
    private static ByteBuf kept(Http2Headers h) {
        ByteBuf b = Unpooled.buffer();
        b.writerIndex(HeaderBlocks.HEADROOM).readerIndex(HeaderBlocks.HEADROOM);
        b.writeBytes(Wire.block(h));
        return b;
    }

    @Test
    void keepsTheBlocksAsTheyCameAndTheBodyAndIsToldOnceAtTheEnd() {
        ByteBuf headers = kept(Wire.response());
        ByteBuf trailers = kept(Wire.trailers(0));
        capture.headers(EmptyHttp2Headers.INSTANCE, headers, false);
        assertThat(capture.gotHeaders).isTrue();
        assertThat(capture.headers).as("not decoded: it goes on as it came").isNull();
        capture.data(Unpooled.wrappedBuffer(new byte[] {1, 2, 3}), false);
        capture.data(Unpooled.wrappedBuffer(new byte[] {4}), false);
        assertThat(told).isEmpty();
        capture.headers(Wire.trailers(0), trailers, true);

        assertThat(told).containsExactly(capture);
        assertThat(capture.done).isTrue();
        assertThat(capture.trailers.get("grpc-status")).hasToString("0");
        assertThat(io.netty.buffer.ByteBufUtil.getBytes(capture.body)).containsExactly(1, 2, 3, 4);
        assertThat(capture.take(true)).isSameAs(headers);
        assertThat(capture.take(false)).isSameAs(trailers);
        capture.release();
        assertThat(capture.body).isNull();
        headers.release();
        trailers.release();
    }

    @Test
    void aTrailersOnlyAnswerIsDecodedForItsStatus() {
        ByteBuf block = kept(Wire.trailers(5));
        capture.headers(EmptyHttp2Headers.INSTANCE, block, true);
        assertThat(told).hasSize(1);
        assertThat(capture.headers.get("grpc-status")).hasToString("5");
        assertThat(block.readableBytes()).as("the block itself is kept whole").isPositive();
        capture.release();
        assertThat(block.refCnt()).isZero();
    }

    @Test
    void aBodyBeyondTheLimitIsDroppedAndSaidToBeTooLarge() {
        capture.headers(Wire.response(), null, false);
        capture.data(Unpooled.wrappedBuffer(new byte[8]), false);
        capture.data(Unpooled.wrappedBuffer(new byte[3]), false);
        assertThat(capture.tooLarge).isTrue();
        assertThat(capture.body).isNull();
        capture.data(Unpooled.wrappedBuffer(new byte[1]), true);
        assertThat(capture.body).isNull();
        assertThat(told).hasSize(1);
    }

    @Test
    void blocksAfterTheTrailersAreReleased() {
        capture.headers(Wire.response(), null, false);
        capture.headers(Wire.trailers(0), null, false);
        ByteBuf extra = kept(Wire.trailers(1));
        capture.headers(Wire.trailers(1), extra, true);
        assertThat(extra.refCnt()).isZero();
        assertThat(capture.trailers.get("grpc-status")).hasToString("0");
    }

    @Test
    void aFailureReleasesWhatWasCollectedAndSaysWhy() {
        ByteBuf headers = kept(Wire.response());
        capture.headers(EmptyHttp2Headers.INSTANCE, headers, false);
        capture.data(Unpooled.wrappedBuffer(new byte[] {1}), false);
        ByteBuf body = capture.body;
        capture.fail(Status.UNAVAILABLE.withDescription("gone"));

        assertThat(told).containsExactly(capture);
        assertThat(capture.failure.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(headers.refCnt()).isZero();
        assertThat(body.refCnt()).isZero();
        assertThat(capture.body).isNull();
        capture.fail(Status.INTERNAL);
        assertThat(told).as("told once").hasSize(1);
    }

    @Test
    void aBlockThatCouldNotGoOnAsItCameIsEncodedAgain() {
        try (RelayHarness h = new RelayHarness()) {
            capture.owner = h.relay;
            capture.headers(Wire.response(), null, false);
            capture.headers(Wire.trailers(0), null, true);
            ByteBuf first = capture.take(true);
            ByteBuf last = capture.take(false);
            assertThat(Wire.decode(io.netty.buffer.ByteBufUtil.getBytes(first)).status())
                    .hasToString("200");
            assertThat(Wire.decode(io.netty.buffer.ByteBufUtil.getBytes(last)).get("grpc-status"))
                    .hasToString("0");
            first.release();
            last.release();
        }
    }
}
