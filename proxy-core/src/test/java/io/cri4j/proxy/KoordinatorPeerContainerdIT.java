package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.ByteString;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.koordinator.HookConfigDirectory;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy in front of a REAL containerd with a Koordinator hook server that is not ours (the
 * grpc-js {@link KoordinatorHookPeer}), configured the way koordlet is: a file in the watched
 * hook config directory. What the hook answers reaches the containers containerd runs, and what
 * the hook is sent is what kubelet asked for.
 */
class KoordinatorPeerContainerdIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    static final String ALL_POINTS =
            "[\"PreRunPodSandbox\", \"PostStopPodSandbox\", "
                    + "\"PreCreateContainer\", \"PreStartContainer\", \"PostStartContainer\", "
                    + "\"PreUpdateContainerResources\", \"PostStopContainer\"]";

    @TempDir Path dir;
    private KoordinatorHookPeer peer;
    private CriProxy proxy;
    private ManagedChannel channel;
    private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
            new LinkedBlockingQueue<>();
    private final List<String> pods = new ArrayList<>();
    private final List<String> cgroupParents = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        peer = KoordinatorHookPeer.start(dir.resolve("koordlet.sock"));
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(CONTAINERD.endpoint())
                        .hookConfigDir(dir.resolve("hooks"))
                        .build()
                        .start();
        proxy.hookConfigDirectory().orElseThrow().addListener(snapshots::add);
        channel = CriChannels.newChannel(proxy.listenEndpoint());
    }

    @AfterEach
    void stop() {
        for (String id : pods) {
            try {
                rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(id).build());
                rt().removePodSandbox(
                                RemovePodSandboxRequest.newBuilder().setPodSandboxId(id).build());
            } catch (StatusRuntimeException e) {
                // the test's failure is the one to see
            }
        }
        if (channel != null) {
            channel.shutdownNow();
        }
        if (proxy != null) {
            proxy.close();
        }
        if (peer != null) {
            peer.close();
        }
        for (String parent : cgroupParents) {
            // runc leaves the parents it created (one per cgroup v1 controller): empty, so rmdir
            // works
            try (var controllers = Files.list(Path.of("/sys/fs/cgroup"))) {
                controllers
                        .map(c -> c.resolve(parent.substring(1)))
                        .forEach(p -> p.toFile().delete());
            } catch (Exception ignored) {
                // best effort
            }
        }
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub rt() {
        return RuntimeServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    /** Writes the hook config file koordlet.json in place (an edit, not a rename) and awaits it. */
    private void configure(String policy, String points) throws Exception {
        Files.createDirectories(dir.resolve("hooks"));
        Files.writeString(
                dir.resolve("hooks/koordlet.json"),
                "{\"remote-endpoint\": \"unix://"
                        + peer.socket()
                        + "\", \"failure-policy\": \""
                        + policy
                        + "\", \"runtime-hooks\": "
                        + points
                        + "}");
        FailurePolicy expected = FailurePolicy.parse(policy);
        awaitConfig(
                s ->
                        s.configs().containsKey("koordlet")
                                && s.configs().get("koordlet").failurePolicy() == expected);
    }

    private void awaitConfig(Predicate<HookConfigDirectory.Snapshot> p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            HookConfigDirectory.Snapshot s = snapshots.poll(100, TimeUnit.MILLISECONDS);
            if (s != null && p.test(s)) {
                return;
            }
        }
        throw new AssertionError(
                "hook config not in force within 20 s: "
                        + proxy.hookConfigDirectory().orElseThrow().snapshot());
    }

    static JsonObject json(String s) {
        return JsonParser.parseString(s).getAsJsonObject();
    }

    static KeyValue env(String k, String v) {
        return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
    }

    private PodSandboxConfig.Builder pod(String name) {
        return TestPods.hostNetwork(name, "koord", dir);
    }

    private String run(PodSandboxConfig config) {
        String id =
                rt().runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(config).build())
                        .getPodSandboxId();
        pods.add(id);
        return id;
    }

    private String busybox() {
        String image = CONTAINERD.registry().push(TestImage.busybox()).reference();
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .pullImage(
                        PullImageRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(image))
                                .build());
        return image;
    }

    private boolean podNamed(String name) {
        return rt()
                .listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                .getItemsList()
                .stream()
                .anyMatch(p -> p.getMetadata().getName().equals(name));
    }

    @Test
    void theHooksEnvironmentReachesTheContainerAndTheHookSeesTheContainersOwn() throws Exception {
        configure("Fail", ALL_POINTS);
        // koordlet's way: the request's environment with the hook's changes on top
        peer.answerEchoingEnvs(
                "PreCreateContainerHook",
                json(
                        """
        {"container_envs": {"SECOND": "from-grpc-js", "INJECTED": "by-koordinator-peer"},
         "container_annotations": {"koordinator.sh/hooked": "grpc-js"}}"""));
        String image = busybox();
        PodSandboxConfig pod = pod("env-web").build();
        String podId = run(pod);
        String ctr =
                rt().createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(
                                                TestPods.sleeper("app", image)
                                                        .addEnvs(env("FIRST", "1"))
                                                        .addEnvs(env("SECOND", "2"))
                                                        .addEnvs(env("FIRST", "1b")))
                                        .build())
                        .getContainerId();

        JsonObject create = peer.awaitRequest("PreCreateContainerHook", 1);
        assertThat(create.getAsJsonObject("container_envs"))
                .isEqualTo(json("{\"FIRST\": \"1b\", \"SECOND\": \"2\"}"));
        assertThat(create.getAsJsonObject("container_meta").get("name").getAsString())
                .isEqualTo("app");
        assertThat(create.getAsJsonObject("pod_meta").get("name").getAsString())
                .isEqualTo("env-web");

        rt().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        String env =
                rt().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(ctr)
                                        .addCmd("env")
                                        .setTimeout(10)
                                        .build())
                        .getStdout()
                        .toStringUtf8();
        assertThat(env.lines())
                .contains("INJECTED=by-koordinator-peer", "SECOND=from-grpc-js", "FIRST=1b")
                .doesNotContain("SECOND=2");
        assertThat(
                        rt().containerStatus(
                                        ContainerStatusRequest.newBuilder()
                                                .setContainerId(ctr)
                                                .build())
                                .getStatus()
                                .getAnnotationsMap())
                .containsEntry("koordinator.sh/hooked", "grpc-js");

        // the id-only calls: described to the hook as created, the id from the runtime
        JsonObject start = peer.awaitRequest("PreStartContainerHook", 1);
        assertThat(start.getAsJsonObject("container_meta").get("id").getAsString()).isEqualTo(ctr);
        assertThat(start.getAsJsonObject("container_envs").get("INJECTED").getAsString())
                .isEqualTo("by-koordinator-peer");
        assertThat(
                        peer.awaitRequest("PostStartContainerHook", 1)
                                .getAsJsonObject("container_meta")
                                .get("id")
                                .getAsString())
                .isEqualTo(ctr);

        rt().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(ctr)
                                .setTimeout(1)
                                .build());
        JsonObject stopped = peer.awaitRequest("PostStopContainerHook", 1);
        assertThat(stopped.getAsJsonObject("container_meta").get("id").getAsString())
                .isEqualTo(ctr);
        assertThat(stopped.getAsJsonObject("pod_meta").get("namespace").getAsString())
                .isEqualTo("koord");

        rt().stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        assertThat(
                        peer.awaitRequest("PostStopPodSandboxHook", 1)
                                .getAsJsonObject("pod_meta")
                                .get("name")
                                .getAsString())
                .isEqualTo("env-web");
        assertThat(peer.methodsCalled())
                .containsExactly(
                        "PreRunPodSandboxHook",
                        "PreCreateContainerHook",
                        "PreStartContainerHook",
                        "PostStartContainerHook",
                        "PostStopContainerHook",
                        "PostStopPodSandboxHook");
    }

    @Test
    void labelsAnnotationsCgroupParentAndResourcesAtPreRunPodSandbox() throws Exception {
        configure("Fail", "[\"PreRunPodSandbox\"]");
        String parent = "/cri4j-koord-" + UUID.randomUUID().toString().substring(0, 8);
        cgroupParents.add(parent);
        peer.answer(
                "PreRunPodSandboxHook",
                json(
                        """
        {"labels": {"koordinator.sh/qosClass": "LS"},
         "annotations": {"koordinator.sh/hooked": "pod"},
         "cgroup_parent": "%s",
         "resources": {"cpu_shares": "512", "memory_limit_in_bytes": "268435456"}}"""
                                .formatted(parent)));
        PodSandboxConfig.Builder b =
                pod("res-web").putLabels("app", "web").putAnnotations("kubelet", "yes");
        b.getLinuxBuilder()
                .setOverhead(LinuxContainerResources.newBuilder().setCpuShares(10))
                .setResources(
                        LinuxContainerResources.newBuilder()
                                .setCpuShares(200)
                                .setMemoryLimitInBytes(128 << 20));
        String podId = run(b.build());

        JsonObject req = peer.awaitRequest("PreRunPodSandboxHook", 1);
        assertThat(req.getAsJsonObject("labels").get("app").getAsString()).isEqualTo("web");
        assertThat(req.getAsJsonObject("annotations").get("kubelet").getAsString())
                .isEqualTo("yes");
        assertThat(req.getAsJsonObject("pod_meta").get("uid").getAsString())
                .isEqualTo(b.getMetadata().getUid());
        assertThat(req.getAsJsonObject("overhead").get("cpu_shares").getAsString()).isEqualTo("10");
        assertThat(req.getAsJsonObject("resources").get("cpu_shares").getAsString())
                .isEqualTo("200");

        PodSandbox listed =
                rt()
                        .listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                        .getItemsList()
                        .stream()
                        .filter(p -> p.getId().equals(podId))
                        .findFirst()
                        .orElseThrow();
        assertThat(listed.getLabelsMap())
                .containsEntry("koordinator.sh/qosClass", "LS")
                .containsEntry("app", "web");
        var status =
                rt().podSandboxStatus(
                                PodSandboxStatusRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setVerbose(true)
                                        .build());
        assertThat(status.getStatus().getAnnotationsMap())
                .containsEntry("koordinator.sh/hooked", "pod")
                .containsEntry("kubelet", "yes");
        // what containerd keeps of the config it got, and where it put the sandbox's process
        JsonObject info = json(status.getInfoMap().get("info"));
        JsonObject linux = info.getAsJsonObject("config").getAsJsonObject("linux");
        assertThat(linux.get("cgroup_parent").getAsString()).isEqualTo(parent);
        assertThat(linux.getAsJsonObject("resources").get("cpu_shares").getAsLong()).isEqualTo(512);
        assertThat(linux.getAsJsonObject("resources").get("memory_limit_in_bytes").getAsLong())
                .isEqualTo(256 << 20);
        long pid = info.get("pid").getAsLong();
        assertThat(Files.readString(Path.of("/proc/" + pid + "/cgroup"))).contains(parent + "/");
    }

    @Test
    void failThenIgnoreWithTheHookServerGoneAndTheEditTakesEffectWithoutRestart() throws Exception {
        configure("Fail", "[\"PreRunPodSandbox\"]");
        peer.answer(
                "PreRunPodSandboxHook", json("{\"labels\": {\"koordinator.sh/seen\": \"yes\"}}"));
        String alive = run(pod("alive").build());
        assertThat(rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList())
                .filteredOn(p -> p.getId().equals(alive))
                .singleElement()
                .satisfies(
                        p ->
                                assertThat(p.getLabelsMap())
                                        .containsEntry("koordinator.sh/seen", "yes"));

        peer.stop(); // koordlet is gone
        assertThatThrownBy(() -> run(pod("refused").build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .as("as containerd answers a failing NRI plugin")
                                    .isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .contains("AdjustPodSandbox: hook \"koordlet\" failed")
                                    .contains("UNAVAILABLE");
                        });
        assertThat(podNamed("refused")).as("containerd never got the pod").isFalse();

        configure("Ignore", "[\"PreRunPodSandbox\"]"); // the same file, edited; no restart
        String lax = run(pod("lax").build());
        assertThat(rt().listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList())
                .filteredOn(p -> p.getId().equals(lax))
                .singleElement()
                .satisfies(
                        p -> assertThat(p.getLabelsMap()).doesNotContainKey("koordinator.sh/seen"));
    }
}
