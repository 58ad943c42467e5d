package io.cri4j.nri;

import io.cri4j.testing.real.ContainerdExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link NriSynchronizeLargeCases} on containerd 2.3.4 (NRI v0.12.0). */
class NriSynchronizeLargeContainerd23IT extends NriSynchronizeLargeCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd23WithNri().build();

    @Override
    ContainerdExtension containerd() {
        return CONTAINERD;
    }
}
