package io.cri4j.testing.fake;

/**
 * Runs the command of an {@code ExecSync} call for the fake runtime.
 *
 * <p>The default, {@link #hostProcess()}, runs the command as a real process on the host (a test convenience:
 * there is no container, so {@code cat /etc/hostname} reads the host's file). Plug in your own handler to script
 * answers, e.g. {@code ctx -> ExecResult.of(0, "ok\n", "")}.
 *
 * <p>A handler may throw {@link java.util.concurrent.TimeoutException} (answered as {@code DEADLINE_EXCEEDED},
 * like containerd when the exec timeout passes), an {@link io.grpc.StatusRuntimeException} (answered as is),
 * or any other exception (answered as {@code UNKNOWN} with its message).
 */
@FunctionalInterface
public interface ExecHandler {

    /**
     * Runs one command to completion.
     *
     * @param context what to run, where, and the timeout
     * @return the captured output and exit code
     * @throws Exception see the type's documentation for how exceptions are answered
     */
    ExecResult execSync(ExecContext context) throws Exception;

    /**
     * The default handler: the command runs as a host process with the container's environment variables
     * added to the host's, in the container's working directory when that exists on the host; stdin is empty;
     * on timeout the process tree is killed.
     */
    static ExecHandler hostProcess() {
        return new HostProcessExecHandler();
    }
}
