package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code cri4j fake-runtime} as a real process: serves until SIGTERM, then removes its socket. */
class FakeRuntimeCommandIT {

    @TempDir Path dir;

    @Test
    void servesCriAndStreamsUntilTerminated() throws Exception {
        Path socket = dir.resolve("fake.sock");
        try (CliProcess p =
                CliProcess.start(
                        "fake-runtime",
                        "--listen",
                        "unix://" + socket,
                        "--streaming-address",
                        "127.0.0.1:0")) {
            assertThat(p.nextLine())
                    .contains("serving runtime.v1 and runtime.v1alpha2 on unix://" + socket)
                    .contains("streaming on http://127.0.0.1:");
            ManagedChannel channel = CriChannels.newChannel(CriEndpoint.unix(socket));
            try {
                var rt =
                        RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(10, TimeUnit.SECONDS);
                assertThat(rt.version(VersionRequest.getDefaultInstance()).getRuntimeApiVersion())
                        .isEqualTo("v1");
                var v1alpha2 =
                        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(10, TimeUnit.SECONDS)
                                .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance());
                assertThat(v1alpha2.getRuntimeName()).isNotEmpty();
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            assertThat(Files.exists(socket)).isTrue();
        }
        assertThat(socket).as("socket removed on shutdown").doesNotExist();
    }

    @Test
    void rejectsABadStreamingAddress() throws Exception {
        CliRun run =
                CliProcess.start(
                                "fake-runtime",
                                "--listen",
                                "unix://" + dir.resolve("x.sock"),
                                "--streaming-address",
                                "nohost")
                        .finish();
        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.out()).contains("--streaming-address must be HOST:PORT");
    }
}
