package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** KEP-5334's objects from snapshots, and the lines of a stream. */
class PullProgressJsonTest {

    private static PullProgress p(
            PullProgress.Phase phase,
            int percent,
            long done,
            long total,
            String message,
            LayerProgress... layers) {
        return new PullProgress(
                "reg.example/app:1",
                phase,
                1,
                percent,
                done,
                total,
                0,
                List.of(layers),
                message,
                Instant.EPOCH);
    }

    private static JsonObject json(String line) {
        return JsonParser.parseString(line).getAsJsonObject();
    }

    @Test
    void imageObjectsCarryKepFieldsErrorOnlyOnFailureAndMinusOneForUnknown() {
        JsonObject pulling =
                json(PullProgressJson.imageLine(p(PullProgress.Phase.PULLING, 40, 40, 100, "")));
        assertThat(pulling.keySet())
                .containsExactly("name", "image", "progress", "total", "percent", "phase");
        assertThat(pulling.get("name").getAsString()).isEqualTo("reg.example/app:1");
        assertThat(pulling.get("total").getAsLong()).isEqualTo(100);

        JsonObject unknown =
                json(
                        PullProgressJson.imageLine(
                                p(
                                        PullProgress.Phase.PULLING,
                                        -1,
                                        0,
                                        0,
                                        "the runtime has no containerd content service")));
        assertThat(unknown.get("total").getAsLong()).isEqualTo(-1);
        assertThat(unknown.get("message").getAsString()).contains("content service");
        assertThat(unknown.has("error")).isFalse();

        JsonObject failed =
                json(
                        PullProgressJson.imageLine(
                                p(PullProgress.Phase.FAILED, 12, 12, 100, "NOT_FOUND: not found")));
        assertThat(failed.get("error").getAsString()).isEqualTo("NOT_FOUND: not found");
        assertThat(failed.get("phase").getAsString()).isEqualTo("failed");
        assertThat(failed.has("message")).isFalse();
    }

    @Test
    void aStreamWritesChangedLayersThenTheImageAndStartsAfreshAfterTheEnd() {
        PullProgressJson.Lines lines = new PullProgressJson.Lines();
        LayerProgress a0 = new LayerProgress("sha256:aa", "Downloading", 0, 60);
        LayerProgress b0 = new LayerProgress("sha256:bb", "Waiting", 0, 40);
        List<String> first =
                lines.lines(p(PullProgress.Phase.PULLING, 0, 0, 100, "", a0, b0)).lines().toList();
        assertThat(first).hasSize(3);
        assertThat(json(first.get(0)).get("layer").getAsString()).isEqualTo("sha256:aa");
        assertThat(json(first.get(0)).get("name").getAsString()).isEqualTo("sha256:aa");
        assertThat(json(first.get(2)).has("layer")).isFalse();

        LayerProgress a1 = new LayerProgress("sha256:aa", "Downloading", 30, 60);
        List<String> second =
                lines.lines(p(PullProgress.Phase.PULLING, 30, 30, 100, "", a1, b0))
                        .lines()
                        .toList();
        assertThat(second).as("only the layer that changed, then the image").hasSize(2);
        assertThat(lines.lines(p(PullProgress.Phase.PULLING, 30, 30, 100, "", a1, b0)))
                .as("nothing changed")
                .isEmpty();

        LayerProgress a2 = new LayerProgress("sha256:aa", "Complete", 60, 60);
        LayerProgress b2 = new LayerProgress("sha256:bb", "Complete", 40, 40);
        List<String> end =
                lines.lines(p(PullProgress.Phase.SUCCEEDED, 100, 100, 100, "", a2, b2))
                        .lines()
                        .toList();
        assertThat(json(end.get(end.size() - 1)).get("percent").getAsInt()).isEqualTo(100);
        assertThat(lines.lines(p(PullProgress.Phase.PULLING, 0, 0, 100, "", a0, b0)).lines())
                .as("a later pull of the image is written in full")
                .hasSize(3);
    }
}
