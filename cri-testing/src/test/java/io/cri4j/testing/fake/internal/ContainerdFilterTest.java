package io.cri4j.testing.fake.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** containerd's filter language as its filters package defines it (parser.go, scanner.go). */
class ContainerdFilterTest {

    private static final Map<String, String> LABELS =
            Map.of(
                    "containerd.io/distribution.source.registry.example", "team/app,team/other",
                    "containerd.io/gc.ref.content.l.0", "sha256:aa");

    private static boolean matches(String... filters) {
        return ContainerdFilter.parseAll(List.of(filters))
                .matches(
                        path -> {
                            if (path.size() == 1 && path.get(0).equals("digest")) {
                                return Optional.of("sha256:ff");
                            }
                            if (path.size() > 1 && path.get(0).equals("labels")) {
                                return Optional.ofNullable(
                                        LABELS.get(String.join(".", path.subList(1, path.size()))));
                            }
                            return Optional.empty();
                        });
    }

    @Test
    void selectorsOperatorsAndQuotes() {
        assertThat(matches()).as("no filter matches everything").isTrue();
        assertThat(matches("digest==sha256:ff")).isTrue();
        assertThat(matches("digest!=sha256:ff")).isFalse();
        assertThat(matches("labels.\"containerd.io/gc.ref.content.l.0\"")).as("presence").isTrue();
        assertThat(matches("labels.\"containerd.io/gc.ref.content.l.9\"")).isFalse();
        assertThat(
                        matches(
                                "labels.\"containerd.io/distribution.source.registry.example\"~=\"(^|,)team/app(,|$)\""))
                .isTrue();
        assertThat(
                        matches(
                                "labels.\"containerd.io/distribution.source.registry.example\"~=/(^|,)team\\/ap(,|$)/"))
                .isFalse();
        assertThat(matches("digest==sha256:ff,labels.\"containerd.io/gc.ref.content.l.9\""))
                .as("all of one filter")
                .isFalse();
        assertThat(matches("digest==sha256:00", "digest==sha256:ff"))
                .as("any of several filters")
                .isTrue();
        assertThat(matches("labels.|containerd.io/gc.ref.content.l.0| == \"sha256:aa\""))
                .as("spaces, | quotes")
                .isTrue();
        assertThat(matches("digest==\"sha256:\\x66f\"")).as("escapes").isTrue();
    }

    @Test
    void whatDoesNotParseNamesTheProblem() {
        assertThatThrownBy(() -> matches("labels.\"unterminated"))
                .hasMessageContaining("quoted literal not terminated");
        assertThatThrownBy(() -> matches("digest=sha256:ff"))
                .hasMessageContaining("unsupported operator \"=\"");
        assertThatThrownBy(() -> matches("digest=="))
                .hasMessageContaining("expected value or quoted");
        assertThatThrownBy(() -> matches("digest~=\"(\""))
                .hasMessageContaining("invalid regular expression");
        assertThatThrownBy(() -> matches(",digest"))
                .hasMessageContaining("expected field or quoted");
    }
}
