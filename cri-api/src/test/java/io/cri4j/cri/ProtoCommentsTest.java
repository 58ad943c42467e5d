package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.FileDescriptor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every service, RPC, message, field, enum and enum value of our CRI protos has a comment, so the
 * generated Java classes and IDE hovers document it. The elements are taken from the compiled
 * descriptors, so an element the text reader overlooks fails the test too.
 */
class ProtoCommentsTest {

    private static final Path V1 = Path.of("src/main/proto/runtime/v1/api.proto");
    private static final Path V1ALPHA2 = Path.of("src/main/proto/runtime/v1alpha2/api.proto");

    @Test
    void everyRuntimeV1ElementHasAComment() throws IOException {
        assertAllCommented(V1, io.cri4j.cri.v1.CriApiV1.getDescriptor());
    }

    @Test
    void everyRuntimeV1alpha2ElementHasAComment() throws IOException {
        assertAllCommented(V1ALPHA2, io.cri4j.cri.v1alpha2.CriApiV1alpha2.getDescriptor());
    }

    /** The check must notice one comment taken away, wherever it is. */
    @Test
    void aMissingCommentIsDetected() throws IOException {
        List<String> lines = new ArrayList<>(Files.readAllLines(V1, StandardCharsets.UTF_8));
        int envs = lines.indexOf("  repeated .runtime.v1.KeyValue envs = 6;");
        assertThat(envs).isPositive();
        while (lines.get(envs - 1).strip().startsWith("//")) {
            lines.remove(--envs);
        }
        Map<String, String> comments = ProtoDeclarations.comments(lines);
        assertThat(comments).containsEntry("runtime.v1.ContainerConfig.envs", "");
        assertThat(comments.get("runtime.v1.ContainerConfig.working_dir")).isNotEmpty();
    }

    private static void assertAllCommented(Path proto, FileDescriptor file) throws IOException {
        Map<String, String> comments =
                ProtoDeclarations.comments(Files.readAllLines(proto, StandardCharsets.UTF_8));
        assertThat(comments.keySet())
                .as("elements declared in " + proto)
                .containsExactlyElementsOf(ProtoDeclarations.elements(file));
        TreeSet<String> uncommented = new TreeSet<>();
        comments.forEach(
                (name, text) -> {
                    if (text.isEmpty()) {
                        uncommented.add(name);
                    }
                });
        assertThat(uncommented).as("elements of " + proto + " without a comment").isEmpty();
    }
}
