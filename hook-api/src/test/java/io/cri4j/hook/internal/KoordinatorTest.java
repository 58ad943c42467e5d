package io.cri4j.hook.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.ContainerCreation;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.UnsupportedAdjustment;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.HugepageLimit;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.nri.v1alpha1.CompoundFieldOwners;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.FieldOwners;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Koordinator's messages and NRI's model, both ways: the environment (last value of a repeated
 * key; changed and new keys applied in key order, nothing removed), the "unset" rules, echoed
 * fields that are no adjustment, and what NRI's model (or Koordinator's protocol) cannot carry.
 */
class KoordinatorTest {

    static KeyValue kv(String k, String v) {
        return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
    }

    static List<String> pairs(List<KeyValue> envs) {
        return envs.stream().map(e -> e.getKey() + "=" + e.getValue().toStringUtf8()).toList();
    }

    @Test
    void aContainersEnvironmentIsSentWithTheLastValueOfARepeatedKeyAtItsFirstPosition() {
        Container c =
                Container.newBuilder()
                        .setName("app")
                        .addEnv("A=1")
                        .addEnv("B=2")
                        .addEnv("A=3")
                        .addEnv("EMPTY=")
                        .addEnv("NOVALUE")
                        .build();
        ContainerResourceHookRequest r =
                Koordinator.containerRequest(PodSandbox.getDefaultInstance(), c, true);
        assertThat(r.getContainerEnvsMap())
                .containsExactly(
                        Map.entry("A", "3"),
                        Map.entry("B", "2"),
                        Map.entry("EMPTY", ""),
                        Map.entry("NOVALUE", ""));
        assertThat(
                        Koordinator.containerRequest(
                                        PodSandbox.getDefaultInstance(),
                                        c.toBuilder().setId("c1").build(),
                                        false)
                                .getContainerMeta()
                                .getId())
                .as("no id at CreateContainer")
                .isEmpty();
    }

    @Test
    void aKoordletLikeAnswerChangesOnlyWhatItChangedAndCriKeepsTheOrder() {
        ContainerConfig config =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                        .addEnvs(kv("FIRST", "1"))
                        .addEnvs(kv("SECOND", "2"))
                        .addEnvs(kv("FIRST", "1b"))
                        .build();
        Container c =
                Container.newBuilder()
                        .setName("app")
                        .addEnv("FIRST=1")
                        .addEnv("SECOND=2")
                        .addEnv("FIRST=1b")
                        .build();
        ContainerResourceHookRequest sent =
                Koordinator.containerRequest(PodSandbox.getDefaultInstance(), c, false);
        // koordlet answers with the request's environment plus what it adds
        ContainerResourceHookResponse answer =
                ContainerResourceHookResponse.newBuilder()
                        .putAllContainerEnvs(sent.getContainerEnvsMap())
                        .putContainerEnvs("SECOND", "changed")
                        .putContainerEnvs("NEW_B", "b")
                        .putContainerEnvs("NEW_A", "a")
                        .build();
        Koordinator.Answer<ContainerAdjustment> a = Koordinator.containerAdjustment(sent, answer);
        assertThat(a.unsupported()).isEmpty();
        assertThat(a.value().getEnvList())
                .extracting(e -> e.getKey() + "=" + e.getValue())
                .containsExactly("NEW_A=a", "NEW_B=b", "SECOND=changed");
        ContainerConfig out =
                CriAdjuster.create()
                        .apply(config, a.value(), OwningPlugins.getDefaultInstance(), "")
                        .value();
        assertThat(pairs(out.getEnvsList()))
                .containsExactly("FIRST=1", "SECOND=changed", "FIRST=1b", "NEW_A=a", "NEW_B=b");

        // an answer that sets nothing changes nothing
        assertThat(
                        Koordinator.containerAdjustment(
                                        sent, ContainerResourceHookResponse.getDefaultInstance())
                                .value())
                .isEqualTo(ContainerAdjustment.getDefaultInstance());
    }

