package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The proxy's listen socket follows the ownership rules of CriServer: one owner per path. */
class ProxySocketOwnershipIT extends ProxyTestBase {

    private static String runtimeName(Path socket) {
        ManagedChannel ch = CriChannels.newChannel("unix://" + socket);
        try {
            return RuntimeServiceGrpc.newBlockingStub(ch)
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .version(VersionRequest.getDefaultInstance())
                    .getRuntimeName();
        } finally {
            ch.shutdownNow();
        }
    }

    @Test
    void aSecondProxyOnTheSamePathIsRefusedAndAReplacedSocketIsNotRemoved() throws Exception {
        Path socket = dir.resolve("proxy.sock");
        startProxy(CriProxy.builder());
        String name = runtimeName(socket);
        Files.delete(socket); // the first proxy keeps running and keeps the lock
        CriProxy second = CriProxy.builder().listen(socket).backend(backend.socket).build();
        assertThatThrownBy(second::start)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("proxy.sock.lock");
        second.close();
        // the lock file removed too: a new proxy may take the path; the old one must not remove it
        Files.delete(dir.resolve("proxy.sock.lock"));
        try (CriProxy third =
                CriProxy.builder().listen(socket).backend(backend.socket).build().start()) {
            proxy.close();
            assertThat(socket).as("the new proxy's socket survives the old one's close").exists();
            assertThat(runtimeName(socket)).isEqualTo(name);
        }
        assertThat(socket).doesNotExist();
    }
}
