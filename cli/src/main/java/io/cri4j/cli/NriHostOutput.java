package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.internal.LogLimiter;
import io.cri4j.hook.HookEvent;
import io.cri4j.nri.NriHost;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import picocli.CommandLine;

/**
 * The NRI socket of a command that hosts NRI plugins ({@code proxy}, {@code fake-runtime}): checks
 * {@code --nri-socket} and builds the {@link NriHost} whose plugins' comings and goings are said
 * on the command's output, one line each, prefixed with the command's name.
 */
final class NriHostOutput {
    private NriHostOutput() {}

    /**
     * The path of {@code --nri-socket}.
     *
     * @throws CommandLine.ParameterException when it is not a unix socket
     */
    static Path socket(CommandLine cmd, CriEndpoint socket) {
        if (!socket.isUnix()) {
            throw new CommandLine.ParameterException(
                    cmd, "--nri-socket must be a unix socket (unix:///PATH), got " + socket);
        }
        return socket.path();
    }

    /** The host {@code nri} configures, saying its plugins' comings and goings on {@code out}. */
    static NriHost host(NriHost.Builder nri, PrintWriter out, String prefix) {
        // connections refused: at most 10 lines a minute, however many come
        LogLimiter refused = new LogLimiter(10, Duration.ofMinutes(1));
        return nri.listener(
                        new NriHost.Listener() {
                            @Override
                            public void registered(String name, int index, Set<HookEvent> events) {
                                say(
                                        out,
                                        String.format(
                                                "%s: NRI plugin %02d-%s registered for %s",
                                                prefix,
                                                index,
                                                name,
                                                events.stream()
                                                        .map(HookEvent::displayName)
                                                        .sorted()
                                                        .toList()));
                            }

                            @Override
                            public void disconnected(String name, Throwable cause) {
                                say(
                                        out,
                                        prefix
                                                + ": NRI plugin "
                                                + name
                                                + " gone"
                                                + (cause == null ? "" : ": " + cause.getMessage()));
                            }

                            @Override
                            public void rejected(String who, String reason) {
                                String more = refused.admit();
                                if (more != null) {
                                    say(
                                            out,
                                            prefix + ": NRI " + who + " refused: " + reason + more);
                                }
                            }
                        })
                .build();
    }

    /** One line, whole, whatever thread says it. */
    static void say(PrintWriter out, String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }
}
