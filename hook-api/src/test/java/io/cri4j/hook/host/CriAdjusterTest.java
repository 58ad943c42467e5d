package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerConfig;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.Mount;
import io.cri4j.cri.v1.MountPropagation;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.ContainerCreation;
import io.cri4j.hook.ContainerUpdates;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.IOPrioClass;
import io.cri4j.hook.nri.v1alpha1.LinuxScheduler;
import io.cri4j.hook.nri.v1alpha1.LinuxSeccomp;
import io.cri4j.hook.nri.v1alpha1.MpolMode;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class CriAdjusterTest {

    static final CriAdjuster ADJUSTER = CriAdjuster.create();

    static final ContainerConfig CONFIG =
            ContainerConfig.newBuilder()
                    .setMetadata(ContainerMetadata.newBuilder().setName("web"))
                    .addCommand("/bin/app")
                    .addArgs("--flag")
                    .addEnvs(env("PATH", "/bin"))
                    .addEnvs(env("DROP", "x"))
                    .addEnvs(env("SET", "old"))
                    .putAnnotations("keep", "1")
                    .putAnnotations("gone", "2")
                    .addMounts(
                            Mount.newBuilder().setContainerPath("/data").setHostPath("/srv/data"))
                    .addMounts(Mount.newBuilder().setContainerPath("/old").setHostPath("/srv/old"))
                    .addDevices(
                            Device.newBuilder()
                                    .setContainerPath("/dev/old")
                                    .setHostPath("/dev/zero")
                                    .setPermissions("rwm"))
                    .setLinux(
                            LinuxContainerConfig.newBuilder()
                                    .setResources(
                                            LinuxContainerResources.newBuilder()
                                                    .setCpuShares(1024)
                                                    .setMemoryLimitInBytes(1 << 30)))
                    .build();

    static KeyValue env(String k, String v) {
        return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
    }

    static Hook hook(String name, FailurePolicy policy, int index, Adjustments a) {
        return new Hook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return HookPolicy.DEFAULT.withIndex(index).withFailurePolicy(policy);
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container c) {
                return HookResult.adjust(a.build());
            }
        };
    }

    static ContainerCreation create(HookChain chain) throws Exception {
        return chain.createContainerDetailed(
                        PodSandbox.newBuilder().setId("sb").build(),
                        Container.newBuilder().setId("c1").setName("web").build())
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
    }

    static Adjusted<ContainerConfig> apply(Adjustments a) {
        return ADJUSTER.apply(CONFIG, a.build(), OwningPlugins.getDefaultInstance(), "c1");
    }

    @Test
    void envRemovalsThenAdditionsInPlace() {
        ContainerConfig c =
                apply(
                                Adjustments.create()
                                        .removeEnv("DROP")
                                        .addEnv("SET", "new")
                                        .addEnv("ADD", "1"))
                        .value();
        assertThat(c.getEnvsList())
                .extracting(kv -> kv.getKey() + "=" + kv.getValue().toStringUtf8())
                .containsExactly("PATH=/bin", "SET=new", "ADD=1");
    }

    @Test
    void annotationsArgsAndCdiDevices() {
        ContainerConfig c =
                apply(
                                Adjustments.create()
                                        .removeAnnotation("gone")
                                        .addAnnotation("new", "3")
                                        .setArgs("/bin/other", "x")
                                        .addCdiDevice("vendor.com/gpu=1"))
                        .value();
        assertThat(c.getAnnotationsMap()).containsOnlyKeys("keep", "new");
        assertThat(c.getCommandList()).containsExactly("/bin/other", "x");
        assertThat(c.getArgsList()).isEmpty();
        assertThat(c.getCDIDevicesList())
                .extracting(d -> d.getName())
                .containsExactly("vendor.com/gpu=1");
    }

    @Test
    void bindMountsMapToCriFieldsAndOtherMountsAreUnsupported() {
        Adjusted<ContainerConfig> a =
                apply(
                        Adjustments.create()
                                .removeMount("/old")
                                .addMount(
                                        "/cache",
                                        "bind",
                                        "/var/cache",
                                        "rbind",
                                        "ro",
                                        "rshared",
                                        "nosuid",
                                        "Z")
                                .addMount("/data", "bind", "/srv/other", "rro", "rslave")
                                .addMount("/scratch", "tmpfs", "tmpfs", "size=64m"));
        ContainerConfig c = a.value();
        assertThat(c.getMountsList())
                .extracting(Mount::getContainerPath)
                .containsExactly("/cache", "/data");
        Mount cache = c.getMounts(0);
        assertThat(cache.getHostPath()).isEqualTo("/var/cache");
        assertThat(cache.getReadonly()).isTrue();
        assertThat(cache.getPropagation()).isEqualTo(MountPropagation.PROPAGATION_BIDIRECTIONAL);
        assertThat(cache.getSelinuxRelabel()).isTrue();
        assertThat(cache.getMountOptionsList()).containsExactly("nosuid");
        Mount data = c.getMounts(1);
        assertThat(data.getHostPath()).isEqualTo("/srv/other");
        assertThat(data.getRecursiveReadOnly()).isTrue();
        assertThat(data.getPropagation()).isEqualTo(MountPropagation.PROPAGATION_HOST_TO_CONTAINER);
        assertThat(a.unsupported())
                .singleElement()
                .satisfies(
                        u -> {
                            assertThat(u.field()).isEqualTo("Mounts /scratch");
                            assertThat(u.reason()).contains("tmpfs");
                        });
    }

    @Test
    void devicesResolveTheirHostNodeByNumber() {
        Adjusted<ContainerConfig> a =
                apply(
                        Adjustments.create()
                                .removeDevice("/dev/old")
                                .addDevice(
                                        Adjustments.device("/dev/injected-null", "c", 1, 3, 0666))
                                .addDevice(Adjustments.device("/dev/nowhere", "c", 4095, 1048575))
                                .addDevice(
                                        Adjustments.device("/dev/owned", "c", 1, 5).toBuilder()
                                                .setUid(
                                                        io.cri4j.hook.nri.v1alpha1.OptionalUInt32
                                                                .newBuilder()
                                                                .setValue(4242))
                                                .build()));
        assertThat(a.value().getDevicesList())
                .extracting(
                        d ->
                                d.getContainerPath()
                                        + "<-"
                                        + d.getHostPath()
                                        + ":"
                                        + d.getPermissions())
                .containsExactly("/dev/injected-null<-/dev/null:rwm", "/dev/owned<-/dev/zero:rwm");
        assertThat(a.unsupported())
                .extracting(UnsupportedAdjustment::describe)
                .containsExactly(
                        "Devices /dev/nowhere (no host device node c 4095:1048575)",
                        "Devices /dev/owned (CRI devices take the host node's mode and owner (/dev/zero), not"
                                + " uid 4242)");
    }

    @Test
    void resourcesCriCanCarryAreAppliedTheRestReported() {
        Adjusted<ContainerConfig> a =
                apply(
                        Adjustments.create()
                                .setLinuxCpuShares(256)
                                .setLinuxCpuQuota(20_000)
                                .setLinuxCpuPeriod(100_000)
                                .setLinuxCpuSetCpus("2-3")
                                .setLinuxCpuSetMems("1")
                                .setLinuxMemoryLimit(1 << 20)
                                .setLinuxMemorySwap(2 << 20)
                                .addLinuxHugepageLimit("2MB", 8)
                                .addLinuxUnified("memory.high", "1M")
                                .setLinuxOomScoreAdj(100)
                                .setLinuxMemoryReservation(1)
                                .setLinuxPidLimits(10)
                                .setLinuxBlockIoClass("slow")
                                .setLinuxCpuRealtimeRuntime(1));
        LinuxContainerResources r = a.value().getLinux().getResources();
        assertThat(r.getCpuShares()).isEqualTo(256);
        assertThat(r.getCpuQuota()).isEqualTo(20_000);
        assertThat(r.getCpuPeriod()).isEqualTo(100_000);
        assertThat(r.getCpusetCpus()).isEqualTo("2-3");
        assertThat(r.getCpusetMems()).isEqualTo("1");
        assertThat(r.getMemoryLimitInBytes()).isEqualTo(1 << 20);
        assertThat(r.getMemorySwapLimitInBytes()).isEqualTo(2 << 20);
        assertThat(r.getHugepageLimits(0).getPageSize()).isEqualTo("2MB");
        assertThat(r.getUnifiedMap()).containsEntry("memory.high", "1M");
        assertThat(r.getOomScoreAdj()).isEqualTo(100);
        assertThat(a.unsupported())
                .extracting(UnsupportedAdjustment::field)
                .containsExactly(
                        "CPURealtimeRuntime", "MemReservation", "BlockioClass", "PidsLimit");
    }

    @Test
    void everythingCriCannotCarryIsReportedWithItsHook() throws Exception {
        try (HookChain chain =
                HookChain.builder()
                        .add(
                                hook(
                                        "tuner",
                                        FailurePolicy.FAIL,
                                        1,
                                        Adjustments.create()
                                                .addEnv("OK", "1")
                                                .addRlimit("RLIMIT_NOFILE", 10, 10)
                                                .addHooks(
                                                        io.cri4j.hook.nri.v1alpha1.Hooks
                                                                .newBuilder()
                                                                .addPrestart(
                                                                        io.cri4j.hook.nri.v1alpha1
                                                                                .Hook.newBuilder()
                                                                                .setPath(
                                                                                        "/bin/true"))
                                                                .build())
                                                .setLinuxCgroupsPath("/custom")
                                                .setLinuxIoPriority(
                                                        IOPrioClass.IOPRIO_CLASS_BE, 1)))
                        .add(
                                hook(
                                        "sec",
                                        FailurePolicy.IGNORE,
                                        2,
                                        Adjustments.create()
                                                .setLinuxSeccompPolicy(
                                                        LinuxSeccomp.getDefaultInstance())
                                                .addOrReplaceNamespace(
                                                        "network", "/var/run/netns/x")
                                                .addLinuxSysctl("net.core.somaxconn", "1024")
                                                .addLinuxNetDevice("eth9", "net1")
                                                .setLinuxScheduler(
                                                        LinuxScheduler.getDefaultInstance())
                                                .setLinuxRdtClosId("gold")
                                                .setLinuxMemoryPolicy(MpolMode.MPOL_BIND, "0")
                                                .addHooks(
                                                        io.cri4j.hook.nri.v1alpha1.Hooks
                                                                .newBuilder()
                                                                .addPoststop(
                                                                        io.cri4j.hook.nri.v1alpha1
                                                                                .Hook.newBuilder()
                                                                                .setPath(
                                                                                        "/bin/true"))
                                                                .build())))
                        .build()) {
            Adjusted<ContainerConfig> a = ADJUSTER.apply(CONFIG, create(chain));
            assertThat(a.value().getEnvsList()).extracting(KeyValue::getKey).contains("OK");
            assertThat(a.unsupportedByHook()).containsOnlyKeys("tuner", "sec");
            assertThat(a.unsupportedByHook().get("tuner"))
                    .extracting(s -> s.split(" \\(")[0])
                    .containsExactly(
                            "OciHooks", "Rlimits RLIMIT_NOFILE", "CgroupsPath", "IoPriority");
            assertThat(a.unsupportedByHook().get("sec"))
                    .extracting(s -> s.split(" \\(")[0])
                    .containsExactly(
                            "OciHooks",
                            "SeccompPolicy",
                            "Namespace network",
                            "Sysctl net.core.somaxconn",
                            "LinuxNetDevices eth9",
                            "LinuxSched",
                            "Rdt",
                            "MemoryPolicy");

            assertThatThrownBy(
                            () ->
                                    CriAdjuster.enforce(
                                            a, HookEvent.CREATE_CONTAINER, chain::policyOf))
                    .isInstanceOf(UnsupportedAdjustmentException.class)
                    .hasMessageStartingWith(
                            "CreateContainer: hook \"tuner\" asked for changes the runtime"
                                    + " interface cannot carry: OciHooks (CRI has no OCI hooks), Rlimits RLIMIT_NOFILE")
                    .satisfies(
                            e ->
                                    assertThat(((UnsupportedAdjustmentException) e).hookName())
                                            .isEqualTo("tuner"));
        }
    }

    @Test
    void deviceCgroupRulesAreReportedWithTheHooksThatAddedThem() throws Exception {
        try (HookChain chain =
                HookChain.builder()
                        .add(
                                hook(
                                        "gpu",
                                        FailurePolicy.FAIL,
                                        1,
                                        Adjustments.create()
                                                .addEnv("GPU", "1")
                                                .addLinuxDeviceCgroupRule(
                                                        true, "c", 195L, null, "rw")))
                        .add(
                                hook(
                                        "deny",
                                        FailurePolicy.IGNORE,
                                        2,
                                        Adjustments.create()
                                                .addLinuxDeviceCgroupRule(
                                                        false, "a", null, null, "m")))
                        .build()) {
            Adjusted<ContainerConfig> a = ADJUSTER.apply(CONFIG, create(chain));
            assertThat(a.value().getEnvsList()).extracting(KeyValue::getKey).contains("GPU");
            assertThat(a.unsupportedByHook()).containsOnlyKeys("gpu", "deny");
            assertThat(a.unsupportedByHook().get("gpu"))
                    .containsExactly(
                            "DeviceCgroupRules [allow c 195:* rw, deny a *:* m] (CRI has no device"
                                    + " cgroup rules)");
            assertThatThrownBy(
                            () ->
                                    CriAdjuster.enforce(
                                            a, HookEvent.CREATE_CONTAINER, chain::policyOf))
                    .isInstanceOf(UnsupportedAdjustmentException.class)
                    .hasMessageContaining("hook \"gpu\"")
                    .hasMessageContaining("DeviceCgroupRules");
        }
        // from an NRI OwningPlugins message (no owner for them) and in an update: without a hook
        Adjusted<ContainerConfig> plain =
                apply(Adjustments.create().addLinuxDeviceCgroupRule(true, "b", 8L, 0L, "r"));
        assertThat(plain.unsupported())
                .singleElement()
                .satisfies(
                        u -> {
                            assertThat(u.hook()).isEmpty();
                            assertThat(u.field()).isEqualTo("DeviceCgroupRules [allow b 8:0 r]");
                        });
        Adjusted<LinuxContainerResources> res =
                ADJUSTER.resources(
                        LinuxContainerResources.getDefaultInstance(),
                        Adjustments.create()
                                .addLinuxDeviceCgroupRule(true, "c", 1L, 3L, "rwm")
                                .build()
                                .getLinux()
                                .getResources());
        assertThat(res.unsupported())
                .extracting(UnsupportedAdjustment::field)
                .containsExactly("DeviceCgroupRules [allow c 1:3 rwm]");
    }

    @Test
    void enforceLetsIgnoreHooksThroughAndFailsUnknownOnes() {
        Adjusted<String> onlyIgnored =
                new Adjusted<>(
                        "v",
                        List.of(
                                new UnsupportedAdjustment(
                                        "lenient", "Rlimits X", "CRI has no rlimits")));
        Function<String, Optional<HookPolicy>> policies =
                name ->
                        name.equals("lenient")
                                ? Optional.of(
                                        HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.IGNORE))
                                : Optional.empty();
        assertThat(CriAdjuster.enforce(onlyIgnored, HookEvent.CREATE_CONTAINER, policies))
                .isEqualTo("v");
        Adjusted<String> unknown =
                new Adjusted<>(
                        "v",
                        List.of(
                                new UnsupportedAdjustment(
                                        "", "PidsLimit", "CRI has no PidsLimit resource")));
        assertThatThrownBy(() -> CriAdjuster.enforce(unknown, HookEvent.UPDATE_CONTAINER, policies))
                .isInstanceOf(UnsupportedAdjustmentException.class)
                .hasMessage(
                        "UpdateContainer: a hook asked for changes the runtime interface cannot"
                                + " carry: PidsLimit (CRI has no PidsLimit resource)");
    }

    @Test
    void podAdjustmentsLandInTheRunPodSandboxRequest() {
        RunPodSandboxRequest req =
                RunPodSandboxRequest.newBuilder()
                        .setConfig(PodSandboxConfig.newBuilder().putLabels("app", "web"))
                        .setRuntimeHandler("runc")
                        .build();
        Adjusted<RunPodSandboxRequest> a =
                ADJUSTER.apply(
                        req,
                        PodSandboxAdjustment.builder()
                                .putLabel("tier", "gold")
                                .putAnnotation("seen", "yes")
                                .cgroupParent("/gold")
                                .resources(
                                        Adjustments.create()
                                                .setLinuxCpuShares(2048)
                                                .setLinuxPidLimits(5)
                                                .build()
                                                .getLinux()
                                                .getResources())
                                .build());
        PodSandboxConfig c = a.value().getConfig();
        assertThat(c.getLabelsMap()).containsEntry("app", "web").containsEntry("tier", "gold");
        assertThat(c.getAnnotationsMap()).containsEntry("seen", "yes");
        assertThat(c.getLinux().getCgroupParent()).isEqualTo("/gold");
        assertThat(c.getLinux().getResources().getCpuShares()).isEqualTo(2048);
        assertThat(a.value().getRuntimeHandler()).isEqualTo("runc");
        assertThat(a.unsupported())
                .extracting(UnsupportedAdjustment::field)
                .containsExactly("PidsLimit");
        assertThat(ADJUSTER.apply(req, PodSandboxAdjustment.NONE).value()).isSameAs(req);
    }

    @Test
    void containerUpdatesBecomeUpdateContainerResourcesRequests() {
        UpdateContainerResourcesRequest req =
                UpdateContainerResourcesRequest.newBuilder()
                        .setContainerId("c2")
                        .setLinux(
                                LinuxContainerResources.newBuilder()
                                        .setCpuShares(100)
                                        .setMemoryLimitInBytes(1 << 20)
                                        .setOomScoreAdj(7))
                        .build();
        Adjusted<UpdateContainerResourcesRequest> a =
                ADJUSTER.apply(
                        req,
                        ContainerUpdates.of("c2")
                                .setLinuxCpuShares(200)
                                .setLinuxCpuSetCpus("1")
                                .build());
        assertThat(a.value().getLinux().getCpuShares()).isEqualTo(200);
        assertThat(a.value().getLinux().getCpusetCpus()).isEqualTo("1");
        assertThat(a.value().getLinux().getMemoryLimitInBytes()).isEqualTo(1 << 20);
        assertThat(a.value().getLinux().getOomScoreAdj()).isEqualTo(7);
        assertThat(a.unsupported()).isEmpty();
    }

    @Test
    void anEmptyAdjustmentChangesNothing() {
        assertThat(
                        ADJUSTER.apply(
                                        CONFIG,
                                        ContainerAdjustment.getDefaultInstance(),
                                        OwningPlugins.getDefaultInstance(),
                                        "c1")
                                .value())
                .isEqualTo(CONFIG);
    }
}