    @Test
    void resourcesFollowTheUnsetRulesAndEchoedValuesAreNoChange() {
        LinuxContainerResources sentRes =
                LinuxContainerResources.newBuilder()
                        .setCpuShares(512)
                        .setCpuQuota(50000)
                        .setCpusetCpus("0-1")
                        .setOomScoreAdj(-998)
                        .addHugepageLimits(
                                HugepageLimit.newBuilder().setPageSize("2MB").setLimit(4 << 20))
                        .putUnified("memory.high", "1G")
                        .build();
        ContainerResourceHookRequest sent =
                ContainerResourceHookRequest.newBuilder()
                        .setContainerResources(sentRes)
                        .setPodCgroupParent("/kubepods")
                        .build();
        ContainerResourceHookResponse answer =
                ContainerResourceHookResponse.newBuilder()
                        .setContainerResources(
                                LinuxContainerResources.newBuilder()
                                        .setCpuShares(512)
                                        .setCpuQuota(-1)
                                        .setCpusetCpus("")
                                        .setOomScoreAdj(0)
                                        .setMemoryLimitInBytes(1 << 28)
                                        .addHugepageLimits(
                                                HugepageLimit.newBuilder()
                                                        .setPageSize("2MB")
                                                        .setLimit(4 << 20))
                                        .addHugepageLimits(
                                                HugepageLimit.newBuilder()
                                                        .setPageSize("1GB")
                                                        .setLimit(1L << 30))
                                        .putUnified("memory.high", "1G")
                                        .putUnified("io.weight", "default 50"))
                        .setPodCgroupParent("/kubepods")
                        .build();
        Koordinator.Answer<ContainerAdjustment> a = Koordinator.containerAdjustment(sent, answer);
        assertThat(a.unsupported()).as("an echoed pod cgroup parent is no change").isEmpty();
        LinuxResources r = a.value().getLinux().getResources();
        assertThat(r.getCpu().hasShares()).as("echoed").isFalse();
        assertThat(r.getCpu().getQuota().getValue()).as("-1 is a value").isEqualTo(-1);
        assertThat(r.getCpu().getCpus()).as("empty: unset").isEmpty();
        assertThat(a.value().getLinux().hasOomScoreAdj()).as("0: unset").isFalse();
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(1 << 28);
        assertThat(r.getHugepageLimitsList())
                .singleElement()
                .satisfies(h -> assertThat(h.getPageSize()).isEqualTo("1GB"));
        assertThat(r.getUnifiedMap()).containsExactly(Map.entry("io.weight", "default 50"));

        Koordinator.Answer<ContainerAdjustment> moved =
                Koordinator.containerAdjustment(
                        sent,
                        answer.toBuilder()
                                .setPodCgroupParent("/kubepods/besteffort")
                                .setContainerResources(
                                        LinuxContainerResources.newBuilder().setOomScoreAdj(999))
                                .build());
        assertThat(moved.value().getLinux().getOomScoreAdj().getValue()).isEqualTo(999);
        assertThat(moved.unsupported()).singleElement().asString().contains("pod_cgroup_parent");
    }

    @Test
    void aPodAnswerBecomesAPodAdjustmentAndItsOomScoreCannotBeCarried() {
        PodSandbox pod =
                PodSandbox.newBuilder()
                        .setName("web")
                        .setNamespace("ns")
                        .setUid("u")
                        .putLabels("app", "web")
                        .putAnnotations("a", "1")
                        .setRuntimeHandler("runc")
                        .setLinux(
                                io.cri4j.hook.nri.v1alpha1.LinuxPodSandbox.newBuilder()
                                        .setCgroupParent("/kubepods"))
                        .build();
        PodSandboxHookRequest sent = Koordinator.podRequest(pod);
        assertThat(sent.getPodMeta().getName()).isEqualTo("web");
        assertThat(sent.getRuntimeHandler()).isEqualTo("runc");
        assertThat(sent.getCgroupParent()).isEqualTo("/kubepods");
        Koordinator.Answer<PodSandboxAdjustment> a =
                Koordinator.podAdjustment(
                        sent,
                        PodSandboxHookResponse.newBuilder()
                                .putLabels("app", "web")
                                .putLabels("new", "l")
                                .putAnnotations("a", "2")
                                .setCgroupParent("/koord")
                                .setResources(
                                        LinuxContainerResources.newBuilder()
                                                .setCpuShares(2)
                                                .setOomScoreAdj(5))
                                .build());
        assertThat(a.value().labels()).containsExactly(Map.entry("new", "l"));
        assertThat(a.value().annotations()).containsExactly(Map.entry("a", "2"));
        assertThat(a.value().cgroupParent()).isEqualTo("/koord");
        assertThat(a.value().resources().getCpu().getShares().getValue()).isEqualTo(2);
        assertThat(a.unsupported()).singleElement().asString().contains("oom_score_adj");
        assertThat(Koordinator.podResponse(a.value()).getCgroupParent()).isEqualTo("/koord");
    }

