package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.examples.plugin.OwnerTeamHook;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.koordinator.HookServer;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.OptionalUInt64;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our {@link HookServer} called the way Koordinator's Go proxy calls a hook server, by a client
 * that is not ours: grpc-js with a proto written from Koordinator's own api.proto
 * ({@link KoordinatorHookPeer#call}). What the cri4j hook sees (NRI's pod and container) is what
 * grpc-js encoded, and what grpc-js decodes from the answer is what the hook meant: environment
 * both ways, annotations, resources with negative and 64-bit numbers, pod labels and cgroup
 * parent, and errors.
 */
class HookServerGrpcJsIT {
    @TempDir Path dir;

    final List<Container> seen = new CopyOnWriteArrayList<>();

    /** Answers from what it was sent, so that both directions are checked in one call. */
    final class EchoingHook implements Hook {
        @Override
        public String name() {
            return "java-hook";
        }

        @Override
        public HookPolicy policy() {
            return HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL);
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container c) {
            seen.add(c);
            String home =
                    c.getEnvList().stream()
                            .filter(e -> e.startsWith("HOME="))
                            .map(e -> e.substring(5))
                            .findFirst()
                            .orElse("?");
            return HookResult.adjust(
                    Adjustments.create()
                            .addAnnotation("seen-home", home)
                            .addEnv("FROM_WIRE_MAP", "m")
                            .addEnv("FROM_LIST", c.getName())
                            .setLinuxCpuQuota(-1)
                            .setLinuxMemoryLimit(5L << 32)
                            .setLinuxCpuSetCpus("2-3")
                            .build());
        }

        @Override
        public void startContainer(PodSandbox pod, Container c) {
            throw new IllegalStateException("refusing " + c.getId());
        }

        @Override
        public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
            return PodSandboxAdjustment.builder()
                    .putLabel("ns", pod.getNamespace())
                    .putAnnotation(
                            "overhead-shares",
                            "" + pod.getLinux().getPodOverhead().getCpu().getShares().getValue())
                    .cgroupParent(pod.getLinux().getCgroupParent() + "/koord")
                    .resources(
                            LinuxResources.newBuilder()
                                    .setCpu(
                                            LinuxCPU.newBuilder()
                                                    .setShares(
                                                            OptionalUInt64.newBuilder()
                                                                    .setValue(
                                                                            pod.getLinux()
                                                                                            .getPodResources()
                                                                                            .getCpu()
                                                                                            .getShares()
                                                                                            .getValue()
                                                                                    * 2)))
                                    .putUnified("memory.high", "1G")
                                    .build())
                    .build();
        }
    }

    static JsonObject json(String s) {
        return JsonParser.parseString(s).getAsJsonObject();
    }

    @Test
    void aGrpcJsClientGetsTheJavaHooksAnswersOverKoordinatorsProtocol() throws Exception {
        Path socket = dir.resolve("hook.sock");
        try (HookServer server = HookServer.start(socket, List.of(new EchoingHook()))) {
            JsonObject create =
                    KoordinatorHookPeer.call(
                            socket,
                            "PreCreateContainerHook",
                            json(
                                    """
          {"pod_meta": {"name": "web", "namespace": "ns", "uid": "u1"},
           "container_meta": {"name": "app", "attempt": 1},
           "container_envs": {"HOME": "/root", "PATH": "/bin"},
           "container_resources": {"cpu_shares": "1024", "oom_score_adj": "-998"}}
          """));
            JsonObject r = create.getAsJsonObject("response");
            assertThat(r).as(create.toString()).isNotNull();
            assertThat(seen)
                    .singleElement()
                    .satisfies(
                            c -> {
                                assertThat(c.getEnvList())
                                        .containsExactlyInAnyOrder("HOME=/root", "PATH=/bin");
                                assertThat(c.getName()).isEqualTo("app");
                                assertThat(c.getLinux().getOomScoreAdj().getValue())
                                        .isEqualTo(-998);
                                assertThat(
                                                c.getLinux()
                                                        .getResources()
                                                        .getCpu()
                                                        .getShares()
                                                        .getValue())
                                        .isEqualTo(1024);
                            });
            assertThat(r.getAsJsonObject("container_envs"))
                    .isEqualTo(
                            json(
                                    """
          {"FROM_LIST": "app", "FROM_WIRE_MAP": "m"}"""));
            assertThat(r.getAsJsonObject("container_annotations"))
                    .isEqualTo(
                            json(
                                    """
          {"seen-home": "/root"}"""));
            JsonObject res = r.getAsJsonObject("container_resources");
            assertThat(res.get("cpu_quota").getAsString()).isEqualTo("-1");
            assertThat(res.get("memory_limit_in_bytes").getAsString()).isEqualTo("" + (5L << 32));
            assertThat(res.get("cpuset_cpus").getAsString()).isEqualTo("2-3");
            // NRI's model changes no pod at container creation: no pod_cgroup_parent in the answer
            assertThat(r.get("pod_cgroup_parent")).isNull();

            JsonObject pod =
                    KoordinatorHookPeer.call(
                                    socket,
                                    "PreRunPodSandboxHook",
                                    json(
                                            """
          {"pod_meta": {"name": "web", "namespace": "prod"}, "cgroup_parent": "/kubepods",
           "overhead": {"cpu_shares": "10"}, "resources": {"cpu_shares": "300"}}
          """))
                            .getAsJsonObject("response");
            assertThat(pod.getAsJsonObject("labels")).isEqualTo(json("{\"ns\": \"prod\"}"));
            assertThat(pod.getAsJsonObject("annotations"))
                    .isEqualTo(json("{\"overhead-shares\": \"10\"}"));
            assertThat(pod.get("cgroup_parent").getAsString()).isEqualTo("/kubepods/koord");
            assertThat(pod.getAsJsonObject("resources").get("cpu_shares").getAsString())
                    .isEqualTo("600");
            assertThat(pod.getAsJsonObject("resources").getAsJsonObject("unified"))
                    .isEqualTo(json("{\"memory.high\": \"1G\"}"));

            // a point the hook did not ask for: an empty answer
            assertThat(KoordinatorHookPeer.call(socket, "PostStopContainerHook", new JsonObject()))
                    .isEqualTo(json("{\"response\": {}}"));
            // a hook error at a pre point: INTERNAL naming the hook and its error
            JsonObject error =
                    KoordinatorHookPeer.call(
                                    socket,
                                    "PreStartContainerHook",
                                    json("{\"container_meta\": {\"id\": \"c42\"}}"))
                            .getAsJsonObject("error");
            assertThat(error.get("name").getAsString()).isEqualTo("INTERNAL");
            assertThat(error.get("details").getAsString())
                    .contains("hook \"java-hook\" failed")
                    .contains("refusing c42");
        }
    }

    @Test
    void theExamplePluginsHookServedToAGrpcJsClientGivesThePodsTeam() throws Exception {
        Path socket = dir.resolve("example.sock");
        try (HookServer server = HookServer.start(socket, List.of(new OwnerTeamHook()))) {
            JsonObject r =
                    KoordinatorHookPeer.call(
                                    socket,
                                    "PreCreateContainerHook",
                                    json(
                                            """
          {"pod_meta": {"name": "db", "namespace": "ns", "uid": "u2"},
           "pod_labels": {"team": "storage"},
           "container_meta": {"name": "app"},
           "container_envs": {"HOME": "/root"}}
          """))
                            .getAsJsonObject("response");
            assertThat(r).isNotNull();
            assertThat(r.getAsJsonObject("container_envs"))
                    .isEqualTo(
                            json(
                                    """
          {"CRI4J_TEAM": "storage"}"""));
            assertThat(r.getAsJsonObject("container_annotations"))
                    .isEqualTo(
                            json(
                                    """
          {"cri4j.io/owner-team": "storage"}"""));
        }
    }
}
