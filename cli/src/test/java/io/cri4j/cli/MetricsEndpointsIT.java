package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.nri.NriHost;
import io.cri4j.testing.fake.FakeCriServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --metrics-address} of {@code proxy}, {@code nri-plugin} and {@code fake-runtime} with the JDK's
 * HTTP client: {@code /metrics} in both exposition formats, {@code /healthz}, and {@code /readyz}
 * following the proxy's backend (killed and started again) and the NRI plugin's registration.
 */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class MetricsEndpointsIT {
    @TempDir Path dir;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private HttpResponse<String> get(int port, String path, String accept) throws Exception {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .timeout(Duration.ofSeconds(10));
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Polls until the answer has the status (a refused connection is no answer yet); returns the time. */
    private long awaitStatus(int port, String path, int status, Duration within) throws Exception {
        long t0 = System.nanoTime();
        long end = t0 + within.toNanos();
        HttpResponse<String> last = null;
        while (System.nanoTime() < end) {
            try {
                last = get(port, path, null);
                if (last.statusCode() == status) {
                    break;
                }
            } catch (java.net.ConnectException notYet) {
                last = null;
            }
            Thread.sleep(20);
        }
        assertThat(last).as("%s answered", path).isNotNull();
        assertThat(last.statusCode()).as("%s: %s", path, last.body()).isEqualTo(status);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    }

    @Test
    void proxyServesMetricsAndIsUnreadyWhileItsBackendIsGone() throws Exception {
        Path rt = dir.resolve("rt.sock");
        FakeCriServer fake = FakeCriServer.builder().listen(CriEndpoint.unix(rt)).build().start();
        int port = freePort();
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
                                        "unix://" + rt,
                                        "--metrics-address",
                                        "127.0.0.1:" + port));
        try {
            assertThat(cmd.started.await(30, TimeUnit.SECONDS)).as("%s", out).isTrue();
            assertThat(out.toString()).contains("metrics on http://127.0.0.1:" + port + "/metrics");
            assertThat(get(port, "/healthz", null).statusCode()).isEqualTo(200);
            awaitStatus(port, "/readyz", 200, Duration.ofSeconds(5));

            HttpResponse<String> text = get(port, "/metrics", null);
            assertThat(text.statusCode()).isEqualTo(200);
            assertThat(text.headers().firstValue("content-type"))
                    .hasValue("text/plain; version=0.0.4; charset=utf-8");
            assertThat(text.body())
                    .contains("# TYPE cri4j_proxy_backend_up gauge")
                    .contains("cri4j_proxy_backend_up 1.0")
                    .contains("cri4j_imagepull_observed_pulls_active 0.0")
                    .contains("cri4j_proxy_calls_inflight")
                    .contains("jvm_memory_used_bytes");
            HttpResponse<String> om =
                    get(port, "/metrics", "application/openmetrics-text; version=1.0.0");
            assertThat(om.headers().firstValue("content-type"))
                    .hasValueSatisfying(
                            c -> assertThat(c).startsWith("application/openmetrics-text"));
            assertThat(om.body().strip()).endsWith("# EOF");

            fake.close(); // the runtime goes away
            long unready = awaitStatus(port, "/readyz", 503, Duration.ofSeconds(2));
            assertThat(get(port, "/readyz", null).body()).contains("does not accept connections");
            assertThat(get(port, "/healthz", null).statusCode()).as("still alive").isEqualTo(200);
            fake = FakeCriServer.builder().listen(CriEndpoint.unix(rt)).build().start();
            long ready = awaitStatus(port, "/readyz", 200, Duration.ofSeconds(2));
            assertThat(get(port, "/metrics", null).body())
                    .contains("cri4j_proxy_backend_lost_total 1.0")
                    .contains("cri4j_proxy_backend_reconnects_total 1.0");
            System.out.println(
                    "unready "
                            + unready
                            + " ms after the backend was killed, ready "
                            + ready
                            + " ms after it came back");

            HttpResponse<String> foreign =
                    http.send(
                            HttpRequest.newBuilder(
                                            URI.create("http://127.0.0.1:" + port + "/metrics"))
                                    .header("Accept", "text/plain")
                                    .timeout(Duration.ofSeconds(10))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(foreign.statusCode()).isEqualTo(200);
        } finally {
            if (cmd.proxy != null) {
                cmd.proxy.close();
            }
            assertThat(exit.get(30, TimeUnit.SECONDS)).isZero();
            fake.close();
        }
    }

    @Test
    void nriPluginIsUnreadyUntilRegistered() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = NriPluginCommandIT.examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        Path nriSock = dir.resolve("nri.sock");
        int port = freePort();
        NriPluginCommand cmd = new NriPluginCommand();
        StringWriter out = new StringWriter();
        CommandLine cli = new CommandLine(cmd.commandSpec());
        cli.setOut(new PrintWriter(out, true));
        CompletableFuture<Integer> exit =
                CompletableFuture.supplyAsync(
                        () ->
                                cli.execute(
                                        "--socket",
                                        "unix://" + nriSock,
                                        "--plugins",
                                        plugins.toString(),
                                        "--wait",
                                        "--metrics-address",
                                        "127.0.0.1:" + port));
        NriHost host = null;
        try {
            assertThat(cmd.started.await(30, TimeUnit.SECONDS)).as("%s", out).isTrue();
            assertThat(get(port, "/healthz", null).statusCode()).isEqualTo(200);
            HttpResponse<String> before = get(port, "/readyz", null);
            assertThat(before.statusCode()).isEqualTo(503);
            assertThat(before.body()).contains("not registered");
            host = NriHost.builder(nriSock).build();
            host.start(
                    new io.cri4j.hook.host.HookHost() {
                        @Override
                        public String runtimeName() {
                            return "metrics-test";
                        }

                        @Override
                        public String runtimeVersion() {
                            return "1";
                        }

                        @Override
                        public java.util.concurrent.CompletionStage<
                                        io.cri4j.hook.host.RuntimeSnapshot>
                                snapshot() {
                            return CompletableFuture.completedFuture(
                                    io.cri4j.hook.host.RuntimeSnapshot.empty());
                        }

                        @Override
                        public io.cri4j.hook.RuntimeHandle runtime() {
                            return (updates, evictions) ->
                                    CompletableFuture.completedFuture(java.util.List.of());
                        }
                    });
            awaitStatus(port, "/readyz", 200, Duration.ofSeconds(15));
        } finally {
            if (host != null) {
                host.close();
            }
            cmd.stopForTest();
            exit.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void fakeRuntimeServesMetricsAndIsReady() throws Exception {
        int port = freePort();
        FakeRuntimeCommand cmd = new FakeRuntimeCommand();
        CommandLine cli = new CommandLine(cmd.commandSpec());
        StringWriter out = new StringWriter();
        cli.setOut(new PrintWriter(out, true));
        CompletableFuture.runAsync(
                () ->
                        cli.execute(
                                "--listen",
                                "unix://" + dir.resolve("fake.sock"),
                                "--metrics-address",
                                "127.0.0.1:" + port));
        try {
            awaitStatus(port, "/readyz", 200, Duration.ofSeconds(30));
            assertThat(get(port, "/metrics", null).body()).contains("process_uptime_seconds");
            HttpResponse<String> bad = get(port, "/nothing", null);
            assertThat(bad.statusCode()).isEqualTo(404);
        } finally {
            cmd.stopForTest();
        }
    }
}
