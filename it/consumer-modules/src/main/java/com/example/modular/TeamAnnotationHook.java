package com.example.modular;

import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import java.util.Set;

/** Annotates every pod with its {@value #LABEL} label; found by the proxy with ServiceLoader. */
public final class TeamAnnotationHook implements RuntimeHook {

    /** The pod label read. */
    public static final String LABEL = "team";
    /** The annotation written. */
    public static final String ANNOTATION = "example.com/team";

    @Override
    public String name() {
        return "team-annotation";
    }

    @Override
    public Set<HookPoint> points() {
        return Set.of(HookPoint.PRE_RUN_POD_SANDBOX);
    }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint point, PodSandboxHookRequest request) {
        return PodSandboxHookResponse.newBuilder()
                .putAnnotations(ANNOTATION, request.getLabelsMap().getOrDefault(LABEL, "none")).build();
    }
}
