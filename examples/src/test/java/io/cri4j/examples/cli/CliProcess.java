package io.cri4j.examples.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The shaded CLI jar run as a real process, as a user runs {@code ./cri4j}. */
final class CliProcess implements AutoCloseable {

    private final Process process;
    private final BufferedReader out;

    private CliProcess(Process process) {
        this.process = process;
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    static CliProcess start(String... args) throws IOException {
        Path jar = Path.of("target", "cri4j-cli.jar").toAbsolutePath();
        assertThat(jar).as("the shaded CLI jar (built in the package phase)").exists();
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar.toString()));
        cmd.addAll(List.of(args));
        return new CliProcess(new ProcessBuilder(cmd).redirectErrorStream(true).start());
    }

    /** The next line of output, waiting at most 60 s (a JVM start on a loaded machine). */
    String nextLine() throws Exception {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }).get(60, TimeUnit.SECONDS);
    }

    /** Everything it printed until it exits, and its exit code. */
    CliRun finish() throws Exception {
        StringBuilder text = new StringBuilder();
        for (String line; (line = out.readLine()) != null; ) {
            text.append(line).append('\n');
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new CliRun(process.exitValue(), text.toString(), "");
    }

    /** Sends SIGTERM; everything it printed until it exits, and its exit code. */
    CliRun terminate() throws Exception {
        process.toHandle().destroy(); // SIGTERM, leaving the output stream open (Process.destroy closes it)
        return finish();
    }

    /** Sends SIGTERM and waits for the exit. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("exits on SIGTERM").isTrue();
    }
}
