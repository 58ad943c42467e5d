package io.cri4j.cli;

import io.cri4j.cri.internal.IoErrors;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The {@code ./cri4j} command line: one subcommand per thing a node engineer wants to try. The
 * root and the commands that serve ({@code proxy}, {@code fake-runtime}, {@code nri-plugin}) have
 * models written in code ({@link Specs}); the others are read from their annotations.
 */
public final class Cri4jCli {

    /** The version {@code -V} prints. */
    static final String VERSION = "cri4j 0.1.0-SNAPSHOT";

    /**
     * The subcommands by name, in the order of the usage help: each a picocli command (a model,
     * or a class read from its annotations) made when asked for. A command line naming one of them
     * first builds only that one's model: a model costs a start of {@code proxy} more than the
     * proxy's own work before it listens when built for all of them.
     */
    private static final Map<String, Supplier<Object>> SUBCOMMANDS = new LinkedHashMap<>();

    static {
        SUBCOMMANDS.put("version", () -> VersionCommand.class);
        SUBCOMMANDS.put("fake-runtime", () -> new FakeRuntimeCommand().commandSpec());
        SUBCOMMANDS.put("proxy", () -> new ProxyCommand().commandSpec());
        SUBCOMMANDS.put("nri-plugin", () -> new NriPluginCommand().commandSpec());
        SUBCOMMANDS.put("pull", () -> PullCommand.class);
        SUBCOMMANDS.put("pulls", () -> PullsCommand.class);
        SUBCOMMANDS.put("help", () -> CommandLine.HelpCommand.class);
    }

    private Cri4jCli() {}

    /**
     * Runs the command line and exits with the command's exit code.
     *
     * @param args command-line arguments
     */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /**
     * Runs the command line as {@link #main} does, without exiting: logging at WARN unless set,
     * gRPC's {@code java.util.logging} records through SLF4J, then {@code args} executed.
     * {@code moreCommands} are added as subcommands: {@code ./cri4j demo} is this command line
     * with the examples' demo command added.
     *
     * @param args command-line arguments
     * @param moreCommands picocli command objects to add as subcommands
     * @return the command's exit code
     */
    public static int run(String[] args, Object... moreCommands) {
        // picocli's classes load on another core while this thread sets up logging
        StartWarmup warmup =
                moreCommands.length == 0 && args.length > 0
                        ? StartWarmup.forCommand(args[0])
                        : null;
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        keepFrameLoggersQuiet();
        JulLogging.toSlf4j(); // gRPC logs through java.util.logging: one line each, like ours
        if (warmup != null) {
            // what the command initialises first, on another core while picocli reads the arguments
            warmup.startSteps();
        }
        CommandLine cli =
                moreCommands.length == 0
                        ? commandLine(args.length == 0 ? null : args[0])
                        : commandLine();
        for (Object command : moreCommands) {
            cli.addSubcommand(command);
        }
        if (warmup != null) {
            afterWarmup(cli, warmup);
        }
        return cli.execute(args);
    }

    /**
     * Makes {@code cli} run its command once {@code warmup} is done, as picocli runs it otherwise:
     * the main thread never initialises a class while the warm-up does. A usage error, the usage
     * help and the version are printed without waiting (they initialise none of its classes).
     *
     * @return {@code cli}
     */
    static CommandLine afterWarmup(CommandLine cli, StartWarmup warmup) {
        return cli.setExecutionStrategy(
                parsed -> {
                    if (!helpRequested(parsed)) {
                        warmup.await();
                    }
                    return new CommandLine.RunLast().execute(parsed);
                });
    }

    /** Whether the command line asks for the usage help or the version of any command in it. */
    private static boolean helpRequested(CommandLine.ParseResult parsed) {
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            if (p.isUsageHelpRequested() || p.isVersionHelpRequested()) {
                return true;
            }
        }
        return false;
    }

    /**
     * gRPC's HTTP/2 frame loggers ({@code io.grpc.netty.NettyServerHandler} and
     * {@code NettyClientHandler}) dump every DATA frame at DEBUG, exec and attach URLs with their
     * one-time tokens included: they stay at INFO when DEBUG is turned on, unless a level is set
     * for them by name.
     */
    static void keepFrameLoggersQuiet() {
        for (String logger :
                new String[] {
                    "io.grpc.netty.NettyServerHandler", "io.grpc.netty.NettyClientHandler"
                }) {
            String key = "org.slf4j.simpleLogger.log." + logger;
            if (System.getProperty(key) == null) {
                System.setProperty(key, "info");
            }
        }
    }

    /** @return the configured command line with every subcommand (also used by tests) */
    public static CommandLine commandLine() {
        return commandLine(null);
    }

    /**
     * The command line for arguments that start with {@code first}: with that subcommand alone
     * when {@code first} names one other than {@code help} (what it runs and how it reports an
     * error are the same as with all of them), else with every subcommand.
     */
    static CommandLine commandLine(String first) {
        CommandSpec root =
                Specs.command(
                                new Cri4jCli(),
                                "cri4j",
                                "Java SDK for Kubernetes node agents: CRI tools, the CRI proxy, NRI"
                                        + " plugins, image pulls.")
                        .version(VERSION);
        CommandLine cli = new CommandLine(root);
        Supplier<Object> only = "help".equals(first) ? null : SUBCOMMANDS.get(first);
        if (only != null) {
            cli.addSubcommand(first, only.get());
        } else {
            SUBCOMMANDS.forEach((name, command) -> cli.addSubcommand(name, command.get()));
        }
        // after the subcommands: picocli hands these settings to the subcommands present
        return cli.setParameterExceptionHandler(Cri4jCli::usageError)
                .setExecutionExceptionHandler(
                        (e, cmd, parseResult) -> {
                            cmd.getErr()
                                    .println(
                                            cmd.getCommandSpec().qualifiedName()
                                                    + ": "
                                                    + describe(e));
                            cmd.getErr().flush();
                            return 1;
                        });
    }

    /** What went wrong, in one line that names the thing and the reason (no class names). */
    static String describe(Throwable e) {
        if (e instanceof io.grpc.StatusRuntimeException s) {
            return IoErrors.describe(s.getStatus());
        }
        if (e instanceof io.grpc.StatusException s) {
            return IoErrors.describe(s.getStatus());
        }
        String why = IoErrors.reason(e);
        // a wrapper's message may name the thing, its cause the reason: keep both
        Throwable c = e.getCause();
        if (c != null && c != e && e.getMessage() != null) {
            String cause = IoErrors.reason(c);
            if (!why.contains(cause)) {
                why = why + ": " + cause;
            }
        }
        return why;
    }

    /** A bad option or argument: one line naming it, and where the usage is; exit code 2. */
    private static int usageError(CommandLine.ParameterException e, String[] args) {
        CommandLine cmd = e.getCommandLine();
        String name = cmd.getCommandSpec().qualifiedName();
        String message = e.getMessage() == null ? "invalid arguments" : e.getMessage().strip();
        int nl = message.indexOf('\n');
        if (nl >= 0) {
            message = message.substring(0, nl);
        }
        cmd.getErr().println(name + ": " + message + " (see '" + name + " --help')");
        cmd.getErr().flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }
}
