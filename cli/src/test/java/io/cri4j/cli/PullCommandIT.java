package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.TestImage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code cri4j pull} against a real containerd and registry from the harness. */
class PullCommandIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @Test
    void pullsWithProgressAndNamesEachFailedImage() {
        PushedImage large = CONTAINERD.registry().push(TestImage.large());
        PushedImage busybox = CONTAINERD.registry().push(TestImage.busyboxDocker());
        String missing = CONTAINERD.registry().hostPort() + "/cri4j/missing:9";
        CliRun run =
                CliRun.of(
                        "pull",
                        "--runtime-endpoint",
                        CONTAINERD.endpoint().toString(),
                        "--progress",
                        "plain",
                        "--backoff-limit",
                        "0",
                        "--timeout",
                        "60s",
                        large.reference(),
                        busybox.reference(),
                        missing);
        assertThat(run.exitCode()).as(run.out() + run.err()).isEqualTo(1);
        assertThat(run.out())
                .contains(
                        large.reference()
                                + ": pulled "
                                + large.config().digest()
                                + " ("
                                + large.manifest().digest()
                                + ")")
                .contains(busybox.reference() + ": pulled " + busybox.config().digest())
                .contains(large.reference() + "  pulling  [")
                .contains(large.reference() + "  succeeded  [########################] 100%")
                // the succeeded line carries the byte totals, whether or not a mid-pull line was
                // drawn
                .containsPattern("succeeded  \\[#+\\] 100%  6[45]\\.\\d MiB / 6[45]\\.\\d MiB");
        assertThat(run.err())
                .contains("cri4j pull: pulling " + missing + " failed after 1 attempt: ")
                .contains("not found");
        assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);

        CliRun again =
                CliRun.of(
                        "pull",
                        "-r",
                        CONTAINERD.endpoint().toString(),
                        "--progress",
                        "plain",
                        busybox.reference());
        assertThat(again.exitCode()).as(again.err()).isZero();
        assertThat(again.out())
                .contains(busybox.reference() + ": present " + busybox.config().digest());
    }

    @Test
    void rejectsBadOptionsAsUsageErrors() {
        CliRun run = CliRun.of("pull", "--timeout", "soon", "busybox");
        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("'soon' is not a duration");
        CliRun none = CliRun.of("pull");
        assertThat(none.exitCode()).isEqualTo(2);
        assertThat(none.err()).contains("IMAGE");
    }
}
