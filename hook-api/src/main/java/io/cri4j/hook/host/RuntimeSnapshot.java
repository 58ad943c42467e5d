package io.cri4j.hook.host;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.List;

/**
 * A host's pods and containers at one moment, in NRI's model: what a hook receives in
 * {@code Synchronize}.
 *
 * @param pods the pod sandboxes, in the host's order
 * @param containers the containers of those pods, in the host's order
 */
public record RuntimeSnapshot(List<PodSandbox> pods, List<Container> containers) {

    /** Copies both lists; neither may be null. */
    public RuntimeSnapshot {
        pods = List.copyOf(pods);
        containers = List.copyOf(containers);
    }

    /** A host with nothing running. */
    public static RuntimeSnapshot empty() {
        return new RuntimeSnapshot(List.of(), List.of());
    }
}
