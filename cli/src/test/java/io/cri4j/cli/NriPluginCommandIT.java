package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cri4j nri-plugin --plugins DIR} as a real process against containerd 2.1.4 with NRI: the
 * example plugin jar's hook (module example-hook-plugin) changes the containers containerd
 * creates; SIGTERM unregisters and exits 0; an unreachable socket is a one-line error. The launch
 * by containerd itself ({@link NriPluginLaunchedCases}) runs on containerd 2.3.4 too.
 */
class NriPluginCommandIT extends NriPluginLaunchedCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd2WithNri().build();

    @TempDir Path dir;

    @Override
    ContainerdExtension containerd() {
        return CONTAINERD;
    }

    @Override
    String runtimeVersion() {
        return "2.1.4";
    }

    @Override
    boolean trainsAnArchive() {
        return false;
    }

    static Path examplePluginJar() throws Exception {
        try (Stream<Path> built = Files.list(Path.of("..", "example-hook-plugin", "target"))) {
            return built.filter(
                            p ->
                                    p.getFileName()
                                            .toString()
                                            .matches("cri4j-example-hook-plugin-.*\\.jar"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("example-hook-plugin jar not built"));
        }
    }

    @Test
    void servesTheExamplePluginsHookToContainerdAndUnregistersOnSigterm() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        CliProcess cli =
                CliProcess.start(
                        "nri-plugin",
                        "--socket",
                        "unix://" + CONTAINERD.nriSocket(),
                        "--plugins",
                        plugins.toString(),
                        "--name",
                        "cri4j-example",
                        "--index",
                        "30");
        StringBuilder out = new StringBuilder();
        String line = cli.nextLine();
        for (; !line.contains("registered as"); line = cli.nextLine()) {
            out.append(line).append('\n');
        }
        assertThat(out.toString()).contains("hook 'owner-team' (hook index 50): CreateContainer");
        assertThat(line).contains("registered as 30-cri4j-example with containerd");
        CONTAINERD
                .containerd()
                .awaitNriPluginRegistrations("30-cri4j-example", 1, Duration.ofSeconds(10));

        ManagedChannel channel = CriChannels.newChannel(CONTAINERD.endpoint());
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime =
                    RuntimeServiceGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(60, TimeUnit.SECONDS);
            String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            for (Map.Entry<String, String> c :
                    Map.of("storage", "storage", "", "unassigned").entrySet()) {
                PodSandboxConfig pod =
                        TestPods.hostNetwork("db" + c.getKey(), "ns", dir)
                                .putAllLabels(
                                        c.getKey().isEmpty()
                                                ? Map.of()
                                                : Map.of("team", c.getKey()))
                                .build();
                String podId =
                        runtime.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                                .getPodSandboxId();
                String id =
                        runtime.createContainer(
                                        CreateContainerRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .setSandboxConfig(pod)
                                                .setConfig(TestPods.sleeper("app", image))
                                                .build())
                                .getContainerId();
                var spec =
                        JsonParser.parseString(
                                        runtime.containerStatus(
                                                        ContainerStatusRequest.newBuilder()
                                                                .setContainerId(id)
                                                                .setVerbose(true)
                                                                .build())
                                                .getInfoOrThrow("info"))
                                .getAsJsonObject()
                                .getAsJsonObject("runtimeSpec");
                assertThat(spec.getAsJsonObject("process").getAsJsonArray("env").toString())
                        .contains("CRI4J_TEAM=" + c.getValue());
                assertThat(
                                spec.getAsJsonObject("annotations")
                                        .get("cri4j.io/owner-team")
                                        .getAsString())
                        .isEqualTo(c.getValue());
            }
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }

        CliRun run = cli.terminate();
        assertThat(run.exitCode()).as("exit code after SIGTERM; output:\n%s", run.out()).isZero();
        assertThat(run.out()).contains("30-cri4j-example stopped").doesNotContain("Exception");
        assertThat(Files.readString(CONTAINERD.containerd().logFile()))
                .contains("connection to plugin \\\"30-cri4j-example\\\" closed");
    }

    @Test
    void failsWithOneLineWhenTheSocketCannotBeReached() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        CliRun run =
                CliProcess.start(
                                "nri-plugin",
                                "--socket",
                                "unix://" + dir.resolve("missing.sock"),
                                "--plugins",
                                plugins.toString())
                        .finish();
        assertThat(run.exitCode()).isNotZero();
        assertThat(run.out())
                .contains(
                        "cri4j nri-plugin: cannot connect to the NRI socket "
                                + dir.resolve("missing.sock")
                                + ": it does not exist (is the runtime running, with NRI enabled?)");
        assertThat(run.out()).doesNotContain("\tat ").doesNotContain("Exception");
    }

    @Test
    void waitsForTheSocketWithWaitAndRegistersOnceItAppears() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        Path later = dir.resolve("later.sock");
        CliProcess cli =
                CliProcess.start(
                        "nri-plugin",
                        "--socket",
                        "unix://" + later,
                        "--plugins",
                        plugins.toString(),
                        "--name",
                        "cri4j-waiting",
                        "--wait");
        String line = cli.nextLine();
        while (!line.contains("waiting for")) {
            line = cli.nextLine();
        }
        assertThat(line).isEqualTo("cri4j nri-plugin: waiting for " + later);
        Files.createSymbolicLink(later, CONTAINERD.nriSocket()); // the runtime's socket appears
        while (!line.contains("registered as")) {
            line = cli.nextLine();
        }
        CONTAINERD
                .containerd()
                .awaitNriPluginRegistrations("50-cri4j-waiting", 1, Duration.ofSeconds(10));
        assertThat(cli.terminate().exitCode()).isZero();
    }

    @Test
    void saysWhichEventsOfAHookNriCannotServe() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        TestJars.write(plugins.resolve("pod-level.jar"), PodLevelHook.class, "io.cri4j.hook.Hook");
        CliRun run =
                CliProcess.start(
                                "nri-plugin",
                                "--socket",
                                "unix://" + dir.resolve("missing.sock"),
                                "--plugins",
                                plugins.toString())
                        .finish();
        assertThat(run.out())
                .contains(
                        "cri4j nri-plugin: hook 'pod-level' (hook index 50): AdjustPodSandbox, CreateContainer")
                .contains(
                        "cri4j nri-plugin: hook 'pod-level': NRI has no AdjustPodSandbox event; not served "
                                + "here (the cri4j proxy serves it)");
    }

    @Test
    void servesSeveralHooksAsOnePluginInIndexOrderAndReportsTheirConflicts() throws Exception {
        Path plugins = Files.createDirectories(dir.resolve("plugins"));
        Path jar = examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        TestJars.write(plugins.resolve("second.jar"), SecondTeamHook.class, "io.cri4j.hook.Hook");
        CliProcess cli =
                CliProcess.start(
                        "nri-plugin",
                        "--socket",
                        "unix://" + CONTAINERD.nriSocket(),
                        "--plugins",
                        plugins.toString(),
                        "--name",
                        "cri4j-chain",
                        "--index",
                        "31");
        StringBuilder out = new StringBuilder();
        for (String line = cli.nextLine(); !line.contains("registered as"); line = cli.nextLine()) {
            out.append(line).append('\n');
        }
        assertThat(out.toString())
                .contains(
                        "2 hooks served as one NRI plugin, in this order: second (20), owner-team (50)");
        CONTAINERD
                .containerd()
                .awaitNriPluginRegistrations("31-cri4j-chain", 1, Duration.ofSeconds(10));
        ManagedChannel channel = CriChannels.newChannel(CONTAINERD.endpoint());
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime =
                    RuntimeServiceGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(60, TimeUnit.SECONDS);
            String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            Map<String, String> both = Map.of("team", "web");
            String id = createIn(runtime, image, both);
            String env =
                    JsonParser.parseString(
                                    runtime.containerStatus(
                                                    ContainerStatusRequest.newBuilder()
                                                            .setContainerId(id)
                                                            .setVerbose(true)
                                                            .build())
                                            .getInfoOrThrow("info"))
                            .getAsJsonObject()
                            .getAsJsonObject("runtimeSpec")
                            .getAsJsonObject("process")
                            .getAsJsonArray("env")
                            .toString();
            assertThat(env).contains("CRI4J_TEAM=web").contains("CRI4J_SECOND=yes");

            assertThatThrownBy(
                            () -> createIn(runtime, image, Map.of("team", "web", "clash", "yes")))
                    .isInstanceOf(io.grpc.StatusRuntimeException.class)
                    .hasMessageContaining("second")
                    .hasMessageContaining("owner-team")
                    .hasMessageContaining("CRI4J_TEAM");
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        assertThat(cli.terminate().exitCode()).isZero();
    }

    private String createIn(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime,
            String image,
            Map<String, String> labels) {
        PodSandboxConfig pod =
                TestPods.hostNetwork("p" + UUID.randomUUID().toString().substring(0, 8), "ns", dir)
                        .putAllLabels(labels)
                        .build();
        String podId =
                runtime.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        return runtime.createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(podId)
                                .setSandboxConfig(pod)
                                .setConfig(TestPods.sleeper("app", image))
                                .build())
                .getContainerId();
    }
}
