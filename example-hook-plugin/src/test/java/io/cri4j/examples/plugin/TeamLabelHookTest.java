package io.cri4j.examples.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class TeamLabelHookTest {

    @Test
    void isFoundByServiceLoader() {
        assertThat(ServiceLoader.load(RuntimeHook.class).stream().map(ServiceLoader.Provider::type))
                .contains(TeamLabelHook.class);
    }

    @Test
    void copiesTheTeamLabelIntoAnAnnotation() {
        var response = new TeamLabelHook().onPodSandbox(HookPoint.PRE_RUN_POD_SANDBOX,
                PodSandboxHookRequest.newBuilder().putLabels("team", "storage").build());
        assertThat(response.getAnnotationsMap()).containsEntry(TeamLabelHook.ANNOTATION, "storage");
    }

    @Test
    void marksPodsWithoutATeam() {
        var response = new TeamLabelHook().onPodSandbox(HookPoint.PRE_RUN_POD_SANDBOX,
                PodSandboxHookRequest.getDefaultInstance());
        assertThat(response.getAnnotationsMap()).containsEntry(TeamLabelHook.ANNOTATION, "unassigned");
    }
}
