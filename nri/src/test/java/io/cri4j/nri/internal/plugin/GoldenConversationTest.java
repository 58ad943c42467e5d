package io.cri4j.nri.internal.plugin;

import static io.cri4j.nri.internal.Bytes.hex;
import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.ConfigureResponse;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeResponse;
import io.cri4j.nri.internal.Bytes;
import io.cri4j.nri.internal.mux.MuxFrameParser;
import io.cri4j.nri.internal.mux.MuxFraming;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.proto.Response;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
import io.cri4j.nri.internal.ttrpc.TtrpcFrameParser;
import io.cri4j.nri.internal.ttrpc.TtrpcPeer;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * What NRI's own Go plugin and containerd 2.1.4 really sent each other while the plugin
 * registered (captured with strace, {@code golden/nri-logger-registers-with-containerd-2.1.4.txt}):
 * our parsers read containerd's bytes, cut at every byte boundary, and our ttrpc and mux writers
 * produce exactly the bytes the Go plugin produced for the same messages.
 */
class GoldenConversationTest {

    private record Line(boolean toRuntime, byte[] bytes) {}

    private static List<Line> conversation() throws IOException {
        List<Line> out = new ArrayList<>();
        try (InputStream in =
                GoldenConversationTest.class.getResourceAsStream(
                        "/golden/nri-logger-registers-with-containerd-2.1.4.txt")) {
            for (String l : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (l.isBlank() || l.startsWith("#")) {
                    continue;
                }
                String[] f = l.trim().split(" ");
                out.add(new Line(f[0].equals("plugin>runtime"), hex(f[1])));
            }
        }
        return out;
    }

