package io.cri4j.hook.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConflict;
import io.cri4j.hook.HookDispatcher;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The container environment between CRI and Koordinator's {@code container_envs}: the hook sees
 * the container's environment (last value of a repeated key), and what hooks set is merged into
 * the CRI request (existing keys keep their position, new ones are appended in a stable order).
 */
class KoordinatorEnvMappingTest {

  static KeyValue kv(String k, String v) {
    return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
  }

  static List<String> pairs(List<KeyValue> envs) {
    return envs.stream().map(e -> e.getKey() + "=" + e.getValue().toStringUtf8()).toList();
  }

  /** A hook that records its requests and answers what {@code answer} makes of them. */
  record EnvHook(String name, int index, FailurePolicy failurePolicy,
      List<ContainerResourceHookRequest> seen,
      Function<ContainerResourceHookRequest, ContainerHookResult> answer) implements RuntimeHook {
    @Override public Set<HookPoint> points() {
      return Set.of(HookPoint.PRE_CREATE_CONTAINER, HookPoint.PRE_START_CONTAINER);
    }

    @Override public boolean callInline() { return true; }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r) {
      seen.add(r);
      return answer.apply(r);
    }
  }

  @Test
  void koordEnvsKeepsTheLastValueOfARepeatedKeyAtItsFirstPosition() {
    Map<String, String> m = CriHookInterceptor.koordEnvs(List.of(kv("A", "1"), kv("B", "2"),
        kv("A", "3")));
    assertThat(m).containsExactly(Map.entry("A", "3"), Map.entry("B", "2"));
    assertThat(CriHookInterceptor.koordEnvs(List.of())).isEmpty();
  }

  @Test
  void mergeEnvsUpdatesInPlaceAppendsNewKeysInOrderAndRemovesNothing() {
    List<KeyValue> out = CriHookInterceptor.mergeEnvs(
        List.of(kv("PATH", "/bin"), kv("A", "1"), kv("B", "2"), kv("A", "1b")),
        List.of(kv("Z", "26"), kv("A", "new"), kv("C", "3")));
    assertThat(pairs(out)).containsExactly("PATH=/bin", "A=new", "B=2", "A=new", "Z=26", "C=3");
    assertThat(CriHookInterceptor.mergeEnvs(List.of(kv("A", "1")), List.of()))
        .containsExactly(kv("A", "1"));
  }

  @Test
  void aResultsEnvironmentIsItsListThenTheWireMapSortedAndTheListWinsAKeyInBoth() {
    ContainerHookResult r = ContainerHookResult.of(ContainerResourceHookResponse.newBuilder()
            .putContainerEnvs("Z", "z").putContainerEnvs("B", "wire").putContainerEnvs("M", "m")
            .build())
        .withEnvs(List.of(kv("Y", "y"), kv("B", "list")));
    assertThat(pairs(r.environment())).containsExactly("Y=y", "B=list", "M=m", "Z=z");
    assertThat(ContainerHookResult.of(ContainerResourceHookResponse.getDefaultInstance())
        .environment()).isEmpty();
  }

  @Test
  void mergedResultCarriesTheEnvironmentInBothFormsAndReportsConflicts() throws Exception {
    List<HookConflict> conflicts = new CopyOnWriteArrayList<>();
    List<ContainerResourceHookRequest> seen = new CopyOnWriteArrayList<>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
            new EnvHook("wire", 0, FailurePolicy.IGNORE, seen, r -> ContainerHookResult.of(
                ContainerResourceHookResponse.newBuilder().putContainerEnvs("B", "1")
                    .putContainerEnvs("A", "1").build())),
            new EnvHook("list", 1, FailurePolicy.IGNORE, seen, r -> ContainerHookResult.of(
                ContainerResourceHookResponse.getDefaultInstance())
                .withEnvs(List.of(kv("C", "2"), kv("A", "2"))))))
        .onConflict(conflicts::add).build()) {
      ContainerHookResult merged = d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER,
          ContainerResourceHookRequest.getDefaultInstance());
      assertThat(pairs(merged.envs())).containsExactly("A=1", "B=1", "C=2");
      assertThat(merged.response().getContainerEnvsMap())
          .containsExactly(Map.entry("A", "1"), Map.entry("B", "1"), Map.entry("C", "2"));
      assertThat(pairs(merged.environment())).containsExactly("A=1", "B=1", "C=2");
      assertThat(conflicts).singleElement().satisfies(c -> {
        assertThat(c.field()).isEqualTo("env[A]");
        assertThat(c.keptHook()).isEqualTo("wire");
        assertThat(c.droppedHook()).isEqualTo("list");
      });
    }
  }

  @Test
  void createContainerSendsTheEnvironmentAndAppliesTheHooksEnvironment() throws Exception {
    List<ContainerResourceHookRequest> seen = new CopyOnWriteArrayList<>();
    CheckpointStore store = new CheckpointStore();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new EnvHook("koordlet-like", 0, FailurePolicy.FAIL, seen, r -> {
          // koordlet answers with the request's environment plus what it adds
          ContainerResourceHookResponse.Builder b = ContainerResourceHookResponse.newBuilder()
              .putAllContainerEnvs(r.getContainerEnvsMap());
          b.putContainerEnvs("SECOND", "changed").putContainerEnvs("NEW_B", "b")
              .putContainerEnvs("NEW_A", "a");
          return ContainerHookResult.of(b.build());
        }))).build()) {
      CriHookInterceptor hooks = new CriHookInterceptor(d, store);
      CreateContainerRequest req = CreateContainerRequest.newBuilder().setPodSandboxId("p1")
          .setSandboxConfig(PodSandboxConfig.newBuilder().setMetadata(
              PodSandboxMetadata.newBuilder().setName("web").setNamespace("ns").setUid("u")))
          .setConfig(ContainerConfig.newBuilder()
              .setMetadata(ContainerMetadata.newBuilder().setName("app"))
              .addEnvs(kv("FIRST", "1")).addEnvs(kv("SECOND", "2")).addEnvs(kv("FIRST", "1b")))
          .build();
      CriHookInterceptor.Phase phase = hooks.begin(RuntimeServiceGrpc.getCreateContainerMethod(),
          req);
      assertThat(seen).singleElement().satisfies(r -> assertThat(r.getContainerEnvsMap())
          .containsExactly(Map.entry("FIRST", "1b"), Map.entry("SECOND", "2")));
      CreateContainerRequest sent = (CreateContainerRequest) phase.request();
      assertThat(pairs(sent.getConfig().getEnvsList())).containsExactly("FIRST=1b",
          "SECOND=changed", "FIRST=1b", "NEW_A=a", "NEW_B=b");

      // the store keeps the environment as created: later points see it
      phase.complete(CreateContainerResponse.newBuilder().setContainerId("c1").build());
      hooks.begin(RuntimeServiceGrpc.getStartContainerMethod(),
          StartContainerRequest.newBuilder().setContainerId("c1").build());
      assertThat(seen).hasSize(2);
      assertThat(seen.get(1).getContainerMeta().getId()).isEqualTo("c1");
      assertThat(seen.get(1).getContainerEnvsMap()).containsEntry("SECOND", "changed")
          .containsEntry("NEW_A", "a").containsEntry("FIRST", "1b");
    }
  }

  @Test
  void aHookThatSetsNoEnvironmentLeavesTheRequestsAlone() throws Exception {
    List<ContainerResourceHookRequest> seen = new ArrayList<>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(new EnvHook("quiet", 0,
        FailurePolicy.FAIL, seen, r -> ContainerHookResult.of(
            ContainerResourceHookResponse.getDefaultInstance())))).build()) {
      CreateContainerRequest req = CreateContainerRequest.newBuilder().setPodSandboxId("p1")
          .setConfig(ContainerConfig.newBuilder().addEnvs(kv("A", "1")).addEnvs(kv("A", "2")))
          .build();
      Object sent = new CriHookInterceptor(d, new CheckpointStore())
          .begin(RuntimeServiceGrpc.getCreateContainerMethod(), req).request();
      assertThat(((CreateContainerRequest) sent).getConfig().getEnvsList())
          .isEqualTo(req.getConfig().getEnvsList());
    }
  }
}
