package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./cri4j proxy} with a jar newer than its class data sharing archive makes the archive
 * with a training run, then starts the proxy from it: the proxy answers through the script, the
 * archive sits next to the jar, and the proxy's own classes come from it.
 */
class ProxyCdsArchiveIT {
    private static final Path JAR = Path.of("target", "cri4j-cli.jar");
    private static final Path JSA = Path.of("target", "cri4j-cli.jsa");

    @TempDir Path dir;

    @Test
    void theFirstProxyMakesTheArchiveAndStartsFromIt() throws Exception {
        Files.deleteIfExists(JSA);
        Files.deleteIfExists(Path.of("target", "cri4j-cli.jsa.failed"));
        Path fakeSock = dir.resolve("fake.sock");
        Path proxySock = dir.resolve("proxy.sock");
        Path classLog = dir.resolve("classes.log");
        Process fake =
                new ProcessBuilder(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-jar",
                                JAR.toString(),
                                "fake-runtime",
                                "--listen",
                                "unix://" + fakeSock)
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve("fake.out").toFile())
                        .start();
        Process proxy = null;
        try {
            ProcessBuilder pb =
                    new ProcessBuilder(
                                    "bash",
                                    Path.of("..", "cri4j").toString(),
                                    "proxy",
                                    "--listen",
                                    "unix://" + proxySock,
                                    "--backend",
                                    "unix://" + fakeSock)
                            .redirectErrorStream(true)
                            .redirectOutput(dir.resolve("proxy.out").toFile());
            pb.environment().put("CRI4J_JAVA_OPTS", "-Xlog:class+load=info:file=" + classLog);
            pb.environment().remove("CRI4J_CDS");
            proxy = pb.start();
            answered(proxySock, 180);
            assertThat(JSA).as("the archive next to the jar").isRegularFile();
            assertThat(Files.getLastModifiedTime(JSA))
                    .as("made after the jar")
                    .isGreaterThanOrEqualTo(Files.getLastModifiedTime(JAR));
            assertThat(Files.readString(dir.resolve("proxy.out")))
                    .contains("making the class data sharing archive")
                    .doesNotContain("training run failed");
            List<String> loaded = Files.readAllLines(classLog);
            assertThat(loaded)
                    .as("the proxy's classes, loaded from the archive")
                    .anyMatch(
                            l ->
                                    l.contains("io.cri4j.proxy.CriProxy ")
                                            && l.contains("shared objects file (top)"));
        } finally {
            if (proxy != null) {
                proxy.destroy();
                proxy.waitFor(30, TimeUnit.SECONDS);
            }
            fake.destroy();
            fake.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** Polls a Version through {@code sock} until it is answered. */
    private static void answered(Path sock, int seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            if (Files.exists(sock)) {
                ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(sock));
                try {
                    RuntimeServiceGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(5, TimeUnit.SECONDS)
                            .version(VersionRequest.getDefaultInstance());
                    return;
                } catch (StatusRuntimeException e) {
                    if (System.nanoTime() > deadline) {
                        throw e;
                    }
                } finally {
                    ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("no answer on " + sock + " in " + seconds + " s");
            }
            Thread.sleep(100); // polling a condition with a deadline
        }
    }
}
