package io.cri4j.testing.conformance;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The kubelet-like lifecycle against a real containerd (Debian's 1.6) from the harness, pulling busybox from its
 * local registry: the reference the fake is checked against ({@code FakeConformanceIT} runs the same suite).
 */
class ContainerdConformanceIT extends CriLifecycleConformance {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    private static String image;

    @Override
    protected CriEndpoint endpoint() {
        return CONTAINERD.endpoint();
    }

    @Override
    protected synchronized String testImage() {
        if (image == null) {
            image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        }
        return image;
    }

    /** containerd 1.6 has no GetContainerEvents (1.7 added it); the suite asserts UNIMPLEMENTED instead. */
    @Override
    protected boolean supportsContainerEvents() {
        return false;
    }
}
