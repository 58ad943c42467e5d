package io.cri4j.proxy;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;

/** Found through META-INF/services/io.cri4j.hook.Hook in the test resources. */
public final class ServiceLoadedHook implements Hook {
    @Override
    public String name() {
        return "service-loaded";
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) {
        return HookResult.adjust(
                Adjustments.create()
                        .addAnnotation("loaded-by", "ServiceLoader")
                        .addEnv("CRI4J_HOOKED", "pod=" + pod.getName())
                        .build());
    }
}
