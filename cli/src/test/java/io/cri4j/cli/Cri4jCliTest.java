package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The command line builds only the subcommand its arguments name first, and behaves as the full
 * one does: the same names, the same help and the same one-line usage errors.
 */
class Cri4jCliTest {
    private static final List<String> NAMES =
            List.of("version", "fake-runtime", "proxy", "nri-plugin", "pull", "pulls", "help");

    @Test
    void theFullCommandLineHasEverySubcommandInItsOrder() {
        assertThat(Cri4jCli.commandLine().getSubcommands().keySet())
                .containsExactlyElementsOf(NAMES);
        assertThat(Cri4jCli.commandLine(null).getSubcommands().keySet())
                .containsExactlyElementsOf(NAMES);
    }

    @Test
    void aNamedSubcommandIsTheOnlyOneBuiltUnderItsOwnName() {
        for (String name : NAMES.subList(0, NAMES.size() - 1)) {
            CommandLine cli = Cri4jCli.commandLine(name);
            assertThat(cli.getSubcommands().keySet()).as(name).containsExactly(name);
            CommandLine sub = cli.getSubcommands().get(name);
            assertThat(sub.getCommandSpec().qualifiedName()).isEqualTo("cri4j " + name);
            Object alone = sub.getCommand();
            Object withAll = Cri4jCli.commandLine(null).getSubcommands().get(name).getCommand();
            assertThat(alone)
                    .as("the same command as with every subcommand")
                    .hasSameClassAs(withAll);
        }
    }

    @Test
    void helpOptionsAndUnknownNamesGetEverySubcommand() {
        assertThat(Cri4jCli.commandLine("help").getSubcommands()).hasSize(NAMES.size());
        assertThat(Cri4jCli.commandLine("--help").getSubcommands()).hasSize(NAMES.size());
        assertThat(Cri4jCli.commandLine("proxi").getSubcommands()).hasSize(NAMES.size());
    }

    @Test
    void aSubcommandsHelpIsTheSameAlone() {
        for (String name : List.of("proxy", "fake-runtime", "nri-plugin", "pulls")) {
            CliRun alone = CliRun.of(name, "--help");
            CliRun full = CliRun.full(name, "--help");
            assertThat(alone.exitCode()).isZero();
            assertThat(alone.out()).contains("Usage: cri4j " + name).isEqualTo(full.out());
        }
        assertThat(CliRun.of("help", "proxy").out())
                .isEqualTo(CliRun.full("proxy", "--help").out());
    }

    @Test
    void aUsageErrorIsTheSameOneLineAlone() {
        CliRun alone = CliRun.of("proxy", "--backend", "unix:///x.sock");
        assertThat(alone.exitCode()).isEqualTo(2);
        assertThat(alone.err())
                .startsWith("cri4j proxy: Missing required option: '--listen=<listen>'")
                .isEqualTo(CliRun.full("proxy", "--backend", "unix:///x.sock").err());
        CliRun typo = CliRun.of("proxi");
        assertThat(typo.exitCode()).isEqualTo(2);
        assertThat(typo.err()).startsWith("cri4j: Unmatched argument at index 0: 'proxi'");
    }
}
