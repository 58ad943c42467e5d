package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.cri4j.testing.real.internal.Requirements;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus (Debian's) scrapes {@code ./cri4j proxy --metrics-address} every second while
 * pods and containers are created through the proxy in front of containerd 1.6 with a plugin-jar
 * hook: Prometheus' HTTP API shows the relayed calls counted as made, the hook's latency histogram
 * with one observation per container, and a hook that ran past its timeout counted as a timeout.
 * {@code promtool check metrics} passes on the text the proxy serves.
 */
@org.junit.jupiter.api.Timeout(
        value = 300,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class ProxyPrometheusIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void prometheusScrapesTheProxysCallsAndHooks() throws Exception {
        Path prometheus = Requirements.require("prometheus", "prometheus");
        Path promtool = Requirements.require("promtool", "prometheus");
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        TestJars.write(plugins.resolve("metrics.jar"), MetricsTestHook.class, "io.cri4j.hook.Hook");
        int metricsPort = MetricsEndpointsIT.freePort();
        int promPort = MetricsEndpointsIT.freePort();
        Path socket = dir.resolve("proxy.sock");
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(
                config,
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        + "scrape_configs:\n  - job_name: cri4j-proxy\n"
                        + "    static_configs:\n      - targets: ['127.0.0.1:"
                        + metricsPort
                        + "']\n");
        Process prom = null;
        try (CliProcess proxy =
                CliProcess.start(
                        "proxy",
                        "--listen",
                        "unix://" + socket,
                        "--backend",
                        CONTAINERD.endpoint().toString(),
                        "--plugins",
                        plugins.toString(),
                        "--no-observe-pulls",
                        "--metrics-address",
                        "127.0.0.1:" + metricsPort)) {
            String line = proxy.nextLine();
            while (!line.contains("metrics on")) {
                line = proxy.nextLine();
                assertThat(line).as("proxy output before it served metrics").isNotNull();
            }
            proxy.drain();
            prom =
                    new ProcessBuilder(
                                    prometheus.toString(),
                                    "--config.file=" + config,
                                    "--storage.tsdb.path=" + dir.resolve("tsdb"),
                                    "--web.listen-address=127.0.0.1:" + promPort)
                            .redirectErrorStream(true)
                            .redirectOutput(dir.resolve("prometheus.log").toFile())
                            .start();
            awaitReady(promPort);

            ManagedChannel channel = CriChannels.newChannel(CriEndpoint.unix(socket));
            List<String> pods = new ArrayList<>();
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                    RuntimeServiceGrpc.newBlockingStub(channel);
            try {
                int versions = 7;
                for (int i = 0; i < versions; i++) {
                    rt.withDeadlineAfter(10, TimeUnit.SECONDS)
                            .version(VersionRequest.getDefaultInstance());
                }
                String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
                ImageServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(image))
                                        .build());
                String[] names = {"app", "app", "app", "slow"};
                for (int i = 0; i < names.length; i++) {
                    PodSandboxConfig pod = TestPods.hostNetwork("metrics-" + i, "ns", dir).build();
                    String podId =
                            rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                                    .runPodSandbox(
                                            RunPodSandboxRequest.newBuilder()
                                                    .setConfig(pod)
                                                    .build())
                                    .getPodSandboxId();
                    pods.add(podId);
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setSandboxConfig(pod)
                                            .setConfig(TestPods.sleeper(names[i], image))
                                            .build());
                }

                // what Prometheus scraped, through its own HTTP API
                assertThat(
                                awaitValue(
                                        promPort,
                                        "cri4j_proxy_calls_total{method=\"Version\",kind=\"relayed\",code=\"OK\"}",
                                        versions))
                        .isEqualTo(versions);
                assertThat(
                                awaitValue(
                                        promPort,
                                        "cri4j_hook_duration_seconds_count{hook=\"metrics-test\","
                                                + "event=\"CreateContainer\",outcome=\"adjusted\"}",
                                        3))
                        .isEqualTo(3);
                assertThat(
                                awaitValue(
                                        promPort,
                                        "sum(cri4j_hook_duration_seconds_bucket{hook=\"metrics-test\","
                                                + "event=\"CreateContainer\",outcome=\"adjusted\",le=\"+Inf\"})",
                                        3))
                        .as("the histogram's +Inf bucket")
                        .isEqualTo(3);
                assertThat(
                                awaitValue(
                                        promPort,
                                        "cri4j_hook_duration_seconds_count{hook=\"metrics-test\",outcome=\"timeout\"}",
                                        1))
                        .isEqualTo(1);
                assertThat(
                                awaitValue(
                                        promPort,
                                        "cri4j_hook_ignored_total{hook=\"metrics-test\",outcome=\"timeout\"}",
                                        1))
                        .isEqualTo(1);
                assertThat(
                                awaitValue(
                                        promPort,
                                        "cri4j_proxy_calls_total{method=\"CreateContainer\",kind=\"intercepted\",code=\"OK\"}",
                                        4))
                        .isEqualTo(4);

                // promtool's lint of the exposition the proxy serves
                HttpResponse<String> text =
                        http.send(
                                HttpRequest.newBuilder(
                                                URI.create(
                                                        "http://127.0.0.1:"
                                                                + metricsPort
                                                                + "/metrics"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                Path scraped = dir.resolve("scraped.txt");
                Files.writeString(scraped, text.body());
                Process check =
                        new ProcessBuilder(promtool.toString(), "check", "metrics")
                                .redirectInput(scraped.toFile())
                                .redirectErrorStream(true)
                                .start();
                String said =
                        new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(check.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(check.exitValue()).as("promtool check metrics: %s", said).isZero();
            } finally {
                for (String podId : pods) {
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build());
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .build());
                }
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        } finally {
            if (prom != null) {
                prom.destroy();
                if (!prom.waitFor(10, TimeUnit.SECONDS)) {
                    prom.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    private void awaitReady(int port) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < end) {
            try {
                if (http.send(
                                        HttpRequest.newBuilder(
                                                        URI.create(
                                                                "http://127.0.0.1:"
                                                                        + port
                                                                        + "/-/ready"))
                                                .build(),
                                        HttpResponse.BodyHandlers.discarding())
                                .statusCode()
                        == 200) {
                    return;
                }
            } catch (java.io.IOException notYet) {
                // not listening yet
            }
            Thread.sleep(50);
        }
        throw new AssertionError(
                "Prometheus not ready within 30 s: "
                        + Files.readString(dir.resolve("prometheus.log")));
    }

    /** Polls Prometheus' query API until {@code query} has the value {@code want} (or 20 s pass). */
    private double awaitValue(int port, String query, double want) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        double last = Double.NaN;
        while (System.nanoTime() < end) {
            last = value(port, query);
            if (last == want) {
                return last;
            }
            Thread.sleep(200);
        }
        return last;
    }

    private double value(int port, String query) throws Exception {
        HttpResponse<String> r =
                http.send(
                        HttpRequest.newBuilder(
                                        URI.create(
                                                "http://127.0.0.1:"
                                                        + port
                                                        + "/api/v1/query?query="
                                                        + URLEncoder.encode(
                                                                query, StandardCharsets.UTF_8)))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("%s: %s", query, r.body()).isEqualTo(200);
        JsonObject data =
                JsonParser.parseString(r.body()).getAsJsonObject().getAsJsonObject("data");
        JsonArray result = data.getAsJsonArray("result");
        if (result.isEmpty()) {
            return Double.NaN;
        }
        double sum = 0;
        for (var e : result) {
            sum +=
                    Double.parseDouble(
                            e.getAsJsonObject().getAsJsonArray("value").get(1).getAsString());
        }
        return sum;
    }
}
