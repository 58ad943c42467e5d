package io.cri4j.examples.plugin;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.io.IOException;
import java.io.StringReader;
import java.util.Properties;

/**
 * An example lifecycle hook in cri4j's hook model: when a container is created, it adds the
 * environment variable {@value #ENV} and the annotation {@value #ANNOTATION}, both set to the
 * pod's {@value #TEAM_LABEL} label, or, when the pod has none, the team its configuration names
 * ({@code default-team=NAME}: the runtime's config text for the plugin, e.g. containerd's {@code
 * plugin_config_path} file of a plugin it launches) or {@code unassigned}. A container-level
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

    /** The key of the configuration text (Java properties) naming the team of pods without one. */
    public static final String DEFAULT_TEAM_KEY = "default-team";

    private volatile String defaultTeam = UNASSIGNED;

    /** Used by {@link java.util.ServiceLoader}. */
    public OwnerTeamHook() {}

    @Override
    public String name() {
        return "owner-team";
    }

    /**
     * Reads {@value #DEFAULT_TEAM_KEY} from the configuration text the host passes (properties;
     * empty when there is none).
     *
     * @throws IOException when the text is not readable as properties
     */
    @Override
    public void configure(HookConfiguration configuration) throws IOException {
        Properties p = new Properties();
        p.load(new StringReader(configuration.config()));
        defaultTeam = p.getProperty(DEFAULT_TEAM_KEY, UNASSIGNED).trim();
    }

    @Override
    public HookResult createContainer(PodSandbox pod, Container container) {
        String team = pod.getLabelsMap().getOrDefault(TEAM_LABEL, defaultTeam);
        return HookResult.adjust(
                Adjustments.create().addEnv(ENV, team).addAnnotation(ANNOTATION, team).build());
    }
}
