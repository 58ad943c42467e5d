package io.cri4j.examples.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The jar {@code ./cri4j demo} runs ({@code target/cri4j-examples.jar}) as a process: the demo on
 * the embedded fake to its summary, and the command line's one-line usage errors for the demo's
 * options.
 */
class DemoCliIT {

    record Run(int exitCode, String out) {}

    static Run run(String... args) throws Exception {
        Path jar = Path.of("target", "cri4j-examples.jar").toAbsolutePath();
        assertThat(jar).as("the shaded examples jar (built in the package phase)").exists();
        List<String> cmd =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-jar",
                                jar.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        CompletableFuture<String> out =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return new String(
                                        p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                        });
        boolean exited = p.waitFor(3, TimeUnit.MINUTES);
        if (!exited) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String text = out.get(10, TimeUnit.SECONDS);
        assertThat(exited).as("exits by itself; printed:%n%s", text).isTrue();
        return new Run(p.exitValue(), text);
    }

    @Test
    void runsTheDemoOnTheEmbeddedFakeToItsSummary() throws Exception {
        Run run = run("demo");
        assertThat(run.exitCode()).as(run.out()).isZero();
        // what the demo does is DemoAgentIT's; here: the jar runs it to the end
        assertThat(run.out()).contains("Summary", "(embedded fake)", "live exec");
        // with the proxy's metrics read from its registry (micrometer-core in the jar)
        assertThat(run.out()).containsPattern("metrics +\\d+ calls through the proxy");
    }

    @Test
    void theDemosOptionsAreCheckedInOneLine() throws Exception {
        Run run = run("demo", "--runtime-endpoint", "foo://bar");
        assertThat(run.exitCode()).as(run.out()).isEqualTo(2);
        assertThat(run.out().lines().toList())
                .singleElement()
                .asString()
                .startsWith("cri4j demo: ")
                .contains("foo://bar", "unsupported scheme");
    }

    @Test
    void hasTheCommandLinesOtherCommands() throws Exception {
        Run run = run("--help");
        assertThat(run.exitCode()).as(run.out()).isZero();
        assertThat(run.out())
                .startsWith("Usage: cri4j")
                .contains("demo", "proxy", "fake-runtime", "version");
    }
}
