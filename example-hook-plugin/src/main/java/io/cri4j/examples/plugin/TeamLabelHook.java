package io.cri4j.examples.plugin;

import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import java.util.Set;

/**
 * An example plugin hook: at PreRunPodSandbox it copies the pod's {@value #TEAM_LABEL} label into
 * the annotation {@value #ANNOTATION} (or {@code unassigned} when the pod has no such label), so
 * the runtime and everything downstream of it see who owns each sandbox. Registered in
 * {@code META-INF/services/io.cri4j.hook.RuntimeHook}; needs a public no-argument constructor.
 */
public final class TeamLabelHook implements RuntimeHook {

    /** The pod label read. */
    public static final String TEAM_LABEL = "team";
    /** The annotation written. */
    public static final String ANNOTATION = "cri4j.io/owner-team";

    /** Used by {@link java.util.ServiceLoader}. */
    public TeamLabelHook() {
    }

    @Override
    public String name() {
        return "example-team-label";
    }

    @Override
    public Set<HookPoint> points() {
        return Set.of(HookPoint.PRE_RUN_POD_SANDBOX);
    }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint point, PodSandboxHookRequest request) {
        String team = request.getLabelsMap().getOrDefault(TEAM_LABEL, "unassigned");
        return PodSandboxHookResponse.newBuilder().putAnnotations(ANNOTATION, team).build();
    }
}
