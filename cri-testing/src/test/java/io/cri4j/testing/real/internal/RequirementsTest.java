package io.cri4j.testing.real.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.TestAbortedException;

class RequirementsTest {

    @Test
    void missingBinarySkipsOutsideCi() {
        assertThatThrownBy(() -> Requirements.unavailable("'frobnicate' is not installed", false))
                .isInstanceOf(TestAbortedException.class)
                .hasMessageContaining("'frobnicate' is not installed");
    }

    @Test
    void missingBinaryFailsLoudlyInCi() {
        assertThatThrownBy(() -> Requirements.unavailable("'frobnicate' is not installed", true))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CI=true")
                .hasMessageContaining("'frobnicate' is not installed");
    }

    @Test
    void findsExecutablesOnThePathOnly() {
        assertThat(Requirements.find("sh")).hasValueSatisfying(p -> assertThat(p).isExecutable());
        assertThat(Requirements.find("cri4j-no-such-binary-" + System.nanoTime())).isEmpty();
    }

    @Test
    void recognisesStaticAndDynamicElfFiles(@TempDir Path dir) throws Exception {
        // /bin/sh is dynamically linked on every Debian system
        assertThat(ImageBuilder.isStaticElf(Path.of("/bin/sh").toRealPath())).isFalse();
        Path text = dir.resolve("script");
        java.nio.file.Files.writeString(text, "#!/bin/sh\n");
        assertThat(ImageBuilder.isStaticElf(text)).isFalse();
    }
}
