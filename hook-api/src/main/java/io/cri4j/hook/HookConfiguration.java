package io.cri4j.hook;

import java.time.Duration;
import java.util.Objects;

/**
 * What a host tells a hook when it registers (NRI's {@code Configure}): the hook's configuration
 * string (NRI plugin config; empty when there is none), the runtime's name and version, the
 * host's timeouts, and a handle for unsolicited container updates.
 *
 * @param config the configuration text given to this hook, or empty
 * @param runtimeName e.g. {@code containerd}, {@code cri4j-proxy}
 * @param runtimeVersion the runtime's version
 * @param registrationTimeout how long the host waits for a hook to register and configure
 * @param requestTimeout how long the host waits for one event's answer
 * @param runtime for updates and evictions the hook requests on its own
 */
public record HookConfiguration(
        String config,
        String runtimeName,
        String runtimeVersion,
        Duration registrationTimeout,
        Duration requestTimeout,
        RuntimeHandle runtime) {

    /** Checks that nothing is null. */
    public HookConfiguration {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(runtimeName, "runtimeName");
        Objects.requireNonNull(runtimeVersion, "runtimeVersion");
        Objects.requireNonNull(registrationTimeout, "registrationTimeout");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(runtime, "runtime");
    }
}
