package io.cri4j.testing.fake;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.conformance.CriLifecycleConformance;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The kubelet-like lifecycle against the fake on a real unix socket. */
class FakeConformanceIT extends CriLifecycleConformance {

    @RegisterExtension static FakeCriExtension cri = FakeCriExtension.unixSocket();

    @Override
    protected CriEndpoint endpoint() {
        return cri.endpoint();
    }

    @Override
    protected String testImage() {
        return "busybox:1.36";
    }
}
