package io.cri4j.examples.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a user sees when an option or the machine is not as the command expects: the shaded CLI
 * jar run as a process, as {@code ./cri4j} runs it. Every failure is one line naming the thing
 * and the reason, with a non-zero exit; never a stack trace.
 */
class CliMessagesIT {

    /** Runs the CLI to its end and checks that it said exactly one line, with no trace. */
    static CliRun oneLine(int exit, String... args) throws Exception {
        CliRun run;
        try (CliProcess p = CliProcess.start(args)) {
            run = p.finish();
        }
        List<String> lines = run.out().lines().toList();
        assertThat(lines).as("output of cri4j %s", String.join(" ", args)).hasSize(1);
        assertThat(run.exitCode()).as(run.out()).isEqualTo(exit);
        assertThat(run.out()).as("no trace, no Java names")
                .doesNotContain("\tat ", "Exception", "null", "http");
        return run;
    }

    @Test
    void durationOptionsAreBoundedWithOneLine() throws Exception {
        assertThat(oneLine(2, "pull", "--timeout", "1000000000h", "busybox").out())
                .startsWith("cri4j pull: ").contains("--timeout", "1000000000h", "at most 24h");
        assertThat(oneLine(2, "pull", "--deadline", "99999999999999999999999s", "busybox").out())
                .contains("--deadline", "at most 24h");
        assertThat(oneLine(2, "pull", "--timeout", "25h", "busybox").out()).contains("at most 24h");
        assertThat(oneLine(2, "pull", "--timeout", "0s", "busybox").out()).contains("positive");
        assertThat(oneLine(2, "version", "--timeout", "99999999999999999999").out())
                .startsWith("cri4j version: ").contains("--timeout", "at most 24h");
    }
}
