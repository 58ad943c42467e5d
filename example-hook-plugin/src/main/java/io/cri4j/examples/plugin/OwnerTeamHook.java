package io.cri4j.examples.plugin;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.PodSandbox;

/**
 * An example lifecycle hook in cri4j's hook model: when a container is created, it adds the
 * environment variable {@value #ENV} and the annotation {@value #ANNOTATION}, both set to the
 * pod's {@value #TEAM_LABEL} label, or {@code unassigned} when the pod has none. A container-level
 * effect, so it works in every mode: as an NRI plugin ({@code ./cri4j nri-plugin --plugins DIR}),
 * inside the CRI proxy, on the fake runtime. Registered in
 * {@code META-INF/services/io.cri4j.hook.Hook}; needs a public no-argument constructor.
 */
public final class OwnerTeamHook implements Hook {

    /** The pod label read. */
    public static final String TEAM_LABEL = "team";

    /** The environment variable added to each container. */
    public static final String ENV = "CRI4J_TEAM";

    /** The annotation added to each container. */
    public static final String ANNOTATION = "cri4j.io/owner-team";

    /** The value for pods without a team label. */
    public static final String UNASSIGNED = "unassigned";

    /** Used by {@link java.util.ServiceLoader}. */
    public OwnerTeamHook() {}

    @Override
    public String name() {
        return "owner-team";
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) {
        String team = pod.getLabelsMap().getOrDefault(TEAM_LABEL, UNASSIGNED);
        return HookResult.adjust(
                Adjustments.create().addEnv(ENV, team).addAnnotation(ANNOTATION, team).build());
    }
}
