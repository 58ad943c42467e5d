package io.cri4j.cli;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;

/** A hook with a pod-level adjustment NRI has no event for; packed into a jar by a test. */
public final class PodLevelHook implements Hook {

    /** For ServiceLoader. */
    public PodLevelHook() {}

    @Override
    public String name() {
        return "pod-level";
    }

    @Override
    public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
        return PodSandboxAdjustment.builder().putLabel("seen", "yes").build();
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) {
        return HookResult.none();
    }
}
