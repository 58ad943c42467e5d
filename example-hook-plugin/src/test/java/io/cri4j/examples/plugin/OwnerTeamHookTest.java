package io.cri4j.examples.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.Hooks;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class OwnerTeamHookTest {

    @Test
    void isFoundByServiceLoaderAndSubscribesToContainerCreationOnly() {
        assertThat(Hooks.loadBlocking(getClass().getClassLoader()))
                .hasAtLeastOneElementOfType(OwnerTeamHook.class);
        assertThat(new OwnerTeamHook().events()).containsExactly(HookEvent.CREATE_CONTAINER);
    }

    @Test
    void addsThePodsTeamAsEnvAndAnnotation() {
        HookResult r =
                new OwnerTeamHook()
                        .createContainer(
                                PodSandbox.newBuilder().putLabels("team", "storage").build(),
                                Container.getDefaultInstance());
        assertThat(r.adjustment().getEnvList())
                .containsExactly(
                        KeyValue.newBuilder().setKey("CRI4J_TEAM").setValue("storage").build());
        assertThat(r.adjustment().getAnnotationsMap())
                .containsEntry("cri4j.io/owner-team", "storage");
    }

    @Test
    void marksContainersOfPodsWithoutATeam() {
        Hook hook = new OwnerTeamHook();
        HookResult r =
                new OwnerTeamHook()
                        .createContainer(
                                PodSandbox.getDefaultInstance(), Container.getDefaultInstance());
        assertThat(r.adjustment().getEnvList().get(0).getValue()).isEqualTo("unassigned");
        assertThat(r.adjustment().getAnnotationsMap())
                .containsEntry("cri4j.io/owner-team", "unassigned");
        assertThat(hook.name()).isEqualTo("owner-team");
    }

    @Test
    void takesTheTeamOfPodsWithoutOneFromItsConfiguration() throws Exception {
        OwnerTeamHook hook = new OwnerTeamHook();
        hook.configure(
                new HookConfiguration(
                        "# from the runtime\ndefault-team = platform\n",
                        "containerd",
                        "2.3.4",
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(2),
                        (u, e) -> CompletableFuture.completedFuture(List.of())));
        HookResult r =
                hook.createContainer(
                        PodSandbox.getDefaultInstance(), Container.getDefaultInstance());
        assertThat(r.adjustment().getEnvList().get(0).getValue()).isEqualTo("platform");
        hook.configure(
                new HookConfiguration(
                        "",
                        "containerd",
                        "2.3.4",
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(2),
                        (u, e) -> CompletableFuture.completedFuture(List.of())));
        assertThat(
                        hook.createContainer(
                                        PodSandbox.getDefaultInstance(),
                                        Container.getDefaultInstance())
                                .adjustment()
                                .getEnvList()
                                .get(0)
                                .getValue())
                .as("configured again without it")
                .isEqualTo("unassigned");
    }
}
