package io.cri4j.hook.host;

import io.cri4j.hook.RuntimeHandle;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/** What a host offers a {@link HookProvider}: its runtime's identity, state and update path. */
public interface HookHost {

    /** The runtime's name as hooks see it in NRI's {@code Configure} (e.g. {@code cri4j-proxy}). */
    String runtimeName();

    /** The runtime's version as hooks see it in NRI's {@code Configure}. */
    String runtimeVersion();

    /**
     * The pods and containers the host knows now, for a newly connected hook's
     * {@code Synchronize}. Never blocks; the stage may complete on another thread.
     */
    CompletionStage<RuntimeSnapshot> snapshot();

    /** Where a hook's updates and evictions go (NRI's unsolicited {@code UpdateContainers}). */
    RuntimeHandle runtime();

    /**
     * Registers a newly connected hook: {@code register} gets the host's pods and containers (for
     * NRI's {@code Synchronize}) and returns a stage that completes once the hook is listed by its
     * provider, or has failed. A host that runs events concurrently ({@link LifecycleHost}) holds
     * new lifecycle events back until then, so that an object created meanwhile reaches the hook
     * exactly once: in the snapshot, or as an event after it. By default: {@link #snapshot()}, then
     * {@code register}.
     */
    default <T> CompletionStage<T> register(
            Function<RuntimeSnapshot, CompletionStage<T>> register) {
        return snapshot().thenCompose(register);
    }
}
