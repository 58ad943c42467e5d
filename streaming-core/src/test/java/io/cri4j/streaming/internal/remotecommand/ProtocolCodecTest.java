package io.cri4j.streaming.internal.remotecommand;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.streaming.TerminalSize;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProtocolCodecTest {
    @Test
    void exitCodeStatusIsMetav1StatusWithExitCodeCause() {
        JsonObject o = JsonParser.parseString(StatusJson.exitCode(42).toJson()).getAsJsonObject();
        assertThat(o.get("status").getAsString()).isEqualTo("Failure");
        assertThat(o.get("reason").getAsString()).isEqualTo("NonZeroExitCode");
        JsonObject cause =
                o.getAsJsonObject("details").getAsJsonArray("causes").get(0).getAsJsonObject();
        assertThat(cause.get("reason").getAsString()).isEqualTo("ExitCode");
        assertThat(cause.get("message").getAsString()).isEqualTo("42");
        assertThat(StatusJson.success().toJson())
                .isEqualTo("{\"metadata\":{},\"status\":\"Success\"}");
        assertThat(StatusJson.success().toText()).isEmpty();
        JsonObject ie =
                JsonParser.parseString(StatusJson.internalError("x").toJson()).getAsJsonObject();
        assertThat(ie.get("code").getAsInt()).isEqualTo(500);
        assertThat(ie.get("reason").getAsString()).isEqualTo("InternalError");
    }

    @Test
    void aClientsResizeMessageIsWhatGosEncoderWritesAndTheDecoderReads() {
        byte[] m = ResizeDecoder.message(new TerminalSize(65535, 0));
        assertThat(new String(m, StandardCharsets.UTF_8))
                .isEqualTo("{\"Width\":65535,\"Height\":0}\n");
        List<TerminalSize> got = new ArrayList<>();
        ResizeDecoder d = new ResizeDecoder(got::add, () -> {});
        d.feed(m);
        d.feed(ResizeDecoder.message(new TerminalSize(80, 24)));
        assertThat(got).containsExactly(new TerminalSize(65535, 0), new TerminalSize(80, 24));
    }

    @Test
    void resizeDecoderSplitsConcatenatedObjectsAcrossChunks() {
        List<TerminalSize> got = new ArrayList<>();
        boolean[] ended = {false};
        ResizeDecoder d = new ResizeDecoder(got::add, () -> ended[0] = true);
        byte[] all =
                "{\"Width\":80,\"Height\":24}\n{\"Width\":120,\"Height\":50}\n"
                        .getBytes(StandardCharsets.UTF_8);
        for (byte b : all) {
            d.feed(new byte[] {b});
        }
        assertThat(got).containsExactly(new TerminalSize(80, 24), new TerminalSize(120, 50));
        d.feed("garbage".getBytes(StandardCharsets.UTF_8));
        assertThat(ended[0]).isTrue();
        d.feed("{\"Width\":1,\"Height\":1}".getBytes(StandardCharsets.UTF_8));
        assertThat(got).hasSize(2);
    }
}
