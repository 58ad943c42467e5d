package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.nri.v1alpha1.Api;
import io.cri4j.hook.nri.v1alpha1.Event;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Our NRI proto ({@code nri.pkg.api.v1alpha1}) is wire-identical to upstream's
 * {@code containerd/nri} {@code pkg/api/api.proto} v0.12.2, and a wire superset of v0.8.0 (what
 * containerd 2.1.4 speaks) except for {@code Event.LAST}.
 */
class NriWireFactsTest {

    @Test
    void nriProtoIsWireIdenticalToUpstreamV0122() throws IOException {
        assertThat(WireFacts.of(Api.getDescriptor()))
                .containsExactlyElementsOf(WireFacts.upstream("nri-api-v0.12.2.facts"));
    }

    @Test
    void nriProtoCoversV080ExceptItsLastEvent() throws IOException {
        List<String> missing = new ArrayList<>(WireFacts.upstream("nri-api-v0.8.0.facts"));
        missing.removeAll(WireFacts.of(Api.getDescriptor()));
        assertThat(missing).containsExactly("enum nri.pkg.api.v1alpha1.Event.LAST = 12");
    }

    @Test
    void keptFactsAreTheProjectsSharedUpstreamFacts() throws IOException {
        for (String name :
                List.of(
                        "nri-api-v0.12.2.facts",
                        "nri-api-v0.8.0.facts",
                        "koordinator-runtime-v1alpha1.facts")) {
            Optional<Path> shared = WireFacts.shared(name);
            if (shared.isEmpty()) {
                assertThat(System.getenv("CI"))
                        .as("CI=true needs ../shared/wire-facts/" + name)
                        .isNotEqualToIgnoringCase("true");
                continue;
            }
            assertThat(WireFacts.upstream(name))
                    .as(name)
                    .containsExactlyElementsOf(
                            Files.readAllLines(shared.get()).stream()
                                    .filter(l -> !l.isBlank())
                                    .sorted()
                                    .toList());
        }
    }

    @Test
    void eventMaskBitsAreNrisAndRoundTrip() {
        assertThat(HookEvent.CREATE_CONTAINER.nriMaskBit()).isEqualTo(1 << 3);
        assertThat(HookEvent.RUN_POD_SANDBOX.nriMaskBit()).isEqualTo(1);
        assertThat(HookEvent.ADJUST_POD_SANDBOX.nriMaskBit()).isZero();
        for (HookEvent e : HookEvent.values()) {
            if (e.nriEvent().isPresent()) {
                assertThat(HookEvent.fromNriMask(e.nriMaskBit())).containsExactly(e);
                assertThat(HookEvent.fromNri(e.nriEvent().get())).contains(e);
            }
        }
        assertThat(HookEvent.fromNri(Event.LAST)).isEmpty();
    }
}
