package io.cri4j.testing.fake;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What an {@link ExecHandler} is asked to run.
 *
 * @param containerId  the container the command runs "in"
 * @param podSandboxId the container's pod sandbox
 * @param command      the command and its arguments, never empty
 * @param env          the container's environment variables (from its config)
 * @param workingDir   the container's working directory, empty when not set
 * @param timeout      how long the command may run; {@link Duration#ZERO} means no limit
 */
public record ExecContext(
        String containerId,
        String podSandboxId,
        List<String> command,
        Map<String, String> env,
        String workingDir,
        Duration timeout) {

    /** Copies the collections so the value is immutable. */
    public ExecContext {
        command = List.copyOf(command);
        env = Map.copyOf(env);
    }
}
