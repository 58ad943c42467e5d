package io.cri4j.cli;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.time.Duration;

/**
 * A plugin-jar hook for the metrics tests (packed into a jar by a test): adds {@code
 * CRI4J_METRICS=yes} to every container, and takes longer than its 300 ms timeout for a container
 * named {@code slow}, which its Ignore policy lets be created anyway.
 */
public final class MetricsTestHook implements Hook {

    /** For ServiceLoader. */
    public MetricsTestHook() {}

    @Override
    public String name() {
        return "metrics-test";
    }

    @Override
    public HookPolicy policy() {
        return new HookPolicy(30, Duration.ofMillis(300), FailurePolicy.IGNORE);
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) throws Exception {
        if (container.getName().equals("slow")) {
            Thread.sleep(2_000); // interrupted when the chain gives up on it
        }
        return HookResult.adjust(Adjustments.create().addEnv("CRI4J_METRICS", "yes").build());
    }
}
