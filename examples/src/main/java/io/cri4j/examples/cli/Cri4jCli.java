package io.cri4j.examples.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ./cri4j} command line: one subcommand per thing a node engineer wants to try. */
@Command(name = "cri4j", mixinStandardHelpOptions = true, version = "cri4j 0.1.0-SNAPSHOT",
        description = "Java SDK for Kubernetes node agents: CRI tools and demos.",
        subcommands = {DemoCommand.class, VersionCommand.class, FakeRuntimeCommand.class, ProxyCommand.class, NriPluginCommand.class, PullCommand.class, PullsCommand.class, CommandLine.HelpCommand.class})
public final class Cri4jCli {

    private Cri4jCli() {
    }

    /**
     * Runs the command line and exits with the command's exit code.
     *
     * @param args command-line arguments
     */
    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.exit(commandLine().execute(args));
    }

    /** @return the configured command line (also used by tests) */
    public static CommandLine commandLine() {
        return new CommandLine(new Cri4jCli())
                .setExecutionExceptionHandler((e, cmd, parseResult) -> {
                    cmd.getErr().println("cri4j " + cmd.getCommandName() + ": " + e.getMessage());
                    return 1;
                });
    }
}
