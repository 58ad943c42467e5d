package io.cri4j.nri;

import io.cri4j.testing.real.ContainerdExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link NriSynchronizeLargeCases} on containerd 2.1.4 (NRI v0.8.0). */
class NriSynchronizeLargeIT extends NriSynchronizeLargeCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd2WithNri().build();

    @Override
    ContainerdExtension containerd() {
        return CONTAINERD;
    }
}
