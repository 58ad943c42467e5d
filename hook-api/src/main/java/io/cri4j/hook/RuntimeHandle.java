package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The host's side for a hook that acts on its own, outside an event: NRI's unsolicited
 * {@code UpdateContainers}. Given to a hook in {@link HookConfiguration#runtime()}; valid while
 * the hook is registered (after a reconnection the hook is configured again with a new handle).
 */
public interface RuntimeHandle {

    /**
     * Asks the runtime to update these containers' resources and to stop (evict) these containers.
     * Never blocks.
     *
     * @return completes with the updates that failed (empty when all applied), or exceptionally
     *     when the runtime could not be asked at all
     */
    CompletionStage<List<ContainerUpdate>> updateContainers(
            List<ContainerUpdate> updates, List<ContainerEviction> evictions);
}
