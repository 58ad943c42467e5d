package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.HugepageLimit;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerConfig;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.koordinator.HookConfig;
import io.cri4j.hook.koordinator.HookPoint;
import io.cri4j.hook.koordinator.RemoteRuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Every field of Koordinator's messages, both ways, at each of its hook points, through the
 * proxy: the table in proxy-core/README.md ("Koordinator's messages, field by field"). The hook
 * server is a {@code RuntimeHookService} on a unix socket recording what it gets; the proxy calls
 * it through {@link RemoteRuntimeHook} (Koordinator's protocol as an adapter of the NRI model).
 * A request field left unset although the CRI call carries it fails {@link #assertAllSet}, so a
 * field upstream adds and we forget to map is caught here.
 */
class KoordinatorFieldMappingIT extends ProxyTestBase {

    final Map<String, Message> seen = new ConcurrentHashMap<>();
    volatile PodSandboxHookResponse podAnswer = PodSandboxHookResponse.getDefaultInstance();
    volatile ContainerResourceHookResponse ctrAnswer =
            ContainerResourceHookResponse.getDefaultInstance();
    CriServer hookServer;
    RemoteRuntimeHook hook;

    /** Records every request; answers the current answers. */
    final class Recorder extends RuntimeHookServiceGrpc.RuntimeHookServiceImplBase {
        private void pod(
                String m, PodSandboxHookRequest r, StreamObserver<PodSandboxHookResponse> o) {
            seen.put(m, r);
            o.onNext(
                    m.equals("PreRunPodSandbox")
                            ? podAnswer
                            : PodSandboxHookResponse.getDefaultInstance());
            o.onCompleted();
        }

        private void ctr(
                String m,
                ContainerResourceHookRequest r,
                StreamObserver<ContainerResourceHookResponse> o) {
            seen.put(m, r);
            o.onNext(
                    m.startsWith("Pre") && !m.equals("PreStartContainer")
                            ? ctrAnswer
                            : ContainerResourceHookResponse.getDefaultInstance());
            o.onCompleted();
        }

        @Override
        public void preRunPodSandboxHook(
                PodSandboxHookRequest r, StreamObserver<PodSandboxHookResponse> o) {
            pod("PreRunPodSandbox", r, o);
        }

        @Override
        public void postStopPodSandboxHook(
                PodSandboxHookRequest r, StreamObserver<PodSandboxHookResponse> o) {
            pod("PostStopPodSandbox", r, o);
        }

        @Override
        public void preCreateContainerHook(
                ContainerResourceHookRequest r, StreamObserver<ContainerResourceHookResponse> o) {
            ctr("PreCreateContainer", r, o);
        }

        @Override
        public void preStartContainerHook(
                ContainerResourceHookRequest r, StreamObserver<ContainerResourceHookResponse> o) {
            ctr("PreStartContainer", r, o);
        }

        @Override
        public void postStartContainerHook(
                ContainerResourceHookRequest r, StreamObserver<ContainerResourceHookResponse> o) {
            ctr("PostStartContainer", r, o);
        }

        @Override
        public void preUpdateContainerResourcesHook(
                ContainerResourceHookRequest r, StreamObserver<ContainerResourceHookResponse> o) {
            ctr("PreUpdateContainerResources", r, o);
        }

        @Override
        public void postStopContainerHook(
                ContainerResourceHookRequest r, StreamObserver<ContainerResourceHookResponse> o) {
            ctr("PostStopContainer", r, o);
        }
    }

    RuntimeServiceGrpc.RuntimeServiceBlockingStub start(String policy) throws Exception {
        hookServer =
                CriServer.builder(CriEndpoint.unix(dir.resolve("koord.sock")))
                        .addService(new Recorder())
                        .build()
                        .start();
        hook =
                new RemoteRuntimeHook(
                        HookConfig.parse(
                                "recorder",
                                "{\"remote-endpoint\": \""
                                        + dir.resolve("koord.sock")
                                        + "\", \"failure-policy\": \""
                                        + policy
                                        + "\", \"runtime-hooks\": [\"PreRunPodSandbox\", \"PostStopPodSandbox\","
                                        + " \"PreCreateContainer\", \"PreStartContainer\", \"PostStartContainer\","
                                        + " \"PreUpdateContainerResources\", \"PostStopContainer\"]}"));
        assertThat(hook.config().points()).hasSize(7).allMatch(HookPoint::isKoordinator);
        return startProxy(CriProxy.builder().addHook(hook));
    }

    @AfterEach
    void stopHookServer() {
        if (hook != null) {
            hook.close();
        }
        if (hookServer != null) {
            hookServer.close();
        }
    }

    static LinuxContainerResources criResources(int n) {
        return LinuxContainerResources.newBuilder()
                .setCpuPeriod(100000 + n)
                .setCpuQuota(50000 + n)
                .setCpuShares(512 + n)
                .setMemoryLimitInBytes((1L << 30) + n)
                .setOomScoreAdj(-500 + n)
                .setCpusetCpus("0-" + n)
                .setCpusetMems("0")
                .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("2MB").setLimit(4 << 20))
                .putUnified("memory.high", n + "M")
                .setMemorySwapLimitInBytes((2L << 30) + n)
                .build();
    }

    /** Koordinator's resources for CRI's, with or without {@code oom_score_adj}. */
    static io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources koord(
            LinuxContainerResources r, boolean oom) {
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.Builder b =
                io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.newBuilder()
                        .setCpuPeriod(r.getCpuPeriod())
                        .setCpuQuota(r.getCpuQuota())
                        .setCpuShares(r.getCpuShares())
                        .setMemoryLimitInBytes(r.getMemoryLimitInBytes())
                        .setCpusetCpus(r.getCpusetCpus())
                        .setCpusetMems(r.getCpusetMems())
                        .putAllUnified(r.getUnifiedMap())
                        .setMemorySwapLimitInBytes(r.getMemorySwapLimitInBytes());
        if (oom) {
            b.setOomScoreAdj(r.getOomScoreAdj());
        }
        r.getHugepageLimitsList()
                .forEach(
                        h ->
                                b.addHugepageLimitsBuilder()
                                        .setPageSize(h.getPageSize())
                                        .setLimit(h.getLimit()));
        return b.build();
    }

    static KeyValue kv(String k, String v) {
        return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
    }

    /**
     * Every field of {@code m} is set, recursively into messages, except those named by their
     * path from {@code m} (e.g. {@code pod_meta.attempt}).
     */
    static void assertAllSet(Message m, String... except) {
        assertAllSet(m, "", Set.of(except));
    }

    private static void assertAllSet(Message m, String prefix, Set<String> skip) {
        for (FieldDescriptor f : m.getDescriptorForType().getFields()) {
            String path = prefix + f.getName();
            if (skip.contains(path)) {
                continue;
            }
            String name = m.getDescriptorForType().getName() + "." + path;
            if (f.isRepeated()) {
                assertThat(m.getRepeatedFieldCount(f)).as(name).isPositive();
            } else {
                assertThat(m.hasField(f)).as(name).isTrue();
                if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                    assertAllSet((Message) m.getField(f), path + ".", skip);
                }
            }
        }
    }

    final PodSandboxConfig pod =
            PodSandboxConfig.newBuilder()
                    .setMetadata(
                            PodSandboxMetadata.newBuilder()
                                    .setName("web")
                                    .setUid("uid-1")
                                    .setNamespace("ns")
                                    .setAttempt(2))
                    .putLabels("app", "web")
                    .putAnnotations("a", "1")
                    .setLinux(
                            LinuxPodSandboxConfig.newBuilder()
                                    .setCgroupParent("/kubepods/pod-uid-1")
                                    .setOverhead(criResources(1))
                                    .setResources(criResources(2)))
                    .build();

    @Test
    void everyRequestFieldAtEveryKoordinatorPoint() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = start("Fail");
        String podId =
                rt.runPodSandbox(
                                RunPodSandboxRequest.newBuilder()
                                        .setConfig(pod)
                                        .setRuntimeHandler("runc")
                                        .build())
                        .getPodSandboxId();
        PodSandboxHookRequest run = (PodSandboxHookRequest) seen.get("PreRunPodSandbox");
        // NRI's model has no attempt, and no oom_score_adj in a pod's resources
        assertAllSet(run, "pod_meta.attempt", "overhead.oom_score_adj", "resources.oom_score_adj");
        assertThat(run.getPodMeta().getUid()).isEqualTo("uid-1");
        assertThat(run.getRuntimeHandler()).isEqualTo("runc");
        assertThat(run.getCgroupParent()).isEqualTo("/kubepods/pod-uid-1");
        assertThat(run.getOverhead()).isEqualTo(koord(criResources(1), false));
        assertThat(run.getResources()).isEqualTo(koord(criResources(2), false));

        ContainerConfig cfg =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app").setAttempt(3))
                        .putAnnotations("c", "1")
                        .addEnvs(kv("A", "1"))
                        .addEnvs(kv("A", "2"))
                        .setLinux(LinuxContainerConfig.newBuilder().setResources(criResources(3)))
                        .build();
        String ctrId =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(cfg)
                                        .build())
                        .getContainerId();
        ContainerResourceHookRequest create =
                (ContainerResourceHookRequest) seen.get("PreCreateContainer");
        // the runtime has not named the container yet
        assertAllSet(
                create,
                "pod_meta.attempt",
                "container_meta.attempt",
                "container_meta.id",
                "pod_resources.oom_score_adj");
        assertThat(create.getContainerMeta().getName()).isEqualTo("app");
        assertThat(create.getContainerMeta().getId()).isEmpty();
        assertThat(create.getPodMeta()).isEqualTo(run.getPodMeta());
        assertThat(create.getContainerResources()).isEqualTo(koord(criResources(3), true));
        assertThat(create.getPodResources()).isEqualTo(koord(criResources(2), false));
        assertThat(create.getPodLabelsMap()).isEqualTo(Map.of("app", "web"));
        assertThat(create.getPodAnnotationsMap()).isEqualTo(Map.of("a", "1"));
        assertThat(create.getPodCgroupParent()).isEqualTo("/kubepods/pod-uid-1");
        assertThat(create.getContainerEnvsMap()).isEqualTo(Map.of("A", "2"));

        // id-only requests: described from the checkpoint store, the id from the runtime
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(ctrId).build());
        for (String p : List.of("PreStartContainer", "PostStartContainer")) {
            ContainerResourceHookRequest r = (ContainerResourceHookRequest) seen.get(p);
            assertAllSet(
                    r, "pod_meta.attempt", "container_meta.attempt", "pod_resources.oom_score_adj");
            assertThat(r)
                    .as(p)
                    .isEqualTo(
                            create.toBuilder()
                                    .setContainerMeta(
                                            create.getContainerMeta().toBuilder().setId(ctrId))
                                    .build());
        }

        rt.updateContainerResources(
                UpdateContainerResourcesRequest.newBuilder()
                        .setContainerId(ctrId)
                        .setLinux(
                                LinuxContainerResources.newBuilder()
                                        .setCpuQuota(-1)
                                        .setCpusetCpus("5"))
                        .putAnnotations("u", "1")
                        .build());
        ContainerResourceHookRequest upd =
                (ContainerResourceHookRequest) seen.get("PreUpdateContainerResources");
        assertAllSet(
                upd, "pod_meta.attempt", "container_meta.attempt", "pod_resources.oom_score_adj");
        // the recorded resources with the request's set fields applied
        assertThat(upd.getContainerResources())
                .isEqualTo(
                        koord(
                                criResources(3).toBuilder()
                                        .setCpuQuota(-1)
                                        .setCpusetCpus("5")
                                        .build(),
                                true));
        assertThat(upd.getContainerAnnotationsMap()).isEqualTo(Map.of("c", "1"));

        rt.stopContainer(StopContainerRequest.newBuilder().setContainerId(ctrId).build());
        ContainerResourceHookRequest stop =
                (ContainerResourceHookRequest) seen.get("PostStopContainer");
        assertAllSet(
                stop, "pod_meta.attempt", "container_meta.attempt", "pod_resources.oom_score_adj");
        assertThat(stop.getContainerResources().getCpusetCpus()).isEqualTo("5");

        rt.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(podId).build());
        PodSandboxHookRequest stopped = (PodSandboxHookRequest) seen.get("PostStopPodSandbox");
        assertThat(stopped).isEqualTo(run);
    }

    @Test
    void everyResponseFieldChangesItsCriField() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = start("Fail");
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources set =
                io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.newBuilder()
                        .setCpuPeriod(200000)
                        .setCpuQuota(-1)
                        .setCpuShares(2)
                        .setMemoryLimitInBytes(7 << 20)
                        .setOomScoreAdj(999)
                        .setCpusetCpus("7")
                        .setCpusetMems("1")
                        .addHugepageLimits(
                                io.cri4j.hook.koordinator.v1alpha1.HugepageLimit.newBuilder()
                                        .setPageSize("1GB")
                                        .setLimit(1L << 30))
                        .addHugepageLimits(
                                io.cri4j.hook.koordinator.v1alpha1.HugepageLimit.newBuilder()
                                        .setPageSize("2MB")
                                        .setLimit(8 << 20))
                        .putUnified("io.weight", "default 100")
                        .setMemorySwapLimitInBytes(9 << 20)
                        .build();
        assertAllSet(set);
        LinuxContainerResources expected =
                criResources(2).toBuilder()
                        .setCpuPeriod(200000)
                        .setCpuQuota(-1)
                        .setCpuShares(2)
                        .setMemoryLimitInBytes(7 << 20)
                        .setOomScoreAdj(999)
                        .setCpusetCpus("7")
                        .setCpusetMems("1")
                        .clearHugepageLimits()
                        .addHugepageLimits(
                                HugepageLimit.newBuilder().setPageSize("2MB").setLimit(8 << 20))
                        .addHugepageLimits(
                                HugepageLimit.newBuilder().setPageSize("1GB").setLimit(1L << 30))
                        .putUnified("io.weight", "default 100")
                        .setMemorySwapLimitInBytes(9 << 20)
                        .build();

        // a pod's resources have no oom_score_adj in NRI's model: answered without one
        podAnswer =
                PodSandboxHookResponse.newBuilder()
                        .putLabels("app", "changed")
                        .putLabels("new", "l")
                        .putAnnotations("b", "2")
                        .setCgroupParent("/koord/pod")
                        .setResources(set.toBuilder().setOomScoreAdj(0))
                        .build();
        assertAllSet(podAnswer, "resources.oom_score_adj");
        String podId =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        RunPodSandboxRequest run = backend.received(RunPodSandboxRequest.class).get(0);
        assertThat(run.getConfig().getLabelsMap()).isEqualTo(Map.of("app", "changed", "new", "l"));
        assertThat(run.getConfig().getAnnotationsMap()).isEqualTo(Map.of("a", "1", "b", "2"));
        assertThat(run.getConfig().getLinux().getCgroupParent()).isEqualTo("/koord/pod");
        assertThat(run.getConfig().getLinux().getResources())
                .isEqualTo(
                        expected.toBuilder()
                                .setOomScoreAdj(criResources(2).getOomScoreAdj())
                                .build());
        // the overhead is the runtime's to account; no answer field changes it
        assertThat(run.getConfig().getLinux().getOverhead()).isEqualTo(criResources(1));

        ctrAnswer =
                ContainerResourceHookResponse.newBuilder()
                        .putContainerAnnotations("c", "new")
                        .setContainerResources(set)
                        .putContainerEnvs("ENV", "x")
                        .build();
        assertAllSet(ctrAnswer, "pod_cgroup_parent");
        ContainerConfig cfg =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                        .putAnnotations("c", "1")
                        .addEnvs(kv("ENV", "old"))
                        .addEnvs(kv("KEEP", "k"))
                        .setLinux(LinuxContainerConfig.newBuilder().setResources(criResources(2)))
                        .build();
        String ctrId =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(podId)
                                        .setSandboxConfig(pod)
                                        .setConfig(cfg)
                                        .build())
                        .getContainerId();
        CreateContainerRequest create = backend.received(CreateContainerRequest.class).get(0);
        // the hook's annotation, and the proxy's id for the container (kept with it in the runtime)
        assertThat(create.getConfig().getAnnotationsMap())
                .isEqualTo(Map.of("c", "new", "io.cri4j.proxy/container-id", ctrId));
        assertThat(create.getConfig().getLinux().getResources()).isEqualTo(expected);
        assertThat(create.getConfig().getEnvsList())
                .containsExactly(kv("ENV", "x"), kv("KEEP", "k"));
        // the pod as its hook made it at PreRunPodSandbox: what the runtime takes the cgroup from
        assertThat(create.getSandboxConfig()).isEqualTo(run.getConfig());
        assertThat(
                        ((ContainerResourceHookRequest) seen.get("PreCreateContainer"))
                                .getPodCgroupParent())
                .isEqualTo("/koord/pod");

        // the request's own resources, changed by the answer (annotations as created: echoed)
        ctrAnswer =
                ContainerResourceHookResponse.newBuilder()
                        .putContainerAnnotations("c", "new")
                        .setContainerResources(set.toBuilder().setOomScoreAdj(0))
                        .build();
        rt.updateContainerResources(
                UpdateContainerResourcesRequest.newBuilder()
                        .setContainerId(ctrId)
                        .setLinux(criResources(2))
                        .build());
        UpdateContainerResourcesRequest update =
                backend.received(UpdateContainerResourcesRequest.class).get(0);
        assertThat(update.getLinux())
                .isEqualTo(
                        expected.toBuilder()
                                .setOomScoreAdj(criResources(2).getOomScoreAdj())
                                .build());

        // an answer that sets nothing (zero numbers, empty strings, no entries) changes nothing
        podAnswer =
                PodSandboxHookResponse.newBuilder()
                        .setResources(
                                io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources
                                        .getDefaultInstance())
                        .build();
        RunPodSandboxRequest untouched = RunPodSandboxRequest.newBuilder().setConfig(pod).build();
        rt.runPodSandbox(untouched);
        assertThat(backend.received(RunPodSandboxRequest.class).get(1)).isEqualTo(untouched);
    }

    @Test
    void whatNrisModelCannotCarryFailsUnderFailNamingTheField() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = start("Fail");
        podAnswer =
                PodSandboxHookResponse.newBuilder()
                        .setResources(
                                io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources
                                        .newBuilder()
                                        .setOomScoreAdj(5))
                        .build();
        assertThatThrownBy(
                        () ->
                                rt.runPodSandbox(
                                        RunPodSandboxRequest.newBuilder().setConfig(pod).build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hook \"recorder\"")
                                    .contains("resources.oom_score_adj");
                        });
        podAnswer = PodSandboxHookResponse.getDefaultInstance();
        String podId =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        ctrAnswer =
                ContainerResourceHookResponse.newBuilder().setPodCgroupParent("/elsewhere").build();
        assertThatThrownBy(
                        () ->
                                rt.createContainer(
                                        CreateContainerRequest.newBuilder()
                                                .setPodSandboxId(podId)
                                                .setSandboxConfig(pod)
                                                .setConfig(
                                                        ContainerConfig.newBuilder()
                                                                .setMetadata(
                                                                        ContainerMetadata
                                                                                .newBuilder()
                                                                                .setName("app")))
                                                .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getDescription())
                                        .contains("pod_cgroup_parent"));
        assertThat(backend.received(CreateContainerRequest.class)).isEmpty();
    }

    @Test
    void whatNrisModelCannotCarryIsDroppedUnderIgnoreAndTheRestApplies() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub rt = start("Ignore");
        String podId =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        ctrAnswer =
                ContainerResourceHookResponse.newBuilder()
                        .setPodCgroupParent("/elsewhere")
                        .putContainerAnnotations("kept", "yes")
                        .build();
        rt.createContainer(
                CreateContainerRequest.newBuilder()
                        .setPodSandboxId(podId)
                        .setSandboxConfig(pod)
                        .setConfig(
                                ContainerConfig.newBuilder()
                                        .setMetadata(ContainerMetadata.newBuilder().setName("app")))
                        .build());
        CreateContainerRequest sent = backend.received(CreateContainerRequest.class).get(0);
        assertThat(sent.getConfig().getAnnotationsMap()).containsEntry("kept", "yes");
        assertThat(sent.getSandboxConfig().getLinux().getCgroupParent())
                .isEqualTo("/kubepods/pod-uid-1");
    }
}
