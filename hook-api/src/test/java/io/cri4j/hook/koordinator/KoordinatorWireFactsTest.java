package io.cri4j.hook.koordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.WireFacts;
import io.cri4j.hook.koordinator.v1alpha1.Api;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Our Koordinator proto is wire-identical to upstream's {@code runtime.v1alpha1} api.proto (HEAD,
 * with {@code container_envs} and {@code container_meta}): the facts generated from our
 * descriptors equal the facts taken from upstream (one line per field, map entry, enum value and
 * RPC; the format is in shared/wire-facts/README.md). One changed field number, type, label, map
 * entry or RPC signature makes the lists differ.
 */
class KoordinatorWireFactsTest {

    @Test
    void koordinatorProtoIsWireIdenticalToUpstream() throws IOException {
        List<String> expected = WireFacts.upstream("koordinator-runtime-v1alpha1.facts");
        List<String> actual = WireFacts.of(Api.getDescriptor());
        assertThat(actual).hasSize(83).containsExactlyElementsOf(expected);
    }

    @Test
    void servicePackageAndMethodNamesAreUpstreams() {
        assertThat(io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc.SERVICE_NAME)
                .isEqualTo("runtime.v1alpha1.RuntimeHookService");
        for (HookPoint p : HookPoint.values()) {
            String svc =
                    p.isKoordinator()
                            ? io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc.SERVICE_NAME
                            : io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc
                                    .SERVICE_NAME;
            assertThat(RemoteRuntimeHook.method(p).getFullMethodName())
                    .isEqualTo(svc + "/" + p.configName() + "Hook");
        }
    }
}