    @Test
    void anUpdateAnswerCarriesResourcesOnly() {
        ContainerResourceHookRequest sent =
                ContainerResourceHookRequest.newBuilder()
                        .putContainerAnnotations("c", "1")
                        .setContainerResources(LinuxContainerResources.newBuilder().setCpuShares(2))
                        .build();
        Koordinator.Answer<LinuxResources> u =
                Koordinator.resourceUpdate(
                        sent,
                        ContainerResourceHookResponse.newBuilder()
                                .putContainerAnnotations("c", "1")
                                .putContainerAnnotations("d", "2")
                                .setContainerResources(
                                        LinuxContainerResources.newBuilder().setCpuShares(4))
                                .build());
        assertThat(u.value().getCpu().getShares().getValue()).isEqualTo(4);
        assertThat(u.unsupported()).singleElement().asString().contains("container_annotations d");
    }

    @Test
    void whatKoordinatorsProtocolCannotCarryIsNamedWithItsHook() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addEnv("KEEP", "1")
                        .removeEnv("GONE")
                        .addAnnotation("x", "y")
                        .addMount("/data", "bind", "/tmp", "rbind")
                        .addRlimit("RLIMIT_NOFILE", 10, 10)
                        .setLinuxCpuShares(10)
                        .setLinuxMemoryReservation(1)
                        .build();
        OwningPlugins owners =
                OwningPlugins.newBuilder()
                        .putOwners(
                                "c1",
                                FieldOwners.newBuilder()
                                        .putCompound(
                                                Field.Env.getNumber(),
                                                CompoundFieldOwners.newBuilder()
                                                        .putOwners("GONE", "-envs")
                                                        .putOwners("KEEP", "envs")
                                                        .build())
                                        .putCompound(
                                                Field.Mounts.getNumber(),
                                                CompoundFieldOwners.newBuilder()
                                                        .putOwners("/data", "mounts")
                                                        .build())
                                        .putCompound(
                                                Field.Rlimits.getNumber(),
                                                CompoundFieldOwners.newBuilder()
                                                        .putOwners("RLIMIT_NOFILE", "limits")
                                                        .build())
                                        .putSimple(Field.MemReservation.getNumber(), "memory")
                                        .build())
                        .build();
        ContainerCreation created =
                new ContainerCreation(
                        HookResult.adjust(a), Container.newBuilder().setId("c1").build(), owners);
        Adjusted<ContainerResourceHookResponse> r = Koordinator.containerResponse(created);
        assertThat(r.value().getContainerEnvsMap()).containsExactly(Map.entry("KEEP", "1"));
        assertThat(r.value().getContainerAnnotationsMap()).containsExactly(Map.entry("x", "y"));
        assertThat(r.value().getContainerResources().getCpuShares()).isEqualTo(10);
        assertThat(r.unsupported())
                .extracting(UnsupportedAdjustment::hook, UnsupportedAdjustment::field)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple("envs", "Env -GONE"),
                        org.assertj.core.groups.Tuple.tuple("mounts", "Mounts /data"),
                        org.assertj.core.groups.Tuple.tuple("limits", "Rlimits RLIMIT_NOFILE"),
                        org.assertj.core.groups.Tuple.tuple("memory", "MemReservation"));
    }
}
