package io.cri4j.hook.host;

import io.cri4j.hook.RuntimeHandle;
import java.util.concurrent.CompletionStage;

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
}
