package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checked-in CRI protos are exactly what {@code tools/proto-from-facts.py} writes from the
 * upstream wire facts and our comments (as {@code tools/regenerate-protos.sh} runs it), so
 * neither the wire nor the comments can be edited in the generated file and lost on the next
 * regeneration. Needs python3; without it the tests skip locally and fail when {@code CI=true}.
 */
class ProtoFromFactsTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final String PROTOS = "cri-api/src/main/proto/runtime/";
    private static final String FACTS = "cri-api/src/test/resources/wire-facts/";
    private static final String COMMENTS = PROTOS + "v1/api.comments";

    @BeforeAll
    static void requirePython() throws InterruptedException {
        boolean present;
        try {
            present =
                    new ProcessBuilder("python3", "--version")
                                    .redirectErrorStream(true)
                                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                                    .start()
                                    .waitFor()
                            == 0;
        } catch (IOException e) {
            present = false;
        }
        if (!present) {
            String reason =
                    "python3 is not installed (apt-get install python3); it runs tools/proto-from-facts.py";
            if ("true".equals(System.getenv("CI"))) {
                fail(reason);
            }
            Assumptions.abort(reason);
        }
    }

    @Test
    void runtimeV1IsRegeneratedByteForByte(@TempDir Path tmp) throws Exception {
        Result r =
                generate(
                        tmp,
                        FACTS + "cri-runtime-v1.facts",
                        "io.cri4j.cri.v1",
                        "CriApiV1",
                        COMMENTS);
        assertThat(r.exit).as(r.stderr).isZero();
        assertThat(r.stdout)
                .as("regenerated " + PROTOS + "v1/api.proto; run tools/regenerate-protos.sh")
                .isEqualTo(Files.readString(ROOT.resolve(PROTOS + "v1/api.proto")));
    }

    @Test
    void runtimeV1alpha2IsRegeneratedByteForByte(@TempDir Path tmp) throws Exception {
        Result r =
                generate(
                        tmp,
                        FACTS + "cri-runtime-v1alpha2.facts",
                        "io.cri4j.cri.v1alpha2",
                        "CriApiV1alpha2",
                        COMMENTS);
        assertThat(r.exit).as(r.stderr).isZero();
        assertThat(r.stdout)
                .as("regenerated " + PROTOS + "v1alpha2/api.proto; run tools/regenerate-protos.sh")
                .isEqualTo(Files.readString(ROOT.resolve(PROTOS + "v1alpha2/api.proto")));
    }

    /** The generator refuses to write a proto with an undocumented element, and names it. */
    @Test
    void aMissingCommentEntryFailsTheGenerator(@TempDir Path tmp) throws Exception {
        List<String> entries =
                new ArrayList<>(Files.readAllLines(ROOT.resolve(COMMENTS), StandardCharsets.UTF_8));
        int key = entries.indexOf("runtime.v1.ContainerConfig.envs");
        assertThat(key).isPositive();
        entries.remove(key);
        while (entries.get(key).startsWith(" ")) {
            entries.remove(key);
        }
        Path comments = Files.write(tmp.resolve("api.comments"), entries, StandardCharsets.UTF_8);

        Result r =
                generate(
                        tmp,
                        FACTS + "cri-runtime-v1.facts",
                        "io.cri4j.cri.v1",
                        "CriApiV1",
                        comments.toString());

        assertThat(r.exit).isNotZero();
        assertThat(r.stdout).isEmpty();
        assertThat(r.stderr).contains("no comment for runtime.v1.ContainerConfig.envs");
    }

    /** A comment for an element the facts do not have is stale, and fails the generator too. */
    @Test
    void aCommentForNoElementFailsTheGenerator(@TempDir Path tmp) throws Exception {
        List<String> entries =
                new ArrayList<>(Files.readAllLines(ROOT.resolve(COMMENTS), StandardCharsets.UTF_8));
        entries.add("runtime.v1.ContainerConfig.no_such_field");
        entries.add("    Describes nothing.");
        Path comments = Files.write(tmp.resolve("api.comments"), entries, StandardCharsets.UTF_8);

        Result r =
                generate(
                        tmp,
                        FACTS + "cri-runtime-v1.facts",
                        "io.cri4j.cri.v1",
                        "CriApiV1",
                        comments.toString());

        assertThat(r.exit).isNotZero();
        assertThat(r.stderr)
                .contains("comment for no element: runtime.v1.ContainerConfig.no_such_field");
    }

    private record Result(int exit, String stdout, String stderr) {}

    private static Result generate(
            Path tmp, String facts, String javaPackage, String outer, String comments)
            throws IOException, InterruptedException {
        Path out = tmp.resolve("out.proto");
        Path err = tmp.resolve("err.txt");
        Process p =
                new ProcessBuilder(
                                "python3",
                                "tools/proto-from-facts.py",
                                facts,
                                javaPackage,
                                outer,
                                "--comments",
                                comments)
                        .directory(ROOT.toFile())
                        .redirectOutput(out.toFile())
                        .redirectError(err.toFile())
                        .start();
        if (!p.waitFor(2, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            fail("tools/proto-from-facts.py did not finish within 2 minutes");
        }
        return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
    }
}
