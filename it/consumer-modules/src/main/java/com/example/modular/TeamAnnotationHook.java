package com.example.modular;

import io.cri4j.hook.Hook;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;

/** Annotates every pod with its {@value #LABEL} label; found by the proxy with ServiceLoader. */
public final class TeamAnnotationHook implements Hook {

    /** The pod label read. */
    public static final String LABEL = "team";

    /** The annotation written. */
    public static final String ANNOTATION = "example.com/team";

    @Override
    public String name() {
        return "team-annotation";
    }

    @Override
    public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
        return PodSandboxAdjustment.builder()
                .putAnnotation(ANNOTATION, pod.getLabelsMap().getOrDefault(LABEL, "none"))
                .build();
    }
}
