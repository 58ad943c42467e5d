package io.cri4j.examples;

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
 * Compiles every {@code java} block of {@code hook-api/README.md} against the real modules, as one class: blocks
 * that declare classes or static members become members (so later blocks use the classes earlier ones declare),
 * other blocks become method bodies.
 */
class HookApiReadmeSnippetsTest {

    private static final String IMPORTS =
            String.join(
                    "\n",
                    "import io.cri4j.hook.*;",
                    "import io.cri4j.hook.cri.*;",
                    "import io.cri4j.hook.koordinator.*;",
                    "import io.cri4j.hook.Hook;",
                    "import io.cri4j.hook.Hooks;",
                    "import io.cri4j.hook.host.*;",
                    "import io.cri4j.hook.nri.v1alpha1.*;",
                    "import io.cri4j.cri.v1.ContainerEventResponse;",
                    "import io.cri4j.cri.v1.CreateContainerRequest;",
                    "import io.cri4j.cri.v1.CreateContainerResponse;",
                    "import io.cri4j.cri.v1.GetEventsRequest;",
                    "import io.cri4j.cri.v1.RunPodSandboxRequest;",
                    "import io.cri4j.cri.v1.RunPodSandboxResponse;",
                    "import io.cri4j.cri.v1.VersionRequest;",
                    "import io.cri4j.cri.v1.VersionResponse;",
                    "import io.cri4j.proxy.CriProxy;",
                    "import io.grpc.Metadata;",
                    "import io.grpc.Status;",
                    "import io.grpc.StatusException;",
                    "import io.grpc.stub.StreamObserver;",
                    "import java.util.concurrent.ExecutorService;",
                    "import java.util.concurrent.Executors;",
                    "import io.cri4j.testing.fake.*;",
                    "import java.time.Duration;",
                    "import java.util.List;",
                    "import java.util.Map;",
                    "import java.util.Optional;",
                    "import java.util.concurrent.CompletableFuture;",
                    "import java.util.concurrent.CompletionStage;",
                    "import java.util.concurrent.TimeUnit;",
                    "import org.junit.jupiter.api.Test;",
                    "import org.junit.jupiter.api.extension.RegisterExtension;");

    @TempDir Path out;

    @Test
    void everyJavaSnippetInTheHookApiReadmeCompiles() throws IOException {
        String readme = Files.readString(readme(), StandardCharsets.UTF_8);
        Matcher m = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(readme);
        StringBuilder members = new StringBuilder();
        int n = 0;
        while (m.find()) {
            String body = m.group(1);
            n++;
            String first = body.strip();
            if (first.startsWith("class ") || first.startsWith("static ")) {
                members.append(body.replaceAll("(?m)^class ", "static class ")).append('\n');
            } else {
                members.append("static void snippet")
                        .append(n)
                        .append("() throws Exception {\n")
                        .append(body)
                        .append("\n}\n");
            }
        }
        assertThat(n).as("java snippets in hook-api/README.md").isGreaterThanOrEqualTo(5);
        String source = IMPORTS + "\n\nclass HookApiReadme {\n" + members + "}\n";
        JavaFileObject file =
                new SimpleJavaFileObject(
                        URI.create("string:///HookApiReadme.java"), JavaFileObject.Kind.SOURCE) {
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
            assertThat(ok).as("hook-api README snippets compile:\n" + diagnostics).isTrue();
        }
    }

    private static Path readme() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("hook-api/README.md"))) {
            dir = dir.getParent();
        }
        assertThat(dir).as("repository root with hook-api/README.md").isNotNull();
        return dir.resolve("hook-api/README.md");
    }
}
