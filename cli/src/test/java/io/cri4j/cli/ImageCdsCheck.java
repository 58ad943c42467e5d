package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's container image ({@code target/jib-image.tar}) starts its proxy from the class data
 * sharing archive it ships: in a chroot of the image's layers, the entrypoint with {@code
 * -Xshare:on} (the JVM refuses to start when it cannot map the archive: another JVM, or class
 * path files that differ from the training's) answers a Version relayed to a fake runtime, and
 * the command line's and the proxy's classes come from the archive. Runs only when named, with the
 * image: {@code mvn -pl cli -am -Pimage -Dtest=none -Dit.test='Image*Check' verify} (root or user
 * namespaces, as the image's training run, {@code src/image/train-cds.sh}).
 */
class ImageCdsCheck {

    @TempDir Path dir;

    @Test
    void theImagesProxyStartsFromTheArchiveItShips() throws Exception {
        Path tar = Path.of("target", "jib-image.tar").toAbsolutePath();
        assertThat(tar).as("the image, built by mvn -pl cli -am -Pimage verify").exists();
        Path log = dir.resolve("class-load.log");
        Process p =
                new ProcessBuilder(
                                "bash",
                                "src/image/train-cds.sh",
                                "--check",
                                tar.toString(),
                                log.toString())
                        .redirectErrorStream(true)
                        .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(3, TimeUnit.MINUTES)).as("train-cds.sh --check").isTrue();
        assertThat(p.exitValue()).as("train-cds.sh --check: %s", out).isZero();
        List<String> loaded = Files.readAllLines(log);
        assertThat(loaded)
                .as("where the proxy's classes came from")
                .anyMatch(
                        l -> l.contains(" io.cri4j.cli.Cri4jCli source: shared objects file (top)"))
                .anyMatch(
                        l ->
                                l.contains(
                                        " io.cri4j.proxy.CriProxy source: shared objects file (top)"))
                .as("picocli's classes (the image's picocli jar has archivable class files)")
                .anyMatch(
                        l -> l.contains(" picocli.CommandLine source: shared objects file (top)"));
        long fromArchive =
                loaded.stream()
                        .filter(l -> l.contains("source: shared objects file (top)"))
                        .count();
        assertThat(fromArchive).as("classes from the image's archive").isGreaterThan(1000);
    }
}
