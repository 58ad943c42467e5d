package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The deployment manifests ({@code deploy/}) and the image's entrypoint start a main class of
 * this module by name: each name they give is a class here with a {@code main}.
 */
class DeployManifestsTest {

    static final Pattern CLASS_NAME =
            Pattern.compile("\\bio\\.cri4j(?:\\.[a-z][a-z0-9]*)+\\.[A-Z]\\w*");

    static List<String> classNames(Path file) throws Exception {
        Matcher m = CLASS_NAME.matcher(Files.readString(file));
        return m.results().map(r -> r.group()).distinct().toList();
    }

    @Test
    void everyMainClassTheManifestsAndTheImageNameIsThisModules() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(Path.of("..", "deploy"))) {
            files =
                    Stream.concat(
                                    s.filter(
                                            p ->
                                                    p.toString().endsWith(".yaml")
                                                            || p.toString().endsWith(".service")),
                                    Stream.of(Path.of("pom.xml")))
                            .sorted()
                            .toList();
        }
        assertThat(files)
                .as("the manifests")
                .anyMatch(p -> p.getFileName().toString().equals("cri4j-nri-daemonset.yaml"));
        assertThat(classNames(Path.of("..", "deploy", "cri4j-nri-daemonset.yaml")))
                .as("the NRI DaemonSet's command")
                .containsExactly(Cri4jCli.class.getName());
        assertThat(classNames(Path.of("pom.xml")))
                .as("the image's entrypoint")
                .contains(Cri4jCli.class.getName());
        for (Path f : files) {
            for (String name : classNames(f)) {
                Method main = Class.forName(name).getMethod("main", String[].class);
                assertThat(Modifier.isStatic(main.getModifiers())).as("%s in %s", name, f).isTrue();
            }
        }
    }
}
