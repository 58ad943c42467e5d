package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's container image ({@code target/jib-image.tar}) holds the command line and its
 * libs, and no test framework. The image is built only with {@code -Pimage}, so this test is
 * named to match neither surefire's nor failsafe's patterns and runs only when named, as
 * {@code .ci/run} does with the image:
 * {@code mvn -pl cli -am -Pimage -Dtest=none -Dit.test=ImageLibsCheck verify}.
 */
class ImageLibsCheck {

    @TempDir Path dir;

    @Test
    void theImageHoldsTheCommandLineAndNoJUnitClass() throws Exception {
        Path tar = Path.of("target", "jib-image.tar").toAbsolutePath();
        assertThat(tar)
                .as("the image, built by mvn -pl cli -am -Pimage -DskipTests verify")
                .exists();
        Path image = dir.resolve("image");
        untar(tar, image);
        // a docker-archive: manifest.json names the layer files, base layer first
        JsonArray layers =
                JsonParser.parseString(Files.readString(image.resolve("manifest.json")))
                        .getAsJsonArray()
                        .get(0)
                        .getAsJsonObject()
                        .getAsJsonArray("Layers");
        Path root = dir.resolve("root");
        for (var layer : layers) {
            untar(image.resolve(layer.getAsString()), root);
        }
        // the command line as a jar (packaged mode: class data sharing takes no directory)
        Path cli = root.resolve("app/classpath").resolve("cri4j-cli-" + version() + ".jar");
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(cli.toFile())) {
            assertThat(jar.getEntry("io/cri4j/cli/Cri4jCli.class")).as("%s", cli).isNotNull();
        }
        assertThat(Files.readString(root.resolve("app/jib-classpath-file")))
                .startsWith("/app/classpath/")
                .contains("/app/libs/picocli-")
                .doesNotContain("/app/classes");
        List<Path> libs;
        try (Stream<Path> s =
                Stream.concat(
                        Files.list(root.resolve("app/libs")),
                        Files.list(root.resolve("app/classpath")))) {
            libs = s.toList();
        }
        assertThat(libs)
                .as("the image's libs")
                .anyMatch(p -> p.getFileName().toString().startsWith("picocli-"))
                .noneMatch(p -> p.getFileName().toString().contains("junit"));
        for (Path lib : libs) {
            assertThat(ProductionClasspathIT.junitEntries(lib))
                    .as("JUnit classes in the image's %s", lib.getFileName())
                    .isEmpty();
        }
        try (Stream<Path> all = Files.walk(root.resolve("app"))) {
            assertThat(all.map(p -> root.relativize(p).toString()))
                    .as("the image's classes and resources")
                    .noneMatch(p -> p.contains("org/junit") || p.contains("org/opentest4j"));
        }
    }

    /** The project's version, from the jar the build made next to the image. */
    private static String version() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("target"))) {
            return s.map(p -> p.getFileName().toString())
                    .filter(n -> n.matches("cri4j-cli-.*\\.jar") && !n.contains("sources"))
                    .map(n -> n.substring("cri4j-cli-".length(), n.length() - ".jar".length()))
                    .filter(v -> Character.isDigit(v.charAt(0)))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no cri4j-cli-VERSION.jar in target"));
        }
    }

    /** Extracts a tar (gzip-compressed or not) with the system's tar. */
    static void untar(Path tar, Path into) throws IOException, InterruptedException {
        Files.createDirectories(into);
        Process p =
                new ProcessBuilder("tar", "-xf", tar.toString(), "-C", into.toString())
                        .redirectErrorStream(true)
                        .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("tar -xf %s", tar).isTrue();
        assertThat(p.exitValue()).as("tar -xf %s: %s", tar, out).isZero();
    }
}
