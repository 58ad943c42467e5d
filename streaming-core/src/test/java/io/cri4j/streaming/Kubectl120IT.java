package io.cri4j.streaming;

import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * Debian's kubernetes-client 1.20 (SPDY only), unpacked without installing:
 * {@code apt-get download kubernetes-client && dpkg-deb -x kubernetes-client_*.deb DIR}; the
 * test finds {@code DIR/usr/bin/kubectl} through the environment variable
 * {@code CRI4J_KUBECTL_120} (default {@code /opt/cri4j/kubernetes-client/usr/bin/kubectl}).
 */
class Kubectl120IT extends KubectlContract {
    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        setUp(dir);
    }

    @Override
    Path binary() {
        String env = System.getenv("CRI4J_KUBECTL_120");
        return Path.of(
                env != null && !env.isBlank()
                        ? env
                        : "/opt/cri4j/kubernetes-client/usr/bin/kubectl");
    }

    @Override
    String origin() {
        return "Debian kubernetes-client unpacked with apt-get download + dpkg-deb -x; "
                + "set CRI4J_KUBECTL_120 to its usr/bin/kubectl";
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
