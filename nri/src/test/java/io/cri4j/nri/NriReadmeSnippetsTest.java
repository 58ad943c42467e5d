package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles every {@code java} block of {@code nri/README.md} against the real modules, each as a
 * method body of one class; the blocks may use {@code host} (a {@code HookHost}), {@code pod} and
 * {@code container}.
 */
class NriReadmeSnippetsTest {

    private static final String IMPORTS =
            String.join(
                    "\n",
                    "import io.cri4j.hook.*;",
                    "import io.cri4j.hook.cri.*;",
                    "import io.cri4j.hook.koordinator.*;",
                    "import io.cri4j.hook.host.*;",
                    "import io.cri4j.nri.*;",
                    "import io.cri4j.hook.nri.v1alpha1.Container;",
                    "import io.cri4j.hook.nri.v1alpha1.PodSandbox;",
                    "import io.cri4j.testing.fake.FakeCriServer;",
                    "import java.nio.file.Path;",
                    "import java.time.Duration;",
                    "import java.util.List;",
                    "import java.util.concurrent.TimeUnit;");

    @TempDir Path out;

    @Test
    void everyJavaSnippetInTheNriReadmeCompiles() throws IOException {
        Path readme = Path.of("README.md");
        assertThat(readme)
                .as("nri/README.md (tests run in the module's directory)")
                .isRegularFile();
        Matcher m =
                Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL)
                        .matcher(Files.readString(readme, StandardCharsets.UTF_8));
        StringBuilder members = new StringBuilder();
        int n = 0;
        while (m.find()) {
            n++;
            members.append("static void snippet")
                    .append(n)
                    .append("() throws Exception {\n")
                    .append(m.group(1))
                    .append("\n}\n");
        }
        assertThat(n).as("java snippets in nri/README.md").isGreaterThanOrEqualTo(3);
        String source =
                IMPORTS
                        + "\n\nclass NriReadme {\n"
                        + "static HookHost host;\nstatic PodSandbox pod;\nstatic Container container;\n"
                        + members
                        + "}\n";
        JavaFileObject file =
                new SimpleJavaFileObject(
                        URI.create("string:///NriReadme.java"), JavaFileObject.Kind.SOURCE) {
                    @Override
                    public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                        return source;
                    }
                };
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        try (StandardJavaFileManager files =
                compiler.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
            boolean ok =
                    compiler.getTask(
                                    diagnostics,
                                    files,
                                    null,
                                    List.of(
                                            "-classpath",
                                            System.getProperty("java.class.path"),
                                            "-d",
                                            out.toString(),
                                            "-proc:none"),
                                    null,
                                    List.of(file))
                            .call();
            assertThat(ok)
                    .as("nri/README.md snippets compile:\n" + diagnostics + "\n" + source)
                    .isTrue();
        }
    }
}
