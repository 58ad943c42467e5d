package io.cri4j.streaming;

import io.cri4j.streaming.testing.Kubectl;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** kubectl 1.33: WebSocket v5 for exec/attach, SPDY tunnelled in WebSocket for port-forward. */
class Kubectl133IT extends KubectlContract {
    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        setUp(dir);
    }

    @Override
    Path binary() {
        return Kubectl.DIR.resolve("kubectl.1.33");
    }

    @Override
    String expectedExecUpgrade() {
        return "websocket v5.channel.k8s.io";
    }

    @Override
    String expectedPortForwardUpgrade() {
        return "websocket SPDY/3.1+portforward.k8s.io";
    }
}
