package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code cri4j version} against real unix-socket servers speaking only v1 or only v1alpha2. */
class VersionCommandIT {

    @TempDir Path dir;

    @Test
    void printsTheRuntimeVersionOverV1() throws Exception {
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("v1.sock"));
        try (CriServer server =
                CriServer.builder(endpoint)
                        .addService(
                                new io.cri4j.cri.v1.RuntimeServiceGrpc.RuntimeServiceImplBase() {
                                    @Override
                                    public void version(
                                            io.cri4j.cri.v1.VersionRequest request,
                                            StreamObserver<io.cri4j.cri.v1.VersionResponse>
                                                    response) {
                                        response.onNext(
                                                io.cri4j.cri.v1.VersionResponse.newBuilder()
                                                        .setVersion(request.getVersion())
                                                        .setRuntimeName("modern")
                                                        .setRuntimeVersion("2.0.1")
                                                        .setRuntimeApiVersion("v1")
                                                        .build());
                                        response.onCompleted();
                                    }
                                })
                        .build()
                        .start()) {
            CliRun run = CliRun.of("version", "--runtime-endpoint", endpoint.toString());
            assertThat(run.exitCode()).as(run.err()).isZero();
            assertThat(run.out())
                    .isEqualTo(
                            String.format(
                                    "Version:  0.1.0%nRuntimeName:  modern%nRuntimeVersion:  2.0.1%nRuntimeApiVersion:  v1%n"));
        }
    }

    @Test
    void fallsBackToV1alpha2WhenTheRuntimeHasNoV1() throws Exception {
        CriEndpoint endpoint = CriEndpoint.unix(dir.resolve("old.sock"));
        try (CriServer server =
                CriServer.builder(endpoint)
                        .addService(
                                new io.cri4j.cri.v1alpha2.RuntimeServiceGrpc
                                        .RuntimeServiceImplBase() {
                                    @Override
                                    public void version(
                                            io.cri4j.cri.v1alpha2.VersionRequest request,
                                            StreamObserver<io.cri4j.cri.v1alpha2.VersionResponse>
                                                    response) {
                                        response.onNext(
                                                io.cri4j.cri.v1alpha2.VersionResponse.newBuilder()
                                                        .setVersion(request.getVersion())
                                                        .setRuntimeName("legacy")
                                                        .setRuntimeVersion("1.4.0")
                                                        .setRuntimeApiVersion("v1alpha2")
                                                        .build());
                                        response.onCompleted();
                                    }
                                })
                        .build()
                        .start()) {
            CliRun run = CliRun.of("version", "-r", endpoint.path().toString());
            assertThat(run.exitCode()).as(run.err()).isZero();
            assertThat(run.out())
                    .contains("RuntimeName:  legacy")
                    .contains("RuntimeApiVersion:  v1alpha2");
        }
    }

    @Test
    void explainsWhenNothingAnswers() {
        CliRun run =
                CliRun.of(
                        "version",
                        "--runtime-endpoint",
                        "unix://" + dir.resolve("none.sock"),
                        "--timeout",
                        "2");
        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.err())
                .contains("did not answer Version: UNAVAILABLE")
                .contains(dir.resolve("none.sock").toString());
    }

    @Test
    void rejectsABadEndpointAsAUsageError() {
        CliRun run = CliRun.of("version", "--runtime-endpoint", "npipe:////./pipe/x");
        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("unsupported scheme 'npipe'");
    }
}
