package io.cri4j.testing.fake;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.io.File;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Starting and closing the fake (socket, streaming server, exec threads) leaves no threads or fds behind. */
class FakeCriServerLeakIT {

    @TempDir Path dir;

    void cycle(int i) throws Exception {
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("c" + i + ".sock")))
                        .build()
                        .start()) {
            ManagedChannel ch = fake.newChannel();
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                rt.version(VersionRequest.getDefaultInstance());
                String pod = fake.runtime().runPodSandbox(Cri.pod("leak", Map.of()));
                String c =
                        fake.runtime().runContainer(pod, Cri.container("c", "busybox", Map.of()));
                rt.execSync(ExecSyncRequest.newBuilder().setContainerId(c).addCmd("true").build());
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    static int fds() {
        String[] names = new File("/proc/self/fd").list();
        return names == null ? -1 : names.length;
    }

    @Test
    void closeReleasesThreadsAndFds() throws Exception {
        cycle(0); // warm up JVM-wide pools (gRPC shared executors, JIT)
        int threads = Thread.activeCount();
        int fds = fds();
        for (int i = 1; i <= 5; i++) {
            cycle(i);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        // Netty event loops and pooled threads end asynchronously after close: wait for the counts
        // to settle
        while ((Thread.activeCount() > threads + 2 || fds() > fds + 4)
                && System.nanoTime() < deadline) {
            TimeUnit.MILLISECONDS.sleep(50);
        }
        assertThat(Thread.activeCount())
                .as("threads after 5 start/close cycles")
                .isLessThanOrEqualTo(threads + 2);
        assertThat(fds()).as("open fds after 5 start/close cycles").isLessThanOrEqualTo(fds + 4);
    }
}
