package io.cri4j.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs the CLI in-process and captures what it prints. */
record CliRun(int exitCode, String out, String err) {

    /** As {@code main} runs them: with only the subcommand named first, when one is. */
    static CliRun of(String... args) {
        return of(Cri4jCli.commandLine(args.length == 0 ? null : args[0]), args);
    }

    /** With every subcommand, as {@code ./cri4j demo} and {@code --help} run. */
    static CliRun full(String... args) {
        return of(Cri4jCli.commandLine(), args);
    }

    /** With {@code cli} as it is. */
    static CliRun of(CommandLine cli, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args);
        return new CliRun(code, out.toString(), err.toString());
    }
}
