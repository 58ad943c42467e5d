package io.cri4j.cli;

import io.cri4j.testing.real.ContainerdExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code cri4j nri-plugin} launched by containerd 2.3.4 (NRI v0.12.0) itself. */
class NriPluginCommandContainerd23IT extends NriPluginLaunchedCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd23WithNri().build();

    @Override
    ContainerdExtension containerd() {
        return CONTAINERD;
    }

    @Override
    String runtimeVersion() {
        return "v2.3.4";
    }

    @Override
    boolean trainsAnArchive() {
        return true;
    }
}
