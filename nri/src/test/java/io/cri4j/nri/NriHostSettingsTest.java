package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookFailedException;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link NriHost}'s settings that need no plugin: bounds, and required plugins while absent. */
class NriHostSettingsTest {

    @TempDir Path dir;

    @Test
    void badSettingsAreRefusedNamingThem() {
        NriHost.Builder b = NriHost.builder(dir.resolve("nri.sock"));
        assertThatThrownBy(() -> b.requestTimeout("slow", Duration.ofHours(2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the request timeout of slow must be at most 1 h, got PT2H");
        assertThatThrownBy(() -> b.requestTimeout(100, Duration.ofSeconds(1)))
                .hasMessage("plugin index must be 0..99, got 100");
        assertThatThrownBy(() -> b.requestTimeout(10, Duration.ZERO))
                .hasMessageContaining("must be positive");
        assertThatThrownBy(() -> b.maxMissedDeadlines(0))
                .hasMessage("maxMissedDeadlines must be 1..1000, got 0");
        assertThatThrownBy(() -> b.requirePlugin("no/slash"))
                .hasMessageContaining("required plugin: invalid plugin name \"no/slash\"");
        assertThatThrownBy(() -> b.requirePlugin(""))
                .hasMessageContaining("required plugin: the plugin name is empty");
    }

    @Test
    void anAbsentRequiredPluginStandsInAsAHookFailingOnlyCreateContainer() throws Exception {
        try (NriHost nri =
                        NriHost.builder(dir.resolve("nri.sock"))
                                .failurePolicy(FailurePolicy.IGNORE)
                                .requirePlugin("guard")
                                .requirePlugin("05-early")
                                .build();
                HookChain chain = HookChain.builder().provided(nri::hooks).build()) {
            List<AsyncHook> hooks = nri.hooks();
            assertThat(hooks).extracting(AsyncHook::name).containsExactly("guard", "05-early");
            assertThat(hooks).extracting(h -> h.policy().index()).containsExactly(0, 5);
            assertThat(hooks)
                    .allSatisfy(
                            h -> {
                                assertThat(h.policy().failurePolicy())
                                        .isEqualTo(FailurePolicy.FAIL);
                                assertThat(h.events())
                                        .isEqualTo(Set.of(HookEvent.CREATE_CONTAINER));
                            });
            assertThat(nri.hooks()).isSameAs(hooks);

            PodSandbox pod = PodSandbox.newBuilder().setId("p").setName("p").build();
            Container ctr = Container.newBuilder().setId("c").setName("c").build();
            assertThatThrownBy(
                            () ->
                                    chain.createContainer(pod, ctr)
                                            .toCompletableFuture()
                                            .get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(HookFailedException.class)
                    .hasMessageContaining(
                            "required NRI plugin \"guard\" is not connected; containers are not"
                                    + " created without it");
            // the other events go on: pods still run, stop and go away
            chain.runPodSandbox(pod).toCompletableFuture().get(10, TimeUnit.SECONDS);
            chain.stopPodSandbox(pod).toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
