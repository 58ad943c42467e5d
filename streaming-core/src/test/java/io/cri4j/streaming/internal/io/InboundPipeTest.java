package io.cri4j.streaming.internal.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
        assertThat(new String(pipe.readAllBytes(), StandardCharsets.US_ASCII))
                .isEqualTo("o world!");
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
        assertThatThrownBy(aborted::read)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("stream reset");

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

    @Test
    void closingAfterAPartialReadReleasesTheChunkBeingRead() throws IOException {
        InboundPipe pipe = new InboundPipe(credit);
        ByteBuf a = buf("partly read");
        pipe.offer(a);
        assertThat(pipe.read(new byte[6], 0, 6)).isEqualTo(6);
        assertThat(a.refCnt()).isEqualTo(1);
        pipe.close();
        assertThat(a.refCnt()).isZero();
        assertThat(credit.bufferedBytes()).isZero();
        assertThatThrownBy(pipe::read).isInstanceOf(IOException.class);
    }

    @Test
    void aWaitingReaderIsWokenWhenTheDeferredWakeupsAreFlushed() throws Exception {
        InboundPipe pipe = new InboundPipe(credit);
        ReaderWakeups wakeups = new ReaderWakeups();
        CompletableFuture<String> got = new CompletableFuture<>();
        Thread reader =
                new Thread(
                        () -> {
                            try {
                                byte[] b = new byte[16];
                                int n = pipe.read(b, 0, b.length);
                                got.complete(new String(b, 0, n, StandardCharsets.US_ASCII));
                            } catch (Throwable t) {
                                got.completeExceptionally(t);
                            }
                        });
        reader.start();
        while (reader.getState() != Thread.State.WAITING) { // blocked in read, nothing queued
            Thread.onSpinWait();
        }
        pipe.offer(buf("frame 1 "), wakeups);
        pipe.offer(buf("frame 2"), wakeups);
        wakeups.flush();
        assertThat(got.get(10, TimeUnit.SECONDS)).isEqualTo("frame 1 ");
        assertThat(new String(pipe.readNBytes(7), StandardCharsets.US_ASCII)).isEqualTo("frame 2");
        reader.join();
    }

    /** An event loop offers many chunks with deferred wake-ups while a reader drains: nothing lost, reordered or leaked. */
    @Test
    void concurrentOffersAndReadsKeepOrderAndReleaseEverything() throws Exception {
        InboundPipe pipe = new InboundPipe(credit);
        ReaderWakeups wakeups = new ReaderWakeups();
        List<ByteBuf> offered = new ArrayList<>();
        int chunks = 20_000;
        for (int i = 0; i < chunks; i++) {
            offered.add(Unpooled.directBuffer(4).writeInt(i));
        }
        Thread loop =
                new Thread(
                        () -> {
                            for (int i = 0; i < chunks; i++) {
                                pipe.offer(offered.get(i), wakeups);
                                if (i % 7 == 0) {
                                    wakeups.flush(); // a socket read of a few frames completes
                                }
                            }
                            wakeups.flush();
                            pipe.finish();
                        });
        loop.start();
        java.io.DataInputStream in = new java.io.DataInputStream(pipe);
        CompletableFuture<Integer> read =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                int i = 0;
                                byte[] rest = new byte[3];
                                while (true) {
                                    int first = in.read(); // odd reads: chunk boundaries fall
                                    // inside reads
                                    if (first < 0) {
                                        return i;
                                    }
                                    in.readFully(rest);
                                    int v =
                                            first << 24
                                                    | (rest[0] & 0xFF) << 16
                                                    | (rest[1] & 0xFF) << 8
                                                    | (rest[2] & 0xFF);
                                    assertThat(v).isEqualTo(i);
                                    i++;
                                }
                            } catch (IOException e) {
                                throw new java.io.UncheckedIOException(e);
                            }
                        });
        assertThat(read.get(60, TimeUnit.SECONDS)).isEqualTo(chunks);
        loop.join();
        assertThat(offered).allSatisfy(b -> assertThat(b.refCnt()).isZero());
        assertThat(credit.bufferedBytes()).isZero();
    }
}
