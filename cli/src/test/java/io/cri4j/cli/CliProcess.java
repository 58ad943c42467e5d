package io.cri4j.cli;

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
        this.out =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    static CliProcess start(String... args) throws IOException {
        // -Dcri4j.cli.jar runs another build of the CLI (to show a test failing on an older one)
        Path jar =
                Path.of(System.getProperty("cri4j.cli.jar", "target/cri4j-cli.jar"))
                        .toAbsolutePath();
        assertThat(jar).as("the shaded CLI jar (built in the package phase)").exists();
        List<String> cmd =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-jar",
                                jar.toString()));
        cmd.addAll(List.of(args));
        return new CliProcess(new ProcessBuilder(cmd).redirectErrorStream(true).start());
    }

    /** The process. */
    Process process() {
        return process;
    }

    /**
     * Reads the rest of the output on a daemon thread from now on (so that a chatty process
     * never blocks on a full pipe), keeping it for {@link #drained()}.
     */
    void drain() {
        Thread t =
                new Thread(
                        () -> {
                            try {
                                for (String line; (line = out.readLine()) != null; ) {
                                    synchronized (drained) {
                                        drained.append(line).append('\n');
                                    }
                                }
                            } catch (IOException e) {
                                // the process is gone
                            }
                        },
                        "cli-output-drain");
        t.setDaemon(true);
        t.start();
    }

    private final StringBuilder drained = new StringBuilder();

    /** What {@link #drain()} has read so far. */
    String drained() {
        synchronized (drained) {
            return drained.toString();
        }
    }

    /** The next line of output, waiting at most 60 s (a JVM start on a loaded machine). */
    String nextLine() throws Exception {
        return CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return out.readLine();
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                        })
                .get(60, TimeUnit.SECONDS);
    }

    /** Everything it printed until it exits (within 60 s, else it is killed), and its exit code. */
    CliRun finish() throws Exception {
        StringBuilder text = new StringBuilder();
        CompletableFuture<Void> read =
                CompletableFuture.runAsync(
                        () -> {
                            try {
                                for (String line; (line = out.readLine()) != null; ) {
                                    synchronized (text) {
                                        text.append(line).append('\n');
                                    }
                                }
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                        });
        boolean exited = process.waitFor(60, TimeUnit.SECONDS);
        if (!exited) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        read.get(10, TimeUnit.SECONDS);
        synchronized (text) {
            assertThat(exited).as("exits by itself within 60 s; printed:%n%s", text).isTrue();
            return new CliRun(process.exitValue(), text.toString(), "");
        }
    }

    /** Sends SIGTERM; everything it printed until it exits, and its exit code. */
    CliRun terminate() throws Exception {
        process.toHandle()
                .destroy(); // SIGTERM, leaving the output stream open (Process.destroy closes it)
        return finish();
    }

    /** Sends SIGTERM and waits for the exit. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("exits on SIGTERM").isTrue();
    }
}
