package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.HookServer;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our {@link HookServer} called the way Koordinator's Go proxy calls a hook server, by a client
 * that is not ours: grpc-js with a proto written from Koordinator's own api.proto
 * ({@link KoordinatorHookPeer#call}). What the Java hook sees is what grpc-js encoded, and what
 * grpc-js decodes from the answer is what the hook meant: environment both ways, annotations,
 * resources with negative and 64-bit numbers, pod labels and cgroup parent, and errors.
 */
class HookServerGrpcJsIT {
  @TempDir Path dir;

  final List<ContainerResourceHookRequest> seen = new CopyOnWriteArrayList<>();

  /** Answers from what it was sent, so that both directions are checked in one call. */
  final class EchoingHook implements RuntimeHook {
    @Override public String name() { return "java-hook"; }

    @Override public Set<HookPoint> points() {
      return Set.of(HookPoint.PRE_CREATE_CONTAINER, HookPoint.PRE_RUN_POD_SANDBOX,
          HookPoint.PRE_START_CONTAINER);
    }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r) {
      seen.add(r);
      if (p == HookPoint.PRE_START_CONTAINER) {
        throw new IllegalStateException("refusing " + r.getContainerMeta().getId());
      }
      return ContainerHookResult.of(ContainerResourceHookResponse.newBuilder()
              .putContainerAnnotations("seen-home", r.getContainerEnvsOrDefault("HOME", "?"))
              .putContainerEnvs("FROM_WIRE_MAP", "m")
              .setContainerResources(LinuxContainerResources.newBuilder().setCpuQuota(-1)
                  .setMemoryLimitInBytes(5L << 32).setCpusetCpus("2-3"))
              .setPodCgroupParent("/kubepods/koord")
              .build())
          .withEnvs(List.of(KeyValue.newBuilder().setKey("FROM_LIST")
              .setValue(ByteString.copyFromUtf8(r.getContainerMeta().getName())).build()));
    }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint p, PodSandboxHookRequest r) {
      return PodSandboxHookResponse.newBuilder()
          .putLabels("ns", r.getPodMeta().getNamespace())
          .putAnnotations("overhead-shares", "" + r.getOverhead().getCpuShares())
          .setCgroupParent(r.getCgroupParent() + "/koord")
          .setResources(LinuxContainerResources.newBuilder().setCpuShares(r.getResources()
              .getCpuShares() * 2).putUnified("memory.high", "1G")).build();
    }
  }

  static JsonObject json(String s) {
    return JsonParser.parseString(s).getAsJsonObject();
  }

  @Test
  void aGrpcJsClientGetsTheJavaHooksAnswersOverKoordinatorsProtocol() throws Exception {
    Path socket = dir.resolve("hook.sock");
    try (HookServer server = HookServer.start(socket, List.of(new EchoingHook()))) {
      JsonObject create = KoordinatorHookPeer.call(socket, "PreCreateContainerHook", json("""
          {"pod_meta": {"name": "web", "namespace": "ns", "uid": "u1"},
           "container_meta": {"name": "app", "attempt": 1},
           "container_envs": {"HOME": "/root", "PATH": "/bin"},
           "container_resources": {"cpu_shares": "1024", "oom_score_adj": "-998"}}
          """));
      JsonObject r = create.getAsJsonObject("response");
      assertThat(r).as(create.toString()).isNotNull();
      assertThat(seen).singleElement().satisfies(req -> {
        assertThat(req.getContainerEnvsMap()).containsEntry("HOME", "/root")
            .containsEntry("PATH", "/bin").hasSize(2);
        assertThat(req.getContainerMeta().getName()).isEqualTo("app");
        assertThat(req.getContainerResources().getOomScoreAdj()).isEqualTo(-998);
      });
      assertThat(r.getAsJsonObject("container_envs")).isEqualTo(json("""
          {"FROM_LIST": "app", "FROM_WIRE_MAP": "m"}"""));
      assertThat(r.getAsJsonObject("container_annotations")).isEqualTo(json("""
          {"seen-home": "/root"}"""));
      JsonObject res = r.getAsJsonObject("container_resources");
      assertThat(res.get("cpu_quota").getAsString()).isEqualTo("-1");
      assertThat(res.get("memory_limit_in_bytes").getAsString()).isEqualTo("" + (5L << 32));
      assertThat(res.get("cpuset_cpus").getAsString()).isEqualTo("2-3");
      assertThat(r.get("pod_cgroup_parent").getAsString()).isEqualTo("/kubepods/koord");

      JsonObject pod = KoordinatorHookPeer.call(socket, "PreRunPodSandboxHook", json("""
          {"pod_meta": {"name": "web", "namespace": "prod"}, "cgroup_parent": "/kubepods",
           "overhead": {"cpu_shares": "10"}, "resources": {"cpu_shares": "300"}}
          """)).getAsJsonObject("response");
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
      JsonObject error = KoordinatorHookPeer.call(socket, "PreStartContainerHook",
          json("{\"container_meta\": {\"id\": \"c42\"}}")).getAsJsonObject("error");
      assertThat(error.get("name").getAsString()).isEqualTo("INTERNAL");
      assertThat(error.get("details").getAsString()).contains("hook java-hook failed")
          .contains("refusing c42");
    }
  }
}
