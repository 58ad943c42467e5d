package io.cri4j.hook.host;

import java.util.Objects;

/**
 * One change a hook asked for that the host's runtime interface cannot carry (for a CRI host:
 * OCI hooks, rlimits, seccomp policy, I/O priority, ...), or could not resolve (a device node not
 * found on the host). Never dropped silently: the host fails the call or logs a warning, per
 * the hook's failure policy ({@link CriAdjuster#enforce}).
 *
 * @param hook the hook that asked for it, or empty when the host cannot tell
 * @param field the field in NRI's spelling with its key, e.g. {@code Rlimits RLIMIT_NOFILE},
 *     {@code OciHooks}, {@code Mounts /scratch}
 * @param reason why it cannot be carried, e.g. {@code CRI has no rlimits}
 */
public record UnsupportedAdjustment(String hook, String field, String reason) {

    /** Checks that nothing is null. */
    public UnsupportedAdjustment {
        Objects.requireNonNull(hook, "hook");
        Objects.requireNonNull(field, "field");
        Objects.requireNonNull(reason, "reason");
    }

    /** {@code field (reason)}. */
    public String describe() {
        return field + " (" + reason + ")";
    }
}
