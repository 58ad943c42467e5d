package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.imagepull.LayerProgress;
import io.cri4j.imagepull.PullJob;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.imagepull.PullProgress.Phase;
import io.cri4j.imagepull.PullResult;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The progress bars, fed scripted snapshots through our own PullJob seam. */
class PullProgressRendererTest {

    /** A job whose progress the test sets. */
    static final class ScriptedJob implements PullJob {
        volatile PullProgress progress;

        @Override
        public String image() {
            return progress.image();
        }

        @Override
        public CompletableFuture<PullResult> result() {
            return new CompletableFuture<>();
        }

        @Override
        public PullProgress progress() {
            return progress;
        }

        @Override
        public Flow.Publisher<PullProgress> progressPublisher() {
            throw new UnsupportedOperationException();
        }

        @Override
        public PullJob onProgress(Consumer<PullProgress> listener) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean cancel() {
            return false;
        }
    }

    private static PullProgress p(
            Phase phase,
            int percent,
            long done,
            long total,
            List<LayerProgress> layers,
            String msg) {
        return new PullProgress(
                "reg/app:1",
                phase,
                1,
                percent,
                done,
                total,
                2 * 1048576.0,
                layers,
                msg,
                Instant.EPOCH);
    }

    @Test
    void terminalModeRedrawsImageAndLayerLinesInPlace() {
        StringWriter sw = new StringWriter();
        ScriptedJob job = new ScriptedJob();
        PullProgressRenderer r = new PullProgressRenderer(new PrintWriter(sw), true, List.of(job));
        List<LayerProgress> layers =
                List.of(
                        new LayerProgress("aaaaaaaaaaaa", "Download complete", 1048576, 1048576),
                        new LayerProgress("bbbbbbbbbbbb", "Downloading", 1048576, 3 * 1048576));
        job.progress = p(Phase.PULLING, 50, 2 * 1048576, 4 * 1048576, layers, "");
        r.render(false);
        String first = sw.toString();
        assertThat(first)
                .isEqualTo(
                        "\033[2Kreg/app:1  pulling  [############............]  50%  2.0 MiB / 4.0 MiB"
                                + "  layers 1/2  2.0 MiB/s\n"
                                + "\033[2K  aaaaaaaaaaaa  [########################]  1.0 MiB / 1.0 MiB  Download complete\n"
                                + "\033[2K  bbbbbbbbbbbb  [#######.................]  1.0 MiB / 3.0 MiB  Downloading\n");
        job.progress = p(Phase.SUCCEEDED, 100, 4 * 1048576, 4 * 1048576, layers, "");
        r.render(true);
        assertThat(sw.toString().substring(first.length()))
                .as("cursor back up three lines, then the final line")
                .isEqualTo(
                        "\033[3A\033[2Kreg/app:1  succeeded  [########################] 100%  4.0 MiB / 4.0 MiB\n");
    }

    @Test
    void plainModePrintsALinePerVisibleChangeAndSaysWhenProgressIsUnknown() {
        StringWriter sw = new StringWriter();
        ScriptedJob job = new ScriptedJob();
        PullProgressRenderer r = new PullProgressRenderer(new PrintWriter(sw), false, List.of(job));
        job.progress =
                p(Phase.PULLING, -1, 0, 0, List.of(), "CRI PullImage reports no byte progress");
        r.render(false);
        r.render(false); // unchanged: no new line
        job.progress = p(Phase.PULLING, 51, 51, 100, List.of(), "");
        r.render(false);
        job.progress = p(Phase.PULLING, 52, 52, 100, List.of(), ""); // same 5 % step: no line
        r.render(false);
        assertThat(sw.toString().lines().toList())
                .containsExactly(
                        "reg/app:1  pulling  [????????????????????????]   ?%  2.0 MiB/s  (CRI PullImage reports no byte progress)",
                        "reg/app:1  pulling  [############............]  51%  0.0 MiB / 0.0 MiB  2.0 MiB/s");
    }
}
