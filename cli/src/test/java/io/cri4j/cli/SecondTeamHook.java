package io.cri4j.cli;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;

/**
 * A second plugin-jar hook for the CLI tests (packed into a jar by a test): adds {@code
 * CRI4J_SECOND}, and sets {@code CRI4J_TEAM} too when the pod is labelled {@code clash=yes}, which
 * the example plugin's hook also sets.
 */
public final class SecondTeamHook implements Hook {

    /** For ServiceLoader. */
    public SecondTeamHook() {}

    @Override
    public String name() {
        return "second";
    }

    @Override
    public HookPolicy policy() {
        return HookPolicy.DEFAULT.withIndex(20);
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) {
        Adjustments a = Adjustments.create().addEnv("CRI4J_SECOND", "yes");
        if ("yes".equals(pod.getLabelsMap().get("clash"))) {
            a.addEnv("CRI4J_TEAM", "second");
        }
        return HookResult.adjust(a.build());
    }
}
