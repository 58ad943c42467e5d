package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.testing.real.ContainerdExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code cri4j version} against a real containerd (Debian 1.6) from the harness. */
class VersionCommandContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @Test
    void printsContainerdsVersion() {
        CliRun run = CliRun.of("version", "--runtime-endpoint", CONTAINERD.endpoint().toString());
        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out())
                .startsWith("Version:  0.1.0")
                .contains("RuntimeName:  containerd")
                .containsPattern("RuntimeVersion:  v?1\\.6\\.")
                .contains("RuntimeApiVersion:  v1");
    }
}
