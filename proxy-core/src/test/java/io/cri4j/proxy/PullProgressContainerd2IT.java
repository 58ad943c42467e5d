package io.cri4j.proxy;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.LocalRegistry;
import io.cri4j.testing.real.RegistryExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Observed pulls through the proxy on containerd 2.1.4 (see {@link PullProgressContainerdTests}). */
class PullProgressContainerd2IT extends PullProgressContainerdTests {

    @RegisterExtension static final RegistryExtension REGISTRY = new RegistryExtension();

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd2WithNri().registry(REGISTRY).build();

    @Override
    CriEndpoint containerd() {
        return CONTAINERD.endpoint();
    }

    @Override
    LocalRegistry registry() {
        return REGISTRY.registry();
    }

    @Override
    boolean servesV1alpha2() {
        return false;
    }
}
