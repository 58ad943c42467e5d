package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * What a node runs holds no test framework: the jar {@code ./cri4j} and the systemd unit run
 * ({@code target/cri4j-cli.jar}), and the runtime class path, which is what the container image's
 * libs are (ImageLibsCheck checks the image itself). {@code fake-runtime} needs cri-testing, whose
 * JUnit API is an optional dependency and so does not come with it.
 */
class ProductionClasspathIT {

    /** Whether a jar entry is a class (or resource) of JUnit or of its assertion errors. */
    static boolean isJUnit(String entry) {
        return entry.startsWith("org/junit/") || entry.startsWith("org/opentest4j/");
    }

    /** The JUnit entries of a jar. */
    static List<String> junitEntries(Path jar) throws IOException {
        try (JarFile j = new JarFile(jar.toFile())) {
            return j.stream()
                    .map(JarEntry::getName)
                    .filter(ProductionClasspathIT::isJUnit)
                    .toList();
        }
    }

    static List<String> entries(Path jar) throws IOException {
        try (JarFile j = new JarFile(jar.toFile())) {
            return j.stream().map(JarEntry::getName).toList();
        }
    }

    @Test
    void theCheckFindsJUnitWhereItIs() throws IOException, URISyntaxException {
        Path junitApi =
                Path.of(Test.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertThat(junitEntries(junitApi))
                .as("JUnit classes in %s", junitApi)
                .contains("org/junit/jupiter/api/Test.class");
    }

    @Test
    void theCliJarHoldsNoJUnitClass() throws IOException {
        Path jar = Path.of("target", "cri4j-cli.jar");
        assertThat(jar).as("the shaded CLI jar (built in the package phase)").exists();
        List<String> names = entries(jar);
        assertThat(names)
                .as("the command line, its dependencies, the fake runtime of fake-runtime")
                .contains(
                        "io/cri4j/cli/Cri4jCli.class",
                        "picocli/CommandLine.class",
                        "io/cri4j/testing/fake/FakeCriServer.class");
        assertThat(names)
                .as("JUnit classes in %s", jar)
                .filteredOn(ProductionClasspathIT::isJUnit)
                .isEmpty();
    }

    @Test
    void theRuntimeClassPathHoldsNoJUnitClass() throws IOException {
        // written by maven-dependency-plugin (build-classpath, runtime scope): the jars the image's
        // libs are
        String classpath = Files.readString(Path.of("target", "runtime-classpath.txt")).strip();
        List<Path> jars = Arrays.stream(classpath.split(File.pathSeparator)).map(Path::of).toList();
        assertThat(jars)
                .as("the runtime class path")
                .anyMatch(p -> p.getFileName().toString().startsWith("picocli-"))
                .anyMatch(p -> p.getFileName().toString().startsWith("cri4j-cri-testing-"))
                .noneMatch(p -> p.getFileName().toString().contains("junit"))
                .noneMatch(p -> p.getFileName().toString().startsWith("opentest4j"));
        for (Path jar : jars) {
            assertThat(junitEntries(jar)).as("JUnit classes in %s", jar).isEmpty();
        }
    }
}
