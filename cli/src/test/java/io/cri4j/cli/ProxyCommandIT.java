package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code cri4j proxy} serving in front of a small CRI server over real unix sockets. */
class ProxyCommandIT {
    @TempDir Path dir;

    @Test
    void servesVersionThroughTheProxyUntilClosed() throws Exception {
        try (CriServer backend =
                CriServer.builder(CriEndpoint.unix(dir.resolve("rt.sock")))
                        .addService(
                                new RuntimeServiceGrpc.RuntimeServiceImplBase() {
                                    @Override
                                    public void version(
                                            VersionRequest r, StreamObserver<VersionResponse> o) {
                                        o.onNext(
                                                VersionResponse.newBuilder()
                                                        .setRuntimeName("behind-proxy")
                                                        .build());
                                        o.onCompleted();
                                    }
                                })
                        .build()
                        .start()) {
            ProxyCommand cmd = new ProxyCommand();
            StringWriter out = new StringWriter();
            CommandLine cli = new CommandLine(cmd.commandSpec());
            cli.setOut(new PrintWriter(out, true));
            CompletableFuture<Integer> exit =
                    CompletableFuture.supplyAsync(
                            () ->
                                    cli.execute(
                                            "--listen",
                                            "unix://" + dir.resolve("proxy.sock"),
                                            "--backend",
                                            "unix://" + dir.resolve("rt.sock"),
                                            "--hook-config-dir",
                                            dir.resolve("hooks").toString(),
                                            "--plugins",
                                            dir.toString()));
            assertThat(cmd.started.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(out.toString()).contains("serving unix://" + dir.resolve("proxy.sock"));
            ManagedChannel ch = CriChannels.newChannel("unix://" + dir.resolve("proxy.sock"));
            try {
                assertThat(
                                RuntimeServiceGrpc.newBlockingStub(ch)
                                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                                        .version(VersionRequest.getDefaultInstance())
                                        .getRuntimeName())
                        .isEqualTo("behind-proxy");
            } finally {
                ch.shutdownNow();
            }
            cmd.proxy.close();
            assertThat(exit.get(20, TimeUnit.SECONDS)).isZero();
        }
    }

    @Test
    void badPluginDirectoryIsAClearError() {
        CliRun run =
                CliRun.of(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("p.sock"),
                        "--backend",
                        "unix://" + dir.resolve("rt.sock"),
                        "--plugins",
                        dir.resolve("missing").toString());
        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.err()).contains("is not a directory");
    }
}
