package io.cri4j.nri.internal.host;

import static io.cri4j.nri.internal.Bytes.hex;
import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.nri.internal.Bytes;
import io.cri4j.nri.internal.mux.MuxFraming;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The runtime's end of NRI against the bytes containerd 2.1.4 and NRI's Go plugin {@code
 * nri-logger} exchanged while it registered ({@code golden/nri-logger-registers-with-containerd-2.1.4.txt}):
 * fed the plugin's bytes, cut at every boundary, {@link HostConnection} answers and calls with
 * exactly containerd's bytes (only {@code timeout_nano}, which containerd takes from a running
 * clock, is set to ours) and ends with the plugin registered with containerd's subscription.
 */
class HostGoldenConversationTest {

    private static List<byte[]> lines() throws IOException {
        List<byte[]> out = new ArrayList<>();
        try (InputStream in =
                HostGoldenConversationTest.class.getResourceAsStream(
                        "/golden/nri-logger-registers-with-containerd-2.1.4.txt")) {
            for (String l : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (!l.isBlank() && !l.startsWith("#")) {
                    out.add(hex(l.trim().split(" ")[1]));
                }
            }
        }
        return out;
    }

    /** A host like containerd 2.1.4: its name and version, NRI v0.8 (no NRI version), no pods. */
    private static HostConnection.Settings containerdLike() {
        HookHost host =
                new HookHost() {
                    @Override
                    public String runtimeName() {
                        return "containerd";
                    }

                    @Override
                    public String runtimeVersion() {
                        return "2.1.4+unknown";
                    }

                    @Override
                    public CompletionStage<RuntimeSnapshot> snapshot() {
                        return CompletableFuture.completedFuture(RuntimeSnapshot.empty());
                    }

                    @Override
                    public RuntimeHandle runtime() {
                        return (u, e) -> CompletableFuture.completedFuture(List.of());
                    }
                };
        return new HostConnection.Settings(
                host,
                Duration.ofSeconds(5),
                Duration.ofSeconds(2),
                FailurePolicy.FAIL,
                n -> "",
                "");
    }

    private static final class Conversation implements HostConnection.Registry {
        final AtomicReference<HostConnection> ready = new AtomicReference<>();
        final AtomicReference<Throwable> gone = new AtomicReference<>();
        final EmbeddedChannel channel;

        Conversation() {
            channel =
                    new EmbeddedChannel(
                            new ChannelInitializer<Channel>() {
                                @Override
                                protected void initChannel(Channel ch) {
                                    ch.pipeline()
                                            .addLast(
                                                    new HostConnection(
                                                            ch,
                                                            containerdLike(),
                                                            Conversation.this,
                                                            "golden"));
                                }
                            });
        }

        @Override
        public String reserve(HostConnection c, String name) {
            return null;
        }

        @Override
        public void ready(HostConnection c) {
            ready.set(c);
        }

        @Override
        public void gone(HostConnection c, Throwable cause) {
            gone.set(cause);
        }

        void feed(List<ByteBuf> pieces) {
            for (ByteBuf b : pieces) {
                channel.writeInbound(b);
            }
            channel.runPendingTasks();
        }

        /** Everything the host wrote since the last call, as one byte string. */
        byte[] written() {
            List<byte[]> parts = new ArrayList<>();
            for (ByteBuf b; (b = channel.readOutbound()) != null; ) {
                parts.add(ByteBufUtil.getBytes(b));
                b.release();
            }
            return Bytes.concat(parts.toArray(byte[][]::new));
        }
    }

    /** Containerd's mux frame for a request, with our {@code timeout_nano}. */
    private static byte[] withOurTimeout(byte[] muxFrame, long ourTimeoutNanos) throws IOException {
        byte[] ttrpc = Arrays.copyOfRange(muxFrame, 8, muxFrame.length);
        Request golden = Request.parseFrom(Arrays.copyOfRange(ttrpc, 10, ttrpc.length));
        assertThat(golden.getTimeoutNano())
                .as("containerd's timeout_nano")
                .isBetween(1L, ourTimeoutNanos);
        byte[] data = golden.toBuilder().setTimeoutNano(ourTimeoutNanos).build().toByteArray();
        int stream = java.nio.ByteBuffer.wrap(ttrpc).getInt(4);
        return ByteBufUtil.getBytes(
                MuxFraming.frames(
                        UnpooledByteBufAllocator.DEFAULT,
                        java.nio.ByteBuffer.wrap(muxFrame).getInt(0),
                        new TtrpcFrame(stream, TtrpcFrame.REQUEST, 0, data).encode()));
    }

    @Test
    void answersAndCallsWithContainerdsBytes() throws Exception {
        List<byte[]> c = lines();
        long ours = Duration.ofSeconds(2).toNanos();
        Conversation conv = new Conversation();
        conv.feed(List.of(Unpooled.wrappedBuffer(c.get(0)))); // RegisterPlugin
        assertThat(hex(conv.written()))
                .isEqualTo(hex(Bytes.concat(c.get(1), withOurTimeout(c.get(2), ours))));
        conv.feed(List.of(Unpooled.wrappedBuffer(c.get(3)))); // ConfigureResponse
        assertThat(hex(conv.written())).isEqualTo(hex(withOurTimeout(c.get(4), ours)));
        assertThat(conv.ready.get()).as("listed only after Synchronize").isNull();
        conv.feed(List.of(Unpooled.wrappedBuffer(c.get(5)))); // SynchronizeResponse
        assertThat(conv.written()).isEmpty();
        HostConnection plugin = conv.ready.get();
        assertThat(plugin).isNotNull();
        assertThat(plugin.describe()).isEqualTo("plugin 20-nri-logger");
        assertThat(plugin.hook().name()).isEqualTo("nri-logger");
        assertThat(plugin.hook().policy().index()).isEqualTo(20);
        assertThat(HookEvent.nriMask(plugin.hook().events())).isEqualTo(0x7ff);
        assertThat(conv.gone.get()).isNull();
        conv.channel.finishAndReleaseAll();
    }

    @Test
    void readsThePluginsBytesCutAtEveryBoundary() throws Exception {
        List<byte[]> c = lines();
        int[] fromPlugin = {0, 3, 5};
        for (int phase = 0; phase < fromPlugin.length; phase++) {
            for (List<ByteBuf> cut : Bytes.cuts(c.get(fromPlugin[phase]))) {
                Conversation conv = new Conversation();
                for (int i = 0; i < fromPlugin.length; i++) {
                    conv.feed(
                            i == phase
                                    ? cut
                                    : List.of(Unpooled.wrappedBuffer(c.get(fromPlugin[i]))));
                }
                assertThat(conv.ready.get())
                        .as("registered with phase %d cut into %d", phase, cut.size())
                        .isNotNull();
                assertThat(conv.gone.get()).isNull();
                conv.channel.finishAndReleaseAll();
            }
        }
    }
}
