package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code @ExtendWith} registration: one containerd for the class, injected as a parameter. */
@ExtendWith(ContainerdExtension.class)
class ContainerdExtendWithIT {

    private static Path seen;

    @Test
    void injectedContainerdAnswersCri(LocalContainerd containerd) {
        assertThat(containerd.endpoint().isUnix()).isTrue();
        assertThat(containerd.endpoint().path()).isEqualTo(containerd.socketPath());
        assertThat(containerd.namespace()).isEqualTo("k8s.io");
        ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
        try {
            assertThat(
                            RuntimeServiceGrpc.newBlockingStub(channel)
                                    .withDeadlineAfter(5, TimeUnit.SECONDS)
                                    .version(VersionRequest.newBuilder().setVersion("v1").build())
                                    .getRuntimeName())
                    .isEqualTo("containerd");
        } finally {
            channel.shutdownNow();
        }
        sameInstanceForTheWholeClass(containerd);
    }

    @Test
    void secondTestGetsTheSameContainerd(LocalContainerd containerd) {
        assertThat(containerd.socketPath()).exists();
        sameInstanceForTheWholeClass(containerd);
    }

    private static synchronized void sameInstanceForTheWholeClass(LocalContainerd containerd) {
        if (seen == null) {
            seen = containerd.socketPath();
        }
        assertThat(containerd.socketPath()).isEqualTo(seen);
    }
}
