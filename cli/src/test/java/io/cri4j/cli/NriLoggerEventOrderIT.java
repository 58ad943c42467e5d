package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.nri.NriHost;
import io.cri4j.testing.fake.FakeCriServer;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.NriGoPlugin;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NRI's own Go {@code nri-logger} (NRI v0.12.0) on three NRI hosts, for the same pod with a
 * container that exits 1 by itself, then the pod stopped and removed: the events it logs, in
 * order, are on {@code ./cri4j proxy --nri-socket} in front of containerd 1.6 and on the fake
 * runtime what containerd 2.3.4 sends it on its own NRI socket. The exit reaches the plugin as
 * {@code StopContainer} without anyone calling {@code StopContainer}.
 */
class NriLoggerEventOrderIT {

    private static final Pattern EVENT = Pattern.compile("msg=\"(\\w+): pod:\"");

    @TempDir Path dir;

    @Test
    void theProxyAndTheFakeSendNrisLoggerWhatContainerd234Sends() throws Exception {
        List<String> reference;
        try (LocalContainerd c23 = LocalContainerd.builder().containerd23WithNri().start()) {
            String image = c23.registry().push(TestImage.busybox()).reference();
            reference = logged(c23.nriSocket(), dir.resolve("c23"), c23.endpoint(), image, null);
        }
        assertThat(reference)
                .as("containerd 2.3.4's events")
                .containsSubsequence("RunPodSandbox", "StartContainer", "StopContainer")
                .contains("RemovePodSandbox");
        reference = postStartFirst(reference);

        try (LocalContainerd c16 = LocalContainerd.builder().start()) {
            String image = c16.registry().push(TestImage.busybox()).reference();
            Path nri = dir.resolve("proxy-nri.sock");
            try (CliProcess proxy =
                    CliProcess.start(
                            "proxy",
                            "--listen",
                            "unix://" + dir.resolve("proxy.sock"),
                            "--backend",
                            c16.endpoint().toString(),
                            "--no-observe-pulls",
                            "--nri-socket",
                            "unix://" + nri)) {
                awaitLine(proxy, "cri4j proxy: NRI plugins connect to");
                proxy.drain();
                assertThat(
                                logged(
                                        nri,
                                        dir.resolve("proxy"),
                                        CriEndpoint.unix(dir.resolve("proxy.sock")),
                                        image,
                                        null))
                        .as("the proxy's events, containerd 2.3.4's were %s", reference)
                        .isEqualTo(reference);
            }
        }

        Path nri = dir.resolve("fake-nri.sock");
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                        .pullRate(0)
                        .addHookProvider(NriHost.builder(nri).build())
                        .build()
                        .start()) {
            assertThat(
                            logged(
                                    nri,
                                    dir.resolve("fake"),
                                    fake.endpoint(),
                                    "example.test/busybox:1",
                                    id -> fake.runtime().exitContainer(id, 1)))
                    .as("the fake's events, containerd 2.3.4's were %s", reference)
                    .isEqualTo(reference);
        }
    }

    /**
     * {@code events} with a {@code PostStartContainer} that came right after the {@code
     * StopContainer} of the container's exit put before it: the container exits at once, and
     * containerd 2.3.4 sends the exit's {@code StopContainer} before {@code PostStartContainer} in
     * some runs (its exit and its start answer race), after it in most.
     */
    private static List<String> postStartFirst(List<String> events) {
        List<String> out = new ArrayList<>(events);
        int stop = out.indexOf("StopContainer");
        if (stop >= 0 && stop + 1 < out.size() && out.get(stop + 1).equals("PostStartContainer")) {
            out.set(stop, "PostStartContainer");
            out.set(stop + 1, "StopContainer");
        }
        return out;
    }

    /**
     * Runs the pod with {@code nri-logger} on {@code nri} and returns the events it logged.
     *
     * @param exit makes the container exit 1 (null: its command does)
     */
    private static List<String> logged(
            Path nri, Path work, CriEndpoint endpoint, String image, Consumer<String> exit)
            throws Exception {
        Files.createDirectories(work);
        Path log = work.resolve("nri-logger.log");
        ManagedChannel channel = CriChannels.newChannel(endpoint);
        try (NriGoPlugin logger =
                NriGoPlugin.launchV012(nri, work, "nri-logger", 10, "-log-file", log.toString())) {
            awaitLogged(log, "Synchronize");
            var rt = RuntimeServiceGrpc.newBlockingStub(channel);
            ImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .pullImage(
                            PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(image))
                                    .build());
            PodSandboxConfig pod = TestPods.hostNetwork("order", "nri", work).build();
            String podId =
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                            .getPodSandboxId();
            ContainerConfig ctr =
                    TestPods.sleeper("exits", image)
                            .clearCommand()
                            .clearArgs()
                            .addCommand("sh")
                            .addArgs("-c")
                            .addArgs(exit == null ? "exit 1" : "sleep 3600")
                            .build();
            String id =
                    rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .createContainer(
                                    CreateContainerRequest.newBuilder()
                                            .setPodSandboxId(podId)
                                            .setSandboxConfig(pod)
                                            .setConfig(ctr)
                                            .build())
                            .getContainerId();
            rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
            if (exit != null) {
                exit.accept(id);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (rt.withDeadlineAfter(10, TimeUnit.SECONDS)
                            .containerStatus(
                                    ContainerStatusRequest.newBuilder().setContainerId(id).build())
                            .getStatus()
                            .getState()
                    != ContainerState.CONTAINER_EXITED) {
                assertThat(System.nanoTime()).as("container exited").isLessThan(deadline);
                TimeUnit.MILLISECONDS.sleep(50);
            }
            // the exit reaches the plugin without a StopContainer call
            awaitLogged(log, "StopContainer");
            rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .stopPodSandbox(
                            StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            rt.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .removePodSandbox(
                            RemovePodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
            awaitLogged(log, "RemovePodSandbox");
            return events(log);
        } finally {
            channel.shutdownNow();
        }
    }

    private static List<String> events(Path log) throws Exception {
        List<String> events = new ArrayList<>();
        for (String line : Files.readAllLines(log)) {
            Matcher m = EVENT.matcher(line);
            if (m.find()) {
                events.add(m.group(1));
            }
        }
        return events;
    }

    private static void awaitLogged(Path log, String event) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(log)
                || (!events(log).contains(event)
                        && !Files.readString(log).contains("msg=\"" + event + ": "))) {
            assertThat(System.nanoTime())
                    .as("nri-logger logging %s in %s", event, log)
                    .isLessThan(deadline);
            TimeUnit.MILLISECONDS.sleep(50);
        }
    }

    private static void awaitLine(CliProcess p, String text) throws Exception {
        StringBuilder seen = new StringBuilder();
        for (String line; (line = p.nextLine()) != null; ) {
            seen.append(line).append('\n');
            if (line.contains(text)) {
                return;
            }
        }
        throw new AssertionError("no '" + text + "' in:\n" + seen);
    }
}
