package io.cri4j.hook.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.HugepageLimit;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerConfig;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StartContainerResponse;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopContainerResponse;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.StopPodSandboxResponse;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesResponse;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookDispatcher;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.grpc.MethodDescriptor;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every field of Koordinator's messages, both ways, at each of its hook points: the table in
 * proxy-core/README.md ("Koordinator's messages, field by field"). A hook request field that the
 * interceptor leaves unset although the CRI call carries it fails {@link #assertAllSet}, so a
 * field upstream adds and we forget to map is caught here.
 */
class KoordinatorFieldMappingTest {

  static final Set<HookPoint> KOORDINATOR = EnumSet.of(HookPoint.PRE_RUN_POD_SANDBOX,
      HookPoint.POST_STOP_POD_SANDBOX, HookPoint.PRE_CREATE_CONTAINER,
      HookPoint.PRE_START_CONTAINER, HookPoint.POST_START_CONTAINER,
      HookPoint.PRE_UPDATE_CONTAINER_RESOURCES, HookPoint.POST_STOP_CONTAINER);

  final Map<HookPoint, Message> seen = new ConcurrentHashMap<>();
  volatile PodSandboxHookResponse podAnswer = PodSandboxHookResponse.getDefaultInstance();
  volatile ContainerResourceHookResponse ctrAnswer =
      ContainerResourceHookResponse.getDefaultInstance();
  HookDispatcher dispatcher;
  CriHookInterceptor hooks;

  final class Recorder implements RuntimeHook {
    @Override public String name() { return "recorder"; }

    @Override public Set<HookPoint> points() { return KOORDINATOR; }

    @Override public FailurePolicy failurePolicy() { return FailurePolicy.FAIL; }

    @Override public boolean callInline() { return true; }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint p, PodSandboxHookRequest r) {
      seen.put(p, r);
      return podAnswer;
    }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r) {
      seen.put(p, r);
      return ContainerHookResult.of(ctrAnswer);
    }
  }

  @BeforeEach
  void setUp() {
    dispatcher = HookDispatcher.builder().hooks(List.of(new Recorder())).build();
    hooks = new CriHookInterceptor(dispatcher, new CheckpointStore());
  }

  @org.junit.jupiter.api.AfterEach
  void tearDown() {
    dispatcher.close();
  }

  static LinuxContainerResources criResources(int n) {
    return LinuxContainerResources.newBuilder().setCpuPeriod(100000 + n).setCpuQuota(50000 + n)
        .setCpuShares(512 + n).setMemoryLimitInBytes((1L << 30) + n).setOomScoreAdj(-500 + n)
        .setCpusetCpus("0-" + n).setCpusetMems("0").addHugepageLimits(HugepageLimit.newBuilder()
            .setPageSize("2MB").setLimit(4 << 20)).putUnified("memory.high", n + "M")
        .setMemorySwapLimitInBytes((2L << 30) + n).build();
  }

  static io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources koord(
      LinuxContainerResources r) {
    return CriHookInterceptor.koordResources(r);
  }

  static KeyValue kv(String k, String v) {
    return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
  }

  /** Every field of {@code m} is set, recursively into messages, except those named. */
  static void assertAllSet(Message m, String... except) {
    Set<String> skip = Set.of(except);
    for (FieldDescriptor f : m.getDescriptorForType().getFields()) {
      if (skip.contains(f.getName())) {
        continue;
      }
      String name = m.getDescriptorForType().getName() + "." + f.getName();
      if (f.isRepeated()) {
        assertThat(m.getRepeatedFieldCount(f)).as(name).isPositive();
      } else {
        assertThat(m.hasField(f)).as(name).isTrue();
        if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
          assertAllSet((Message) m.getField(f));
        }
      }
    }
  }

  private Object call(MethodDescriptor<?, ?> method, Object request, Object response)
      throws Exception {
    CriHookInterceptor.Phase phase = hooks.begin(method, request);
    phase.complete(response);
    return phase.request();
  }

  final PodSandboxConfig pod = PodSandboxConfig.newBuilder()
      .setMetadata(PodSandboxMetadata.newBuilder().setName("web").setUid("uid-1")
          .setNamespace("ns").setAttempt(2))
      .putLabels("app", "web").putAnnotations("a", "1")
      .setLinux(LinuxPodSandboxConfig.newBuilder().setCgroupParent("/kubepods/pod-uid-1")
          .setOverhead(criResources(1)).setResources(criResources(2)))
      .build();

  @Test
  void everyRequestFieldAtEveryKoordinatorPoint() throws Exception {
    call(RuntimeServiceGrpc.getRunPodSandboxMethod(), RunPodSandboxRequest.newBuilder()
        .setConfig(pod).setRuntimeHandler("runc").build(),
        RunPodSandboxResponse.newBuilder().setPodSandboxId("p1").build());
    PodSandboxHookRequest run = (PodSandboxHookRequest) seen.get(HookPoint.PRE_RUN_POD_SANDBOX);
    assertAllSet(run);
    assertThat(run.getPodMeta().getUid()).isEqualTo("uid-1");
    assertThat(run.getPodMeta().getAttempt()).isEqualTo(2);
    assertThat(run.getRuntimeHandler()).isEqualTo("runc");
    assertThat(run.getCgroupParent()).isEqualTo("/kubepods/pod-uid-1");
    assertThat(run.getOverhead()).isEqualTo(koord(criResources(1)));
    assertThat(run.getResources()).isEqualTo(koord(criResources(2)));

    ContainerConfig cfg = ContainerConfig.newBuilder()
        .setMetadata(ContainerMetadata.newBuilder().setName("app").setAttempt(3))
        .putAnnotations("c", "1").addEnvs(kv("A", "1")).addEnvs(kv("A", "2"))
        .setLinux(LinuxContainerConfig.newBuilder().setResources(criResources(3))).build();
    call(RuntimeServiceGrpc.getCreateContainerMethod(), CreateContainerRequest.newBuilder()
        .setPodSandboxId("p1").setSandboxConfig(pod).setConfig(cfg).build(),
        CreateContainerResponse.newBuilder().setContainerId("c1").build());
    ContainerResourceHookRequest create =
        (ContainerResourceHookRequest) seen.get(HookPoint.PRE_CREATE_CONTAINER);
    // the runtime has not named the container yet
    assertAllSet(create, "container_meta");
    assertThat(create.getContainerMeta().getName()).isEqualTo("app");
    assertThat(create.getContainerMeta().getAttempt()).isEqualTo(3);
    assertThat(create.getContainerMeta().getId()).isEmpty();
    assertThat(create.getPodMeta()).isEqualTo(run.getPodMeta());
    assertThat(create.getContainerResources()).isEqualTo(koord(criResources(3)));
    assertThat(create.getPodResources()).isEqualTo(koord(criResources(2)));
    assertThat(create.getPodLabelsMap()).isEqualTo(Map.of("app", "web"));
    assertThat(create.getPodAnnotationsMap()).isEqualTo(Map.of("a", "1"));
    assertThat(create.getPodCgroupParent()).isEqualTo("/kubepods/pod-uid-1");
    assertThat(create.getContainerEnvsMap()).isEqualTo(Map.of("A", "2"));

    // id-only requests: described from the checkpoint store, the id from the request
    call(RuntimeServiceGrpc.getStartContainerMethod(),
        StartContainerRequest.newBuilder().setContainerId("c1").build(),
        StartContainerResponse.getDefaultInstance());
    for (HookPoint p : List.of(HookPoint.PRE_START_CONTAINER, HookPoint.POST_START_CONTAINER)) {
      ContainerResourceHookRequest r = (ContainerResourceHookRequest) seen.get(p);
      assertAllSet(r);
      assertThat(r.getContainerMeta().getId()).as(p.name()).isEqualTo("c1");
      assertThat(r).as(p.name()).isEqualTo(create.toBuilder()
          .setContainerMeta(create.getContainerMeta().toBuilder().setId("c1")).build());
    }

    call(RuntimeServiceGrpc.getUpdateContainerResourcesMethod(),
        UpdateContainerResourcesRequest.newBuilder().setContainerId("c1")
            .setLinux(LinuxContainerResources.newBuilder().setCpuQuota(-1)
                .setCpusetCpus("5"))
            .putAnnotations("u", "1").build(),
        UpdateContainerResourcesResponse.getDefaultInstance());
    ContainerResourceHookRequest upd =
        (ContainerResourceHookRequest) seen.get(HookPoint.PRE_UPDATE_CONTAINER_RESOURCES);
    assertAllSet(upd);
    // the recorded resources with the request's set fields applied
    assertThat(upd.getContainerResources()).isEqualTo(koord(criResources(3).toBuilder()
        .setCpuQuota(-1).setCpusetCpus("5").build()));
    assertThat(upd.getContainerAnnotationsMap()).containsEntry("c", "1").containsEntry("u", "1");

    call(RuntimeServiceGrpc.getStopContainerMethod(),
        StopContainerRequest.newBuilder().setContainerId("c1").build(),
        StopContainerResponse.getDefaultInstance());
    ContainerResourceHookRequest stop =
        (ContainerResourceHookRequest) seen.get(HookPoint.POST_STOP_CONTAINER);
    assertAllSet(stop);
    assertThat(stop.getContainerResources().getCpusetCpus()).isEqualTo("5");

    call(RuntimeServiceGrpc.getStopPodSandboxMethod(),
        StopPodSandboxRequest.newBuilder().setPodSandboxId("p1").build(),
        StopPodSandboxResponse.getDefaultInstance());
    PodSandboxHookRequest stopped =
        (PodSandboxHookRequest) seen.get(HookPoint.POST_STOP_POD_SANDBOX);
    assertThat(stopped).isEqualTo(run);
  }

  @Test
  void everyResponseFieldChangesItsCriField() throws Exception {
    io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources set =
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.newBuilder()
            .setCpuPeriod(200000).setCpuQuota(-1).setCpuShares(2).setMemoryLimitInBytes(7 << 20)
            .setOomScoreAdj(999).setCpusetCpus("7").setCpusetMems("1")
            .addHugepageLimits(io.cri4j.hook.koordinator.v1alpha1.HugepageLimit.newBuilder()
                .setPageSize("1GB").setLimit(1L << 30))
            .addHugepageLimits(io.cri4j.hook.koordinator.v1alpha1.HugepageLimit.newBuilder()
                .setPageSize("2MB").setLimit(8 << 20))
            .putUnified("io.weight", "default 100").setMemorySwapLimitInBytes(9 << 20).build();
    assertAllSet(set);
    LinuxContainerResources expected = criResources(2).toBuilder().setCpuPeriod(200000)
        .setCpuQuota(-1).setCpuShares(2).setMemoryLimitInBytes(7 << 20).setOomScoreAdj(999)
        .setCpusetCpus("7").setCpusetMems("1").clearHugepageLimits()
        .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("2MB").setLimit(8 << 20))
        .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("1GB").setLimit(1L << 30))
        .putUnified("io.weight", "default 100").setMemorySwapLimitInBytes(9 << 20).build();

    podAnswer = PodSandboxHookResponse.newBuilder().putLabels("app", "changed")
        .putLabels("new", "l").putAnnotations("b", "2").setCgroupParent("/koord/pod")
        .setResources(set).build();
    assertAllSet(podAnswer);
    RunPodSandboxRequest run = (RunPodSandboxRequest) call(
        RuntimeServiceGrpc.getRunPodSandboxMethod(),
        RunPodSandboxRequest.newBuilder().setConfig(pod).build(),
        RunPodSandboxResponse.newBuilder().setPodSandboxId("p1").build());
    assertThat(run.getConfig().getLabelsMap()).isEqualTo(Map.of("app", "changed", "new", "l"));
    assertThat(run.getConfig().getAnnotationsMap()).isEqualTo(Map.of("a", "1", "b", "2"));
    assertThat(run.getConfig().getLinux().getCgroupParent()).isEqualTo("/koord/pod");
    assertThat(run.getConfig().getLinux().getResources()).isEqualTo(expected);
    // the overhead is the runtime's to account; no response field changes it
    assertThat(run.getConfig().getLinux().getOverhead()).isEqualTo(criResources(1));

    ctrAnswer = ContainerResourceHookResponse.newBuilder().putContainerAnnotations("c", "new")
        .setContainerResources(set).setPodCgroupParent("/koord/pod2")
        .putContainerEnvs("ENV", "x").build();
    assertAllSet(ctrAnswer);
    ContainerConfig cfg = ContainerConfig.newBuilder()
        .setMetadata(ContainerMetadata.newBuilder().setName("app")).putAnnotations("c", "1")
        .addEnvs(kv("ENV", "old")).addEnvs(kv("KEEP", "k"))
        .setLinux(LinuxContainerConfig.newBuilder().setResources(criResources(2))).build();
    CreateContainerRequest create = (CreateContainerRequest) call(
        RuntimeServiceGrpc.getCreateContainerMethod(), CreateContainerRequest.newBuilder()
            .setPodSandboxId("p1").setSandboxConfig(run.getConfig()).setConfig(cfg).build(),
        CreateContainerResponse.newBuilder().setContainerId("c1").build());
    assertThat(create.getConfig().getAnnotationsMap()).isEqualTo(Map.of("c", "new"));
    assertThat(create.getConfig().getLinux().getResources()).isEqualTo(expected);
    assertThat(create.getSandboxConfig().getLinux().getCgroupParent()).isEqualTo("/koord/pod2");
    assertThat(create.getConfig().getEnvsList()).containsExactly(kv("ENV", "x"), kv("KEEP", "k"));
    assertThat(((ContainerResourceHookRequest) seen.get(HookPoint.PRE_CREATE_CONTAINER))
        .getPodCgroupParent()).isEqualTo("/koord/pod");

    UpdateContainerResourcesRequest update = (UpdateContainerResourcesRequest) call(
        RuntimeServiceGrpc.getUpdateContainerResourcesMethod(),
        UpdateContainerResourcesRequest.newBuilder().setContainerId("c1")
            .setLinux(criResources(2)).build(),
        UpdateContainerResourcesResponse.getDefaultInstance());
    assertThat(update.getLinux()).isEqualTo(expected);
    assertThat(update.getAnnotationsMap()).isEqualTo(Map.of("c", "new"));

    // a response that sets nothing (zero numbers, empty strings, no entries) changes nothing
    podAnswer = PodSandboxHookResponse.newBuilder().setResources(
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.getDefaultInstance()).build();
    RunPodSandboxRequest untouched = RunPodSandboxRequest.newBuilder().setConfig(pod).build();
    assertThat(call(RuntimeServiceGrpc.getRunPodSandboxMethod(), untouched,
        RunPodSandboxResponse.newBuilder().setPodSandboxId("p2").build())).isEqualTo(untouched);
  }
}
