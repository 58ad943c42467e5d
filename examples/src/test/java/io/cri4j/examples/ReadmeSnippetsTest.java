package io.cri4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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

/** Compiles every {@code java} code block of the README against the real modules, so the quick starts stay true. */
class ReadmeSnippetsTest {

    private static final String IMPORTS =
            String.join(
                    "\n",
                    "import io.cri4j.cri.*;",
                    "import io.cri4j.cri.v1.*;",
                    "import io.cri4j.hook.*;",
                    "import io.cri4j.hook.cri.*;",
                    "import io.cri4j.hook.koordinator.*;",
                    "import io.cri4j.nri.NriPlugin;",
                    "import io.cri4j.proxy.*;",
                    "import io.cri4j.streaming.*;",
                    "import io.cri4j.imagepull.*;",
                    "import io.cri4j.testing.fake.*;",
                    "import io.grpc.ManagedChannel;",
                    "import io.grpc.Status;",
                    "import java.net.URI;",
                    "import java.nio.file.Path;",
                    "import java.time.Duration;",
                    "import java.util.*;",
                    "import org.junit.jupiter.api.Test;",
                    "import org.junit.jupiter.api.extension.RegisterExtension;");

    @TempDir Path out;

    @Test
    void everyJavaSnippetInTheReadmeCompiles() throws IOException {
        String readme = Files.readString(readme(), StandardCharsets.UTF_8);
        Matcher m = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(readme);
        List<JavaFileObject> sources = new ArrayList<>();
        int n = 0;
        while (m.find()) {
            String body = m.group(1);
            String cls = "Snippet" + (++n);
            boolean declaresClass = Pattern.compile("(?m)^class ").matcher(body).find();
            String source =
                    IMPORTS
                            + "\n\nclass "
                            + cls
                            + " {\n"
                            + (declaresClass
                                    ? body
                                    : "static void run() throws Exception {\n" + body + "\n}\n")
                            + "}\n";
            sources.add(
                    new SimpleJavaFileObject(
                            URI.create("string:///" + cls + ".java"), JavaFileObject.Kind.SOURCE) {
                        @Override
                        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                            return source;
                        }
                    });
        }
        assertThat(n).as("java snippets in README.md").isGreaterThanOrEqualTo(5);
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
                                    sources)
                            .call();
            assertThat(ok).as("README snippets compile:\n" + diagnostics).isTrue();
        }
    }

    private static Path readme() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("README.md"))
                || !Files.isDirectory(dir.resolve("cri-api"))) {
            dir = dir.getParent();
            assertThat(dir).as("repository root with README.md").isNotNull();
        }
        return dir.resolve("README.md");
    }
}
