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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./cri4j proxy}, {@code fake-runtime} and {@code nri-plugin} with a jar newer than the
 * command's class data sharing archive make the archive with a training run, then start from it:
 * the command answers (a Version; registered with an NRI host), the archive sits next to the jar,
 * and the command's own classes come from it.
 */
class CdsArchiveIT {
    private static final Path JAR = Path.of("target", "cri4j-cli.jar");

    @TempDir Path dir;

    private static Path archive(String command) {
        return Path.of("target", "cri4j-cli-" + command + ".jsa");
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Starts {@code ./cri4j ARGS} with its class loading logged to {@code dir/classes.log}. */
    private Process script(String... args) throws IOException {
        Files.deleteIfExists(archive(args[0]));
        Files.deleteIfExists(Path.of(archive(args[0]) + ".failed"));
        List<String> cmd = new ArrayList<>(List.of("bash", Path.of("..", "cri4j").toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb =
                new ProcessBuilder(cmd)
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve("script.out").toFile());
        pb.environment()
                .put("CRI4J_JAVA_OPTS", "-Xlog:class+load=info:file=" + dir.resolve("classes.log"));
        pb.environment().remove("CRI4J_CDS");
        return pb.start();
    }

    /** The archive was made for {@code command} and {@code probe} came from it. */
    private void madeAndUsed(String command, String probe) throws IOException {
        Path jsa = archive(command);
        assertThat(jsa).as("the archive next to the jar").isRegularFile();
        assertThat(Files.getLastModifiedTime(jsa))
                .as("made after the jar")
                .isGreaterThanOrEqualTo(Files.getLastModifiedTime(JAR));
        assertThat(Files.readString(dir.resolve("script.out")))
                .contains("making the class data sharing archive " + jsa.getFileName())
                .doesNotContain("training run failed");
        assertThat(Files.readAllLines(dir.resolve("classes.log")))
                .as("the command's classes, loaded from the archive")
                .anyMatch(l -> l.contains(probe + " ") && l.contains("shared objects file (top)"))
                .as("picocli's classes (Java 5 class files in picocli's jar), from the archive")
                .anyMatch(
                        l ->
                                l.contains("picocli.CommandLine ")
                                        && l.contains("shared objects file (top)"));
    }

    @Test
    void picocliIsInTheJarAsClassFilesAnArchiveCanHoldAndEachVerifies() throws Exception {
        List<String> names = new ArrayList<>();
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(JAR.toFile())) {
            for (java.util.zip.ZipEntry e : java.util.Collections.list(jar.entries())) {
                if (e.getName().startsWith("picocli/") && e.getName().endsWith(".class")) {
                    byte[] head = jar.getInputStream(e).readNBytes(8);
                    assertThat(((head[6] & 0xff) << 8) | (head[7] & 0xff))
                            .as("class file version of %s (Java 6 is 50)", e.getName())
                            .isGreaterThanOrEqualTo(50);
                    names.add(e.getName().replace('/', '.').replaceAll("\\.class$", ""));
                }
            }
        }
        assertThat(names).as("picocli's classes in the jar").hasSizeGreaterThan(100);
        // the verifier checks each class's rewritten stack map frames when it links the class
        try (java.net.URLClassLoader loader =
                new java.net.URLClassLoader(
                        new java.net.URL[] {JAR.toUri().toURL()},
                        ClassLoader.getPlatformClassLoader())) {
            for (String name : names) {
                assertThat(Class.forName(name, true, loader).getClassLoader())
                        .as(name)
                        .isSameAs(loader);
            }
        }
    }

    private Process fakeRuntime(String... extra) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java(), "-jar", JAR.toString(), "fake-runtime"));
        cmd.addAll(List.of(extra));
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("fake.out").toFile())
                .start();
    }

    private static void stop(Process... ps) throws InterruptedException {
        for (Process p : ps) {
            if (p != null) {
                p.destroy();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void theFirstProxyMakesItsArchiveAndStartsFromIt() throws Exception {
        Path fakeSock = dir.resolve("fake.sock");
        Path proxySock = dir.resolve("proxy.sock");
        Process fake = fakeRuntime("--listen", "unix://" + fakeSock);
        Process proxy = null;
        try {
            proxy =
                    script(
                            "proxy",
                            "--listen",
                            "unix://" + proxySock,
                            "--backend",
                            "unix://" + fakeSock);
            answered(proxySock, 180);
            madeAndUsed("proxy", "io.cri4j.proxy.CriProxy");
        } finally {
            stop(proxy, fake);
        }
    }

    @Test
    void theFirstFakeRuntimeMakesItsArchiveAndStartsFromIt() throws Exception {
        Path sock = dir.resolve("rt.sock");
        Process fake = script("fake-runtime", "--listen", "unix://" + sock);
        try {
            answered(sock, 180);
            madeAndUsed("fake-runtime", "io.cri4j.testing.fake.FakeCriServer");
        } finally {
            stop(fake);
        }
    }

    @Test
    void theFirstNriPluginMakesItsArchiveAndStartsFromIt() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        try (Stream<Path> built = Files.list(Path.of("..", "example-hook-plugin", "target"))) {
            for (Path j :
                    built.filter(
                                    p ->
                                            p.getFileName()
                                                    .toString()
                                                    .matches("cri4j-example-hook-plugin-.*\\.jar"))
                            .toList()) {
                Files.copy(j, plugins.resolve(j.getFileName()));
            }
        }
        Path nriSock = dir.resolve("nri.sock");
        Process host =
                fakeRuntime(
                        "--listen",
                        "unix://" + dir.resolve("host.sock"),
                        "--nri-socket",
                        "unix://" + nriSock);
        Process plugin = null;
        try {
            answered(dir.resolve("host.sock"), 60);
            plugin =
                    script(
                            "nri-plugin",
                            "--socket",
                            "unix://" + nriSock,
                            "--plugins",
                            plugins.toString());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            while (!Files.readString(dir.resolve("script.out"))
                    .contains("nri-plugin: registered as")) {
                assertThat(plugin.isAlive())
                        .as("the plugin runs: %s", Files.readString(dir.resolve("script.out")))
                        .isTrue();
                assertThat(System.nanoTime()).as("registered in 180 s").isLessThan(deadline);
                Thread.sleep(100); // polling a condition with a deadline
            }
            madeAndUsed("nri-plugin", "io.cri4j.nri.NriPlugin");
        } finally {
            stop(plugin, host);
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
