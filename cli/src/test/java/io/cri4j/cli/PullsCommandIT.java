package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code cri4j proxy --progress-address} in front of the fake runtime (which pulls with byte progress), and
 * {@code cri4j pulls} watching the pulls passing through it, over HTTP and over the proxy's socket, as bars
 * and as JSON; with the clear errors a user gets for a failed pull, a wrong endpoint and a bad option.
 */
class PullsCommandIT {

    @TempDir Path dir;
    private FakeCriServer fake;
    private ProxyCommand proxy;
    private CompletableFuture<Integer> proxyExit;
    private ManagedChannel channel;
    private String http;
    private String socket;

    @BeforeEach
    void start() throws Exception {
        fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("rt.sock")))
                        .pullRate(24L << 20)
                        .build()
                        .start();
        proxy = new ProxyCommand();
        StringWriter out = new StringWriter();
        CommandLine cli = new CommandLine(proxy.commandSpec());
        cli.setOut(new PrintWriter(out, true));
        socket = "unix://" + dir.resolve("proxy.sock");
        proxyExit =
                CompletableFuture.supplyAsync(
                        () ->
                                cli.execute(
                                        "--listen",
                                        socket,
                                        "--backend",
                                        fake.endpoint().toString(),
                                        "--progress-address",
                                        "127.0.0.1:0"));
        assertThat(proxy.started.await(30, TimeUnit.SECONDS)).isTrue();
        http = proxy.progress.baseUrl().toString();
        assertThat(out.toString()).contains("image pull progress on " + http + "imagePullProgress");
        channel = CriChannels.newChannel(socket);
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        proxy.proxy.close();
        assertThat(proxyExit.get(30, TimeUnit.SECONDS)).isZero();
        fake.close();
    }

    private CompletableFuture<Void> pullThroughProxy(String image) {
        return CompletableFuture.runAsync(
                () ->
                        ImageServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(60, TimeUnit.SECONDS)
                                .pullImage(
                                        PullImageRequest.newBuilder()
                                                .setImage(ImageSpec.newBuilder().setImage(image))
                                                .build()));
    }

    /** Runs {@code cri4j pulls ARGS} while {@code image} is pulled through the proxy. */
    private CliRun pullsDuring(String image, String... args) throws Exception {
        CompletableFuture<CliRun> run = CompletableFuture.supplyAsync(() -> CliRun.of(args));
        // the command waits for the pull to start; the pull starts once it has connected (or soon
        // after)
        awaitWatching();
        CompletableFuture<Void> pull = pullThroughProxy(image);
        CliRun r = run.get(90, TimeUnit.SECONDS);
        pull.handle((v, e) -> null).get(60, TimeUnit.SECONDS);
        return r;
    }

    private void awaitWatching() throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (proxy.observer().watchers() == 0 && System.nanoTime() < end) {
            TimeUnit.MILLISECONDS.sleep(20);
        }
        assertThat(proxy.observer().watchers()).as("the pulls command is watching").isPositive();
    }

    @Test
    void barsOverHttpAndOverTheSocketEndAt100() throws Exception {
        String image = "registry.example/team/api:3.1";
        CliRun overHttp =
                pullsDuring(
                        image,
                        "pulls",
                        "--proxy-endpoint",
                        http,
                        "--image",
                        image,
                        "--progress",
                        "plain");
        assertThat(overHttp.exitCode()).as(overHttp.out() + overHttp.err()).isZero();
        assertThat(overHttp.out())
                .contains(image + "  pulling  [")
                .containsPattern(
                        image.replace(".", "\\.")
                                + "  succeeded  \\[#{24}\\] 100%  \\d+\\.\\d MiB / \\d+\\.\\d MiB");

        String other = "registry.example/team/web:1.0";
        CliRun overSocket =
                pullsDuring(
                        other,
                        "pulls",
                        "--proxy-endpoint",
                        socket,
                        "--image",
                        other,
                        "--progress",
                        "plain");
        assertThat(overSocket.exitCode()).as(overSocket.out() + overSocket.err()).isZero();
        assertThat(overSocket.out())
                .contains(other + "  succeeded  [########################] 100%");
    }

    @Test
    void jsonPrintsKepProgressObjects() throws Exception {
        String image = "registry.example/team/json:1";
        for (String endpoint : List.of(http, socket)) {
            CliRun run =
                    pullsDuring(
                            image + endpoint.length(),
                            "pulls",
                            "--proxy-endpoint",
                            endpoint,
                            "--image",
                            image + endpoint.length(),
                            "--json");
            assertThat(run.exitCode()).as(run.err()).isZero();
            List<JsonObject> lines =
                    run.out()
                            .lines()
                            .map(l -> JsonParser.parseString(l).getAsJsonObject())
                            .toList();
            assertThat(lines)
                    .as(endpoint)
                    .isNotEmpty()
                    .allSatisfy(
                            o ->
                                    assertThat(o.keySet())
                                            .contains("name", "image", "progress", "total"));
            assertThat(lines)
                    .anyMatch(
                            o ->
                                    o.has("layer")
                                            && o.get("layer").getAsString().startsWith("sha256:"));
            JsonObject last = lines.get(lines.size() - 1);
            assertThat(last.get("percent").getAsInt()).isEqualTo(100);
            assertThat(last.get("progress").getAsLong())
                    .isEqualTo(last.get("total").getAsLong())
                    .isPositive();
        }
    }

    @Test
    void aFailedPullAWrongEndpointAndABadOptionAreOneLineErrors() throws Exception {
        fake.faults()
                .on("PullImage")
                .failNext(
                        1,
                        Status.NOT_FOUND.withDescription(
                                "failed to resolve reference \"registry.example/team/gone:1\": not found"));
        CliRun failed =
                pullsDuring(
                        "registry.example/team/gone:1",
                        "pulls",
                        "--proxy-endpoint",
                        http,
                        "--image",
                        "registry.example/team/gone:1",
                        "--progress",
                        "plain");
        assertThat(failed.exitCode()).isEqualTo(1);
        assertThat(failed.err().strip())
                .startsWith("cri4j pulls: pulling registry.example/team/gone:1 failed: ")
                .contains("not found")
                .doesNotContain("\n")
                .doesNotContain("Exception");

        CliRun refused =
                CliRun.of("pulls", "--proxy-endpoint", "http://127.0.0.1:1", "--image", "x");
        assertThat(refused.exitCode()).isEqualTo(1);
        assertThat(refused.err().strip())
                .startsWith("cri4j pulls: cannot read http://127.0.0.1:1/imagePullProgress")
                .doesNotContain("\n");

        CliRun notAProxy =
                CliRun.of("pulls", "--proxy-endpoint", fake.endpoint().toString(), "--image", "x");
        assertThat(notAProxy.exitCode()).isEqualTo(1);
        assertThat(notAProxy.err()).contains("does not serve image pull progress");

        CliRun bad = CliRun.of("pulls", "--proxy-endpoint", http, "--progress", "fancy");
        assertThat(bad.exitCode()).isEqualTo(2);
        assertThat(bad.err()).contains("--progress must be auto, tty or plain");
        CliRun remote =
                CliRun.of(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("p2.sock"),
                        "--backend",
                        fake.endpoint().toString(),
                        "--progress-address",
                        "0.0.0.0:0");
        assertThat(remote.exitCode()).isEqualTo(2);
        assertThat(remote.err()).contains("is not a loopback address; add --progress-allow-remote");
    }
}
