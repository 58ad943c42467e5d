package io.cri4j.streaming;

import io.cri4j.streaming.testing.Kubectl;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** kubectl 1.27: SPDY only (exec, attach and port-forward). */
class Kubectl127IT extends KubectlContract {
    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        setUp(dir);
    }

    @Override
    Path binary() {
        return Kubectl.DIR.resolve("kubectl.1.27");
    }

    @Override
    String expectedExecUpgrade() {
        return "SPDY/3.1";
    }

    @Override
    String expectedPortForwardUpgrade() {
        return "SPDY/3.1 null portforward.k8s.io";
    }
}
