package io.cri4j.nri;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ExecSyncResponse;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** CRI calls against a real containerd for the NRI tests: host-network pods, busybox sleepers. */
final class Pods implements AutoCloseable {

    final ManagedChannel channel;
    final RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime;
    final String image;
    final Path logDir;

    Pods(LocalContainerd containerd, Path logDir) {
        this.channel = CriChannels.newChannel(containerd.endpoint());
        this.runtime = RuntimeServiceGrpc.newBlockingStub(channel);
        this.logDir = logDir;
        this.image = containerd.registry().push(TestImage.busybox()).reference();
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build());
    }

    record Pod(String id, PodSandboxConfig config) {}

    Pod runPod(String name, Map<String, String> labels) {
        PodSandboxConfig config =
                TestPods.hostNetwork(name, "nri-test", logDir).putAllLabels(labels).build();
        String id =
                runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                        .getPodSandboxId();
        return new Pod(id, config);
    }

    /** Creates (not starts) a container running {@code sleep 3600}. */
    String create(Pod pod, String name, Map<String, String> env) {
        ContainerConfig.Builder config = TestPods.sleeper(name, image);
        env.forEach(
                (k, v) ->
                        config.addEnvs(
                                KeyValue.newBuilder()
                                        .setKey(k)
                                        .setValue(com.google.protobuf.ByteString.copyFromUtf8(v))));
        return runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(pod.id())
                                .setConfig(config)
                                .setSandboxConfig(pod.config())
                                .build())
                .getContainerId();
    }

    String start(Pod pod, String name) {
        String id = create(pod, name, Map.of());
        start(id);
        return id;
    }

    void start(String id) {
        runtime.withDeadlineAfter(60, TimeUnit.SECONDS)
                .startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
    }

    /** Runs {@code cmd} in the container; fails unless it exits 0; its stdout. */
    String exec(String containerId, String... cmd) {
        ExecSyncResponse r =
                runtime.withDeadlineAfter(30, TimeUnit.SECONDS)
                        .execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(containerId)
                                        .addAllCmd(java.util.List.of(cmd))
                                        .setTimeout(20)
                                        .build());
        if (r.getExitCode() != 0) {
            throw new AssertionError(
                    String.join(" ", cmd)
                            + " exited "
                            + r.getExitCode()
                            + ": "
                            + r.getStderr().toString(StandardCharsets.UTF_8));
        }
        return r.getStdout().toString(StandardCharsets.UTF_8);
    }

    /** The line of /proc/self/status naming the CPUs the container's processes may run on. */
    String cpusAllowed(String containerId) {
        for (String line : exec(containerId, "cat", "/proc/self/status").split("\n")) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return line.substring("Cpus_allowed_list:".length()).trim();
            }
        }
        throw new AssertionError("no Cpus_allowed_list in /proc/self/status");
    }

    ContainerStatusResponse status(String containerId) {
        return runtime.withDeadlineAfter(30, TimeUnit.SECONDS)
                .containerStatus(
                        ContainerStatusRequest.newBuilder()
                                .setContainerId(containerId)
                                .setVerbose(true)
                                .build());
    }

    /** The OCI runtime spec containerd created the container with (ContainerStatus verbose info). */
    JsonObject spec(String containerId) {
        return JsonParser.parseString(status(containerId).getInfoOrThrow("info"))
                .getAsJsonObject()
                .getAsJsonObject("runtimeSpec");
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
}