    private static byte[] fromRuntime() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        conversation().stream().filter(l -> !l.toRuntime()).forEach(l -> b.writeBytes(l.bytes()));
        return b.toByteArray();
    }

    @Test
    void readsWhatContainerdSentCutAtEveryByte() throws Exception {
        byte[] all = fromRuntime();
        Bytes.forEveryCut(
                all,
                pieces -> {
                    Map<Integer, List<TtrpcFrame>> frames = new HashMap<>();
                    Map<Integer, TtrpcFrameParser> ttrpc = new HashMap<>();
                    MuxFrameParser mux =
                            new MuxFrameParser(
                                    (conn, bytes) ->
                                            ttrpc.computeIfAbsent(
                                                            conn,
                                                            c ->
                                                                    new TtrpcFrameParser(
                                                                            new TtrpcFrameParser
                                                                                    .Listener() {
                                                                                @Override
                                                                                public void frame(
                                                                                        TtrpcFrame
                                                                                                frame) {
                                                                                    frames.computeIfAbsent(
                                                                                                    c,
                                                                                                    x ->
                                                                                                            new ArrayList<>())
                                                                                            .add(
                                                                                                    frame);
                                                                                }

                                                                                @Override
                                                                                public void
                                                                                        oversized(
                                                                                                int
                                                                                                        streamId,
                                                                                                int
                                                                                                        type,
                                                                                                long
                                                                                                        length) {
                                                                                    throw new AssertionError(
                                                                                            "no oversized frame here");
                                                                                }
                                                                            }))
                                                    .feed(bytes));
                    pieces.forEach(mux::feed);
                    try {
                        assertThat(frames.get(2))
                                .containsExactly(
                                        new TtrpcFrame(1, TtrpcFrame.RESPONSE, 0, new byte[0]));
                        List<TtrpcFrame> plugin = frames.get(1);
                        assertThat(plugin)
                                .extracting(TtrpcFrame::streamId, TtrpcFrame::type)
                                .containsExactly(
                                        org.assertj.core.groups.Tuple.tuple(1, 1),
                                        org.assertj.core.groups.Tuple.tuple(3, 1));
                        Request configure = Request.parseFrom(plugin.get(0).data());
                        assertThat(configure.getService()).isEqualTo("nri.pkg.api.v1alpha1.Plugin");
                        assertThat(configure.getMethod()).isEqualTo("Configure");
                        assertThat(configure.getTimeoutNano())
                                .isBetween(1_000_000_000L, 2_000_000_000L);
                        ConfigureRequest c = ConfigureRequest.parseFrom(configure.getPayload());
                        assertThat(c.getRuntimeName()).isEqualTo("containerd");
                        assertThat(c.getRuntimeVersion()).isEqualTo("2.1.4+unknown");
                        assertThat(c.getRegistrationTimeout()).isEqualTo(5000);
                        assertThat(c.getRequestTimeout()).isEqualTo(2000);
                        assertThat(c.getNRIVersion()).as("v0.8.0 has no NRI_version").isEmpty();
                        Request sync = Request.parseFrom(plugin.get(1).data());
                        assertThat(sync.getMethod()).isEqualTo("Synchronize");
                        assertThat(SynchronizeRequest.parseFrom(sync.getPayload()))
                                .isEqualTo(SynchronizeRequest.getDefaultInstance());
                    } catch (IOException e) {
                        throw new AssertionError(e);
                    }
                });
    }

    @Test
    void registersWithTheBytesNriLoggerWrites() throws Exception {
        byte[] golden = conversation().get(0).bytes();
        long timeout =
                Request.parseFrom(
                                ByteBufUtil.getBytes(
                                        Unpooled.wrappedBuffer(golden), 18, golden.length - 18))
                        .getTimeoutNano();
        EmbeddedChannel loop = new EmbeddedChannel();
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        TtrpcPeer runtime =
                new TtrpcPeer(
                        "runtime",
                        loop.eventLoop(),
                        f ->
                                wire.writeBytes(
                                        ByteBufUtil.getBytes(
                                                MuxFraming.frames(
                                                        UnpooledByteBufAllocator.DEFAULT, 2, f))),
                        null);
        CompletableFuture<byte[]> answer =
                runtime.call(
                        "nri.pkg.api.v1alpha1.Runtime",
                        "RegisterPlugin",
                        RegisterPluginRequest.newBuilder()
                                .setPluginName("nri-logger")
                                .setPluginIdx("20")
                                .build()
                                .toByteArray(),
                        Duration.ofNanos(timeout));
        assertThat(hex(wire.toByteArray())).isEqualTo(hex(golden));
        byte[] reply = conversation().get(1).bytes();
        runtime.receive(Unpooled.wrappedBuffer(reply, 8, reply.length - 8));
        assertThat(answer).isCompleted();
        assertThat(answer.join()).isEmpty();
        loop.finishAndReleaseAll();
    }

    @Test
    void answersConfigureAndSynchronizeWithTheBytesNriLoggerWrites() throws Exception {
        List<Line> c = conversation();
        EmbeddedChannel loop = new EmbeddedChannel();
        List<byte[]> wire = new ArrayList<>();
        TtrpcPeer plugin =
                new TtrpcPeer(
                        "plugin",
                        loop.eventLoop(),
                        f ->
                                wire.add(
                                        ByteBufUtil.getBytes(
                                                MuxFraming.frames(
                                                        UnpooledByteBufAllocator.DEFAULT, 1, f))),
                        call ->
                                CompletableFuture.completedFuture(
                                        switch (call.method()) {
                                            case "Configure" ->
                                                    ConfigureResponse.newBuilder()
                                                            .setEvents(0x7ff)
                                                            .build()
                                                            .toByteArray();
                                            case "Synchronize" ->
                                                    SynchronizeResponse.getDefaultInstance()
                                                            .toByteArray();
                                            default -> throw new AssertionError(call.method());
                                        }));
        for (int i : new int[] {2, 4}) {
            byte[] req = c.get(i).bytes();
            plugin.receive(Unpooled.wrappedBuffer(req, 8, req.length - 8));
        }
        assertThat(wire)
                .extracting(Bytes::hex)
                .containsExactly(hex(c.get(3).bytes()), hex(c.get(5).bytes()));
        assertThat(
                        Response.parseFrom(
                                        java.util.Arrays.copyOfRange(
                                                c.get(3).bytes(), 18, c.get(3).bytes().length))
                                .hasStatus())
                .as("Go's ttrpc sends no status on success")
                .isFalse();
        loop.finishAndReleaseAll();
    }
}
