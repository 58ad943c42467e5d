package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.IOPrioClass;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxDeviceCgroup;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.LinuxScheduler;
import io.cri4j.hook.nri.v1alpha1.LinuxSchedulerPolicy;
import io.cri4j.hook.nri.v1alpha1.LinuxSeccomp;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.MpolFlag;
import io.cri4j.hook.nri.v1alpha1.MpolMode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AdjustmentsTest {

    @Test
    void removalMarkerIsADashPrefixAsInNri() {
        assertThat(Adjustments.markForRemoval("FOO")).isEqualTo("-FOO");
        assertThat(Adjustments.isMarkedForRemoval("-FOO")).isTrue();
        assertThat(Adjustments.isMarkedForRemoval("FOO")).isFalse();
        assertThat(Adjustments.isMarkedForRemoval("")).isFalse();
        assertThat(Adjustments.clearRemovalMarker("-FOO")).isEqualTo("FOO");
        assertThat(Adjustments.clearRemovalMarker("FOO")).isEqualTo("FOO");
    }

    @Test
    void annotationsAreSetAndRemovedWithTheMarkerKeyMappedToEmpty() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addAnnotation("a", "1")
                        .removeAnnotation("b")
                        .removeAnnotation("c")
                        .addAnnotation("c", "mine")
                        .build();
        assertThat(a.getAnnotationsMap())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("a", "1", "-b", "", "-c", "", "c", "mine"));
    }

    @Test
    void removingWhatThisBuilderAddedDropsTheAddition() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addAnnotation("a", "1")
                        .removeAnnotation("a")
                        .addEnv("E", "1")
                        .removeEnv("E")
                        .addMount("/m", "bind", "/src")
                        .removeMount("/m")
                        .addDevice(Adjustments.device("/dev/x", "c", 1, 3))
                        .removeDevice("/dev/x")
                        .build();
        assertThat(a.getAnnotationsMap()).containsExactly(Map.entry("-a", ""));
        assertThat(a.getEnvList()).containsExactly(KeyValue.newBuilder().setKey("-E").build());
        assertThat(a.getMountsList())
                .containsExactly(Mount.newBuilder().setDestination("-/m").build());
        assertThat(a.getLinux().getDevicesList())
                .containsExactly(LinuxDevice.newBuilder().setPath("-/dev/x").build());
    }

    @Test
    void envKeepsOrderAndTheLastValueOfAKey() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addEnv("A", "1")
                        .addEnv("B", "2")
                        .addEnv("A", "3")
                        .removeEnv("C")
                        .addEnv("C", "4")
                        .build();
        assertThat(a.getEnvList())
                .extracting(kv -> kv.getKey() + "=" + kv.getValue())
                .containsExactly("A=3", "B=2", "-C=", "C=4");
    }

    @Test
    void argsAreSetOrUpdatedWithNrisLeadingEmptyElement() {
        assertThat(Adjustments.create().setArgs("sh", "-c", "true").build().getArgsList())
                .containsExactly("sh", "-c", "true");
        assertThat(Adjustments.create().updateArgs(List.of("sleep", "1")).build().getArgsList())
                .containsExactly("", "sleep", "1");
        assertThatThrownBy(() -> Adjustments.create().setArgs(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("args");
        assertThatThrownBy(() -> Adjustments.create().setArgs("", "x"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void mountsAreKeyedByDestination() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addMount("/data", "bind", "/srv/a", "rbind", "ro")
                        .addMount(Adjustments.mount("/data", "bind", "/srv/b", "rbind"))
                        .addMount("/tmp2", "tmpfs", "tmpfs")
                        .build();
        assertThat(a.getMountsList())
                .extracting(Mount::getSource)
                .containsExactly("/srv/b", "tmpfs");
        assertThat(a.getMounts(0).getOptionsList()).containsExactly("rbind");
    }

    @Test
    void devicesCdiDevicesAndNamespaces() {
        ContainerAdjustment a =
                Adjustments.create()
                        .addDevice(Adjustments.device("/dev/mynull", "c", 1, 3, 0666))
                        .addCdiDevice("vendor.com/gpu=0")
                        .addCdiDevice("vendor.com/gpu=0")
                        .addOrReplaceNamespace("network", "/var/run/netns/x")
                        .addOrReplaceNamespace("network", "/var/run/netns/y")
                        .removeNamespace("ipc")
                        .build();
        LinuxDevice d = a.getLinux().getDevices(0);
        assertThat(d.getPath()).isEqualTo("/dev/mynull");
        assertThat(d.getType()).isEqualTo("c");
        assertThat(d.getMajor()).isEqualTo(1);
        assertThat(d.getMinor()).isEqualTo(3);
        assertThat(d.getFileMode().getValue()).isEqualTo(0666);
        assertThat(d.hasUid()).isFalse();
        assertThat(a.getCDIDevicesList()).hasSize(1);
        assertThat(a.getLinux().getNamespacesList())
                .extracting(ns -> ns.getType() + ":" + ns.getPath())
                .containsExactly("network:/var/run/netns/y", "-ipc:");
        assertThatThrownBy(() -> Adjustments.device("/dev/x", "char", 1, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("device type");
    }

    @Test
    void ociHooksAndRlimitsAppend() {
        io.cri4j.hook.nri.v1alpha1.Hook h =
                io.cri4j.hook.nri.v1alpha1.Hook.newBuilder().setPath("/bin/true").build();
        ContainerAdjustment a =
                Adjustments.create()
                        .addHooks(
                                io.cri4j.hook.nri.v1alpha1.Hooks.newBuilder()
                                        .addPrestart(h)
                                        .addPoststop(h)
                                        .build())
                        .addHooks(
                                io.cri4j.hook.nri.v1alpha1.Hooks.newBuilder()
                                        .addPrestart(h)
                                        .build())
                        .addRlimit("RLIMIT_NOFILE", 4096, 1024)
                        .addRlimit("RLIMIT_NOFILE", 8192, 2048)
                        .addRlimit("RLIMIT_NPROC", 100, 100)
                        .build();
        assertThat(a.getHooks().getPrestartCount()).isEqualTo(2);
        assertThat(a.getHooks().getPoststopCount()).isEqualTo(1);
        assertThat(a.getRlimitsList())
                .extracting(l -> l.getType() + " " + l.getHard() + "/" + l.getSoft())
                .containsExactly("RLIMIT_NOFILE 8192/2048", "RLIMIT_NPROC 100/100");
    }

    @Test
    void everyLinuxResourceLandsInItsOptionalField() {
        ContainerAdjustment a =
                Adjustments.create()
                        .setLinuxMemoryLimit(1)
                        .setLinuxMemoryReservation(2)
                        .setLinuxMemorySwap(3)
                        .setLinuxMemoryKernel(4)
                        .setLinuxMemoryKernelTcp(5)
                        .setLinuxMemorySwappiness(6)
                        .setLinuxMemoryDisableOomKiller()
                        .setLinuxMemoryUseHierarchy()
                        .setLinuxCpuShares(7)
                        .setLinuxCpuQuota(8)
                        .setLinuxCpuPeriod(9)
                        .setLinuxCpuRealtimeRuntime(10)
                        .setLinuxCpuRealtimePeriod(11)
                        .setLinuxCpuSetCpus("0-1")
                        .setLinuxCpuSetMems("0")
                        .setLinuxPidLimits(12)
                        .addLinuxHugepageLimit("2MB", 13)
                        .addLinuxHugepageLimit("1GB", 14)
                        .addLinuxHugepageLimit("2MB", 15)
                        .setLinuxBlockIoClass("slow")
                        .setLinuxRdtClass("gold")
                        .addLinuxUnified("memory.high", "100M")
                        .build();
        LinuxResources r = a.getLinux().getResources();
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(1);
        assertThat(r.getMemory().getReservation().getValue()).isEqualTo(2);
        assertThat(r.getMemory().getSwap().getValue()).isEqualTo(3);
        assertThat(r.getMemory().getKernel().getValue()).isEqualTo(4);
        assertThat(r.getMemory().getKernelTcp().getValue()).isEqualTo(5);
        assertThat(r.getMemory().getSwappiness().getValue()).isEqualTo(6);
        assertThat(r.getMemory().getDisableOomKiller().getValue()).isTrue();
        assertThat(r.getMemory().getUseHierarchy().getValue()).isTrue();
        assertThat(r.getCpu().getShares().getValue()).isEqualTo(7);
        assertThat(r.getCpu().getQuota().getValue()).isEqualTo(8);
        assertThat(r.getCpu().getPeriod().getValue()).isEqualTo(9);
        assertThat(r.getCpu().getRealtimeRuntime().getValue()).isEqualTo(10);
        assertThat(r.getCpu().getRealtimePeriod().getValue()).isEqualTo(11);
        assertThat(r.getCpu().getCpus()).isEqualTo("0-1");
        assertThat(r.getCpu().getMems()).isEqualTo("0");
        assertThat(r.getPids().getLimit()).isEqualTo(12);
        assertThat(r.getHugepageLimitsList())
                .extracting(h -> h.getPageSize() + "=" + h.getLimit())
                .containsExactly("2MB=15", "1GB=14");
        assertThat(r.getBlockioClass().getValue()).isEqualTo("slow");
        assertThat(r.getRdtClass().getValue()).isEqualTo("gold");
        assertThat(r.getUnifiedMap()).containsExactly(Map.entry("memory.high", "100M"));
    }

    @Test
    void anUnsetResourceStaysAbsentNotZero() {
        LinuxResources r =
                Adjustments.create().setLinuxCpuShares(0).build().getLinux().getResources();
        assertThat(r.getCpu().hasShares()).isTrue();
        assertThat(r.getCpu().getShares().getValue()).isZero();
        assertThat(r.getCpu().hasQuota()).isFalse();
        assertThat(r.hasMemory()).isFalse();
    }

    @Test
    void linuxProcessSettings() {
        LinuxSeccomp seccomp = LinuxSeccomp.newBuilder().setDefaultAction("SCMP_ACT_ALLOW").build();
        LinuxScheduler sched =
                LinuxScheduler.newBuilder()
                        .setPolicy(LinuxSchedulerPolicy.SCHED_BATCH)
                        .setNice(5)
                        .build();
        ContainerAdjustment a =
                Adjustments.create()
                        .setLinuxCgroupsPath("/kubepods/x")
                        .setLinuxOomScoreAdj(-10)
                        .setLinuxIoPriority(IOPrioClass.IOPRIO_CLASS_BE, 4)
                        .setLinuxSeccompPolicy(seccomp)
                        .setLinuxScheduler(sched)
                        .setLinuxMemoryPolicy(
                                MpolMode.MPOL_BIND, "0-1", MpolFlag.MPOL_F_STATIC_NODES)
                        .addLinuxSysctl("net.ipv4.ip_forward", "1")
                        .removeLinuxSysctl("kernel.msgmax")
                        .addLinuxNetDevice("eth9", "net1")
                        .removeLinuxNetDevice("eth8")
                        .setLinuxRdtClosId("gold")
                        .setLinuxRdtSchemata(List.of("L3:0=f"))
                        .setLinuxRdtEnableMonitoring(true)
                        .build();
        assertThat(a.getLinux().getCgroupsPath()).isEqualTo("/kubepods/x");
        assertThat(a.getLinux().getOomScoreAdj().getValue()).isEqualTo(-10);
        assertThat(a.getLinux().getIoPriority().getClass_()).isEqualTo(IOPrioClass.IOPRIO_CLASS_BE);
        assertThat(a.getLinux().getIoPriority().getPriority()).isEqualTo(4);
        assertThat(a.getLinux().getSeccompPolicy()).isEqualTo(seccomp);
        assertThat(a.getLinux().getScheduler()).isEqualTo(sched);
        assertThat(a.getLinux().getMemoryPolicy().getMode()).isEqualTo(MpolMode.MPOL_BIND);
        assertThat(a.getLinux().getMemoryPolicy().getNodes()).isEqualTo("0-1");
        assertThat(a.getLinux().getMemoryPolicy().getFlagsList())
                .containsExactly(MpolFlag.MPOL_F_STATIC_NODES);
        assertThat(a.getLinux().getSysctlMap())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("net.ipv4.ip_forward", "1", "-kernel.msgmax", ""));
        assertThat(a.getLinux().getNetDevicesMap()).containsOnlyKeys("eth9", "-eth8");
        assertThat(a.getLinux().getNetDevicesMap().get("eth9").getName()).isEqualTo("net1");
        assertThat(a.getLinux().getRdt().getClosId().getValue()).isEqualTo("gold");
        assertThat(a.getLinux().getRdt().getSchemata().getValueList()).containsExactly("L3:0=f");
        assertThat(a.getLinux().getRdt().getEnableMonitoring().getValue()).isTrue();
        assertThat(Adjustments.create().removeLinuxRdt().build().getLinux().getRdt().getRemove())
                .isTrue();
        assertThatThrownBy(() -> Adjustments.create().setLinuxOomScoreAdj(1001))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1000..1000");
    }

    @Test
    void keysMustBeNonEmptyAndUnmarked() {
        assertThatThrownBy(() -> Adjustments.create().addEnv("", "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("environment");
        assertThatThrownBy(() -> Adjustments.create().addAnnotation("-a", "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("removal");
        assertThatThrownBy(() -> Adjustments.create().removeMount("-/x"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void fromContinuesWithoutChangingTheOriginal() {
        ContainerAdjustment first = Adjustments.create().addEnv("A", "1").build();
        ContainerAdjustment second = Adjustments.from(first).addEnv("B", "2").build();
        assertThat(first.getEnvCount()).isEqualTo(1);
        assertThat(second.getEnvCount()).isEqualTo(2);
    }

    @Test
    void emptyBuilderIsTheDefaultAdjustment() {
        assertThat(Adjustments.create().build())
                .isEqualTo(ContainerAdjustment.getDefaultInstance());
        assertThat(HookResult.adjust(Adjustments.create().build()).isEmpty()).isTrue();
    }

    @Test
    void containerUpdatesCarryIdResourcesAndIgnoreFailure() {
        ContainerUpdate u =
                ContainerUpdates.of("c1")
                        .setLinuxCpuShares(512)
                        .setLinuxCpuQuota(50_000)
                        .setLinuxCpuPeriod(100_000)
                        .setLinuxCpuRealtimeRuntime(1)
                        .setLinuxCpuRealtimePeriod(2)
                        .setLinuxCpuSetCpus("2")
                        .setLinuxCpuSetMems("0")
                        .setLinuxMemoryLimit(1 << 20)
                        .setLinuxMemoryReservation(2)
                        .setLinuxMemorySwap(3)
                        .setLinuxMemoryKernel(4)
                        .setLinuxMemoryKernelTcp(5)
                        .setLinuxMemorySwappiness(6)
                        .setLinuxMemoryDisableOomKiller()
                        .setLinuxMemoryUseHierarchy()
                        .setLinuxPidLimits(7)
                        .addLinuxHugepageLimit("2MB", 8)
                        .addLinuxHugepageLimit("2MB", 9)
                        .setLinuxBlockIoClass("b")
                        .setLinuxRdtClass("r")
                        .addLinuxUnified("cpu.weight", "10")
                        .setIgnoreFailure()
                        .build();
        assertThat(u.getContainerId()).isEqualTo("c1");
        assertThat(u.getIgnoreFailure()).isTrue();
        LinuxResources r = u.getLinux().getResources();
        assertThat(r.getCpu().getShares().getValue()).isEqualTo(512);
        assertThat(r.getCpu().getQuota().getValue()).isEqualTo(50_000);
        assertThat(r.getCpu().getPeriod().getValue()).isEqualTo(100_000);
        assertThat(r.getCpu().getRealtimeRuntime().getValue()).isEqualTo(1);
        assertThat(r.getCpu().getRealtimePeriod().getValue()).isEqualTo(2);
        assertThat(r.getCpu().getCpus()).isEqualTo("2");
        assertThat(r.getCpu().getMems()).isEqualTo("0");
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(1 << 20);
        assertThat(r.getMemory().getReservation().getValue()).isEqualTo(2);
        assertThat(r.getMemory().getSwap().getValue()).isEqualTo(3);
        assertThat(r.getMemory().getKernel().getValue()).isEqualTo(4);
        assertThat(r.getMemory().getKernelTcp().getValue()).isEqualTo(5);
        assertThat(r.getMemory().getSwappiness().getValue()).isEqualTo(6);
        assertThat(r.getMemory().getDisableOomKiller().getValue()).isTrue();
        assertThat(r.getMemory().getUseHierarchy().getValue()).isTrue();
        assertThat(r.getPids().getLimit()).isEqualTo(7);
        assertThat(r.getHugepageLimitsList())
                .singleElement()
                .satisfies(h -> assertThat(h.getLimit()).isEqualTo(9));
        assertThat(r.getBlockioClass().getValue()).isEqualTo("b");
        assertThat(r.getRdtClass().getValue()).isEqualTo("r");
        assertThat(r.getUnifiedMap()).containsEntry("cpu.weight", "10");
        assertThatThrownBy(() -> ContainerUpdates.of(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("container id");
        assertThat(
                        ContainerUpdates.from(u)
                                .setLinuxCpuShares(2)
                                .build()
                                .getLinux()
                                .getResources()
                                .getCpu()
                                .getShares()
                                .getValue())
                .isEqualTo(2);
        assertThat(ContainerUpdates.of("c2").setLinuxResources(r).build().getLinux().getResources())
                .isEqualTo(r);
    }

    @Test
    void deviceCgroupRulesAreAppendedInOrderWithWildcardsAsUnsetNumbers() {
        LinuxResources r =
                Adjustments.create()
                        .addLinuxDeviceCgroupRule(false, "a", null, null, "rwm")
                        .addLinuxDeviceCgroupRule(true, "c", 1L, 3L, "rw")
                        .addLinuxDeviceCgroupRule(
                                Adjustments.deviceCgroupRule(true, "b", 8L, null, "r"))
                        .build()
                        .getLinux()
                        .getResources();
        assertThat(r.getDevicesList())
                .extracting(
                        LinuxDeviceCgroup::getAllow,
                        LinuxDeviceCgroup::getType,
                        LinuxDeviceCgroup::hasMajor,
                        LinuxDeviceCgroup::hasMinor,
                        LinuxDeviceCgroup::getAccess)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(false, "a", false, false, "rwm"),
                        org.assertj.core.groups.Tuple.tuple(true, "c", true, true, "rw"),
                        org.assertj.core.groups.Tuple.tuple(true, "b", true, false, "r"));
        assertThat(r.getDevices(1).getMajor().getValue()).isEqualTo(1);
        assertThat(r.getDevices(1).getMinor().getValue()).isEqualTo(3);
        // nothing else of the resources is set
        assertThat(r.toBuilder().clearDevices().build())
                .isEqualTo(LinuxResources.getDefaultInstance());
    }

    @Test
    void badDeviceCgroupRulesAreRefusedNamingTheProblem() {
        assertThatThrownBy(
                        () -> Adjustments.create().addLinuxDeviceCgroupRule(true, "x", 1L, 3L, "r"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("device cgroup rule type must be a, c or b, got \"x\"");
        assertThatThrownBy(() -> Adjustments.deviceCgroupRule(true, "c", 1L, 3L, ""))
                .hasMessage("device cgroup rule access must combine r, w and m, got \"\"");
        assertThatThrownBy(() -> Adjustments.deviceCgroupRule(true, "c", 1L, 3L, "rx"))
                .hasMessageContaining("got \"rx\"");
        assertThatThrownBy(() -> Adjustments.deviceCgroupRule(true, "c", 1L, 3L, "rr"))
                .hasMessageContaining("got \"rr\"");
        assertThatThrownBy(() -> Adjustments.deviceCgroupRule(true, "c", -1L, 3L, "r"))
                .hasMessageContaining("must not be negative");
        // a message with an empty type (the proto default) is not a rule either
        assertThatThrownBy(
                        () ->
                                Adjustments.create()
                                        .addLinuxDeviceCgroupRule(
                                                LinuxDeviceCgroup.getDefaultInstance()))
                .hasMessageContaining("type must be a, c or b");
    }
}
