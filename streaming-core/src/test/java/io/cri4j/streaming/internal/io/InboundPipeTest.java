package io.cri4j.streaming.internal.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The pipe queues offered buffers without copying and releases each exactly once. */
class InboundPipeTest {
    private final InboundCredit credit = new InboundCredit(new EmbeddedChannel(), 1 << 20, 1 << 10);

    private static ByteBuf buf(String s) {
        return Unpooled.directBuffer().writeBytes(s.getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void buffersAreReadAcrossChunkBoundariesAndReleasedOnceDrained() throws IOException {
        InboundPipe pipe = new InboundPipe(credit);
        ByteBuf a = buf("hello ");
        ByteBuf b = buf("world");
        pipe.offer(a);
        pipe.offer(b);
        pipe.offer("!".getBytes(StandardCharsets.US_ASCII));
        pipe.finish();
        assertThat(credit.bufferedBytes()).isEqualTo(12);
        assertThat(pipe.available()).isEqualTo(12);

        byte[] four = new byte[4];
        assertThat(pipe.read(four, 0, 4)).isEqualTo(4);
        assertThat(a.refCnt()).isEqualTo(1); // partly read: still queued
        assertThat(new String(pipe.readAllBytes(), StandardCharsets.US_ASCII)).isEqualTo("o world!");
        assertThat(a.refCnt()).isZero();
        assertThat(b.refCnt()).isZero();
        assertThat(credit.bufferedBytes()).isZero();
        assertThat(pipe.read()).isEqualTo(-1);
    }

    @Test
    void closeAbortAndLateOffersReleaseWhatIsQueued() {
        InboundPipe closed = new InboundPipe(credit);
        ByteBuf queued = buf("queued");
        closed.offer(queued);
        closed.close();
        assertThat(queued.refCnt()).isZero();
        ByteBuf late = buf("late");
        closed.offer(late);
        assertThat(late.refCnt()).isZero();

        InboundPipe aborted = new InboundPipe(credit);
        ByteBuf pending = buf("pending");
        aborted.offer(pending);
        aborted.abort(new IOException("stream reset"));
        assertThat(pending.refCnt()).isZero();
        assertThatThrownBy(aborted::read).isInstanceOf(IOException.class).hasMessageContaining("stream reset");

        InboundPipe finished = new InboundPipe(credit);
        finished.finish();
        ByteBuf afterEof = buf("after EOF");
        finished.offer(afterEof);
        assertThat(afterEof.refCnt()).isZero();
        ByteBuf empty = Unpooled.directBuffer(4);
        new InboundPipe(credit).offer(empty);
        assertThat(empty.refCnt()).isZero();
        assertThat(credit.bufferedBytes()).isZero();
    }
}
