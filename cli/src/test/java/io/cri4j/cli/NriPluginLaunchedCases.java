package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

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
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code deploy/cri4j-nri-launcher} in containerd's plugin directory: containerd starts the agent
 * itself (pre-registered, over the socket in {@code NRI_PLUGIN_SOCKET}), passes it its {@code
 * plugin_config_path} file, and the example hook's env, as that config says, reaches a container
 * created right after containerd's start. Run on containerd 2.1.4 ({@link NriPluginCommandIT}),
 * launched without a class data sharing archive, and 2.3.4 ({@link
 * NriPluginCommandContainerd23IT}), after the launcher's {@code train} made one, which the launched
 * JVM then must use ({@code -Xshare:on}: it does not start with an archive it cannot map).
 */
abstract class NriPluginLaunchedCases {

    @TempDir Path launchDir;

    /** The containerd of the subclass. */
    abstract ContainerdExtension containerd();

    /** Its version, as it tells plugins. */
    abstract String runtimeVersion();

    /** Whether the launcher's {@code train} runs before containerd launches it. */
    abstract boolean trainsAnArchive();

    @Test
    void containerdLaunchesTheLauncherItselfAndTheFirstContainerGetsTheConfiguredHooksEnv()
            throws Exception {
        LocalContainerd containerd = containerd().containerd();
        Path plugins = Files.createDirectories(launchDir.resolve("plugins"));
        Path jar = NriPluginCommandIT.examplePluginJar();
        Files.copy(jar, plugins.resolve(jar.getFileName()));
        Path log = launchDir.resolve("launched.log");
        // the shipped launcher, with this machine's paths
        String shipped = Files.readString(Path.of("..", "deploy", "cri4j-nri-launcher"));
        assertThat(shipped)
                .as("the launcher's JVM flags are ./cri4j's")
                .contains(
                        Files.readAllLines(Path.of("..", "cri4j")).stream()
                                .filter(l -> l.startsWith("defaults="))
                                .findFirst()
                                .orElseThrow());
        String launcher =
                shipped.replace(
                                "java=/usr/bin/java",
                                "java=" + Path.of(System.getProperty("java.home"), "bin", "java"))
                        .replace(
                                "jar=/opt/cri4j/cri4j-cli.jar",
                                "jar=" + Path.of("target", "cri4j-cli.jar").toAbsolutePath())
                        .replace("plugins=/opt/cri4j/plugins", "plugins=" + plugins)
                        .replace("log=/var/log/cri4j-nri-plugin.log", "log=" + log)
                        .replace(
                                "archive=/opt/cri4j/cri4j-nri-plugin.jsa",
                                "archive=" + launchDir.resolve("cri4j-nri-plugin.jsa"))
                        // an archive the JVM cannot map fails the start instead of going unnoticed
                        .replace(
                                "cds=\"-Xshare:auto -XX:SharedArchiveFile=$archive\"",
                                "cds=\"-Xshare:on -XX:SharedArchiveFile=$archive\"");
        assertThat(launcher).as("paths replaced").doesNotContain("/opt/cri4j", "/var/log");
        assertThat(launcher).as("the archive's flags replaced").contains("-Xshare:on");
        Path nri = containerd.directory().resolve("nri");
        Path installed = nri.resolve("plugins").resolve("45-cri4j");
        Path config = nri.resolve("conf.d").resolve("45-cri4j.conf");
        Files.writeString(installed, launcher);
        installed.toFile().setExecutable(true);
        Path archive = launchDir.resolve("cri4j-nri-plugin.jsa");
        if (trainsAnArchive()) {
            Process train =
                    new ProcessBuilder(installed.toString(), "train")
                            .redirectErrorStream(true)
                            .start();
            String out =
                    new String(
                            train.getInputStream().readAllBytes(),
                            java.nio.charset.StandardCharsets.UTF_8);
            assertThat(train.waitFor(2, TimeUnit.MINUTES)).as("launcher train").isTrue();
            assertThat(train.exitValue()).as("launcher train: %s", out).isZero();
            assertThat(out).contains("made " + archive);
            assertThat(archive).isNotEmptyFile();
        }
        Files.writeString(
                config,
                "# the example hook's team for pods without one\n" + "default-team=platform\n");
        try {
            int before = containerd.nriPluginRegistrations("45-cri4j");
            // containerd starts its pre-registered plugins when it starts
            containerd.kill();
            containerd.startAgain();
            String env;
            try {
                env = envOfAContainerCreatedNow(containerd);
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError(
                        "the launched plugin's output:\n"
                                + (Files.exists(log) ? Files.readString(log) : "(none)")
                                + "\ncontainerd's NRI log:\n"
                                + Files.readAllLines(containerd.logFile()).stream()
                                        .filter(l -> l.contains("plugin"))
                                        .toList(),
                        e);
            }
            assertThat(env).contains("CRI4J_TEAM=platform");
            assertThat(containerd.nriPluginRegistrations("45-cri4j")).isEqualTo(before + 1);
            String out = Files.readString(log);
            assertThat(out)
                    .contains("registered as 45-cri4j with containerd " + runtimeVersion())
                    .contains("the socket the runtime passed (NRI_PLUGIN_SOCKET)");
            Matcher m = Pattern.compile("\\((\\d+) ms after the JVM started\\)").matcher(out);
            assertThat(m.find()).isTrue();
            long ms = Long.parseLong(m.group(1));
            System.out.printf(
                    "NRI pre-registered launch on containerd %s (%s): registered %d ms after the"
                            + " JVM started (containerd's registration timeout: 5 s)%n",
                    runtimeVersion(),
                    trainsAnArchive() ? "with its archive" : "without an archive",
                    ms);
            assertThat(Files.exists(archive)).isEqualTo(trainsAnArchive());
            assertThat(ms).as("within containerd's registration timeout").isLessThan(5000);
        } finally {
            Files.delete(installed);
            Files.delete(config);
            containerd.restart(); // stops the launched plugin: its socket closes, it exits
        }
    }

    /** Runs a pod without a team label and creates a container in it; the env of its OCI spec. */
    private String envOfAContainerCreatedNow(LocalContainerd containerd) throws Exception {
        ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime =
                    RuntimeServiceGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(60, TimeUnit.SECONDS);
            String image = containerd.registry().push(TestImage.busybox()).reference();
            ImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            PodSandboxConfig pod = TestPods.hostNetwork("launched", "ns", launchDir).build();
            String podId =
                    runtime.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                            .getPodSandboxId();
            String id =
                    runtime.createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setSandboxConfig(pod)
                                            .setConfig(TestPods.sleeper("app", image))
                                            .build())
                            .getContainerId();
            return JsonParser.parseString(
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
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
