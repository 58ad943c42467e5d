package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Proves that our protos are wire-identical to upstream CRI: the facts produced from our compiled
 * descriptors must equal the upstream facts line for line.
 */
class WireIdentityTest {

    @Test
    void runtimeV1MatchesUpstream() throws IOException {
        assertSameFacts(io.cri4j.cri.v1.CriApiV1.getDescriptor(), "cri-runtime-v1.facts");
    }

    @Test
    void runtimeV1alpha2MatchesUpstream() throws IOException {
        assertSameFacts(
                io.cri4j.cri.v1alpha2.CriApiV1alpha2.getDescriptor(), "cri-runtime-v1alpha2.facts");
    }

    @Test
    void v1HasAllFortyThreeRpcsAndV1alpha2TwentyNine() {
        assertThat(rpcCount(io.cri4j.cri.v1.CriApiV1.getDescriptor())).isEqualTo(43);
        assertThat(rpcCount(io.cri4j.cri.v1alpha2.CriApiV1alpha2.getDescriptor())).isEqualTo(29);
        assertThat(io.cri4j.cri.v1.RuntimeServiceGrpc.SERVICE_NAME)
                .isEqualTo("runtime.v1.RuntimeService");
        assertThat(io.cri4j.cri.v1alpha2.ImageServiceGrpc.SERVICE_NAME)
                .isEqualTo("runtime.v1alpha2.ImageService");
    }

    /** The comparison must catch a single changed field number anywhere. */
    @Test
    void oneWrongFieldNumberIsDetected() throws Exception {
        FileDescriptor original = io.cri4j.cri.v1.CriApiV1.getDescriptor();
        FileDescriptorProto.Builder proto = original.toProto().toBuilder();
        // ContainerConfig.tty is field 14 upstream; move it to a free number
        var config =
                proto.getMessageTypeBuilderList().stream()
                        .filter(m -> m.getName().equals("ContainerConfig"))
                        .findFirst()
                        .orElseThrow();
        FieldDescriptorProto.Builder tty =
                config.getFieldBuilderList().stream()
                        .filter(f -> f.getName().equals("tty"))
                        .findFirst()
                        .orElseThrow();
        assertThat(tty.getNumber()).isEqualTo(14);
        tty.setNumber(99);
        FileDescriptor mutated = build(proto.build());

        List<String> expected = readFacts("cri-runtime-v1.facts");
        List<String> actual = WireFacts.of(mutated);
        assertThat(actual)
                .isNotEqualTo(expected)
                .contains("field runtime.v1.ContainerConfig.tty = 99 LABEL_OPTIONAL TYPE_BOOL")
                .doesNotContain(
                        "field runtime.v1.ContainerConfig.tty = 14 LABEL_OPTIONAL TYPE_BOOL");
    }

    private static FileDescriptor build(FileDescriptorProto proto)
            throws DescriptorValidationException {
        return FileDescriptor.buildFrom(proto, new FileDescriptor[0]);
    }

    private static int rpcCount(FileDescriptor file) {
        return file.getServices().stream().mapToInt(s -> s.getMethods().size()).sum();
    }

    private static void assertSameFacts(FileDescriptor file, String resource) throws IOException {
        List<String> expected = readFacts(resource);
        List<String> actual = WireFacts.of(file);
        TreeSet<String> missing = new TreeSet<>(expected);
        actual.forEach(missing::remove);
        TreeSet<String> extra = new TreeSet<>(actual);
        expected.forEach(extra::remove);
        assertThat(missing).as("upstream facts missing from our proto").isEmpty();
        assertThat(extra).as("facts in our proto that upstream does not have").isEmpty();
        assertThat(actual).hasSameSizeAs(expected);
    }

    private static List<String> readFacts(String resource) throws IOException {
        try (InputStream in =
                WireIdentityTest.class.getResourceAsStream("/wire-facts/" + resource)) {
            assertThat(in).as(resource).isNotNull();
            List<String> lines = new ArrayList<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (!line.isBlank()) {
                    lines.add(line.strip());
                }
            }
            return new ArrayList<>(new TreeSet<>(lines));
        }
    }
}
