package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.Int64Value;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerConfig;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxContainerSecurityContext;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.LinuxSandboxSecurityContext;
import io.cri4j.cri.v1.Mount;
import io.cri4j.cri.v1.MountPropagation;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.SecurityProfile;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxNamespace;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NriFromCriTest {

    static final LinuxContainerResources CRI_RES =
            LinuxContainerResources.newBuilder()
                    .setCpuShares(512)
                    .setCpuQuota(50_000)
                    .setCpuPeriod(100_000)
                    .setCpusetCpus("0-1")
                    .setCpusetMems("0")
                    .setMemoryLimitInBytes(256L << 20)
                    .setOomScoreAdj(-5)
                    .addHugepageLimits(
                            io.cri4j.cri.v1.HugepageLimit.newBuilder()
                                    .setPageSize("2MB")
                                    .setLimit(4096))
                    .putUnified("memory.high", "200M")
                    .setMemorySwapLimitInBytes(512L << 20)
                    .build();

    static final PodSandboxConfig POD_CONFIG =
            PodSandboxConfig.newBuilder()
                    .setMetadata(
                            PodSandboxMetadata.newBuilder()
                                    .setName("web")
                                    .setUid("u1")
                                    .setNamespace("prod"))
                    .putLabels("app", "web")
                    .putAnnotations("a", "1")
                    .setLinux(
                            LinuxPodSandboxConfig.newBuilder()
                                    .setCgroupParent("/kubepods/pod-u1")
                                    .setOverhead(
                                            LinuxContainerResources.newBuilder().setCpuShares(10))
                                    .setResources(CRI_RES)
                                    .setSecurityContext(
                                            LinuxSandboxSecurityContext.newBuilder()
                                                    .setNamespaceOptions(
                                                            NamespaceOption.newBuilder()
                                                                    .setNetwork(NamespaceMode.NODE)
                                                                    .setPid(
                                                                            NamespaceMode
                                                                                    .CONTAINER))))
                    .build();

    @Test
    void podCarriesIdentityMetadataHandlerResourcesAndNamespaces() {
        PodSandbox p =
                NriFromCri.pod(
                        "sb1",
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(POD_CONFIG)
                                .setRuntimeHandler("runc")
                                .build());
        assertThat(p.getId()).isEqualTo("sb1");
        assertThat(p.getName()).isEqualTo("web");
        assertThat(p.getUid()).isEqualTo("u1");
        assertThat(p.getNamespace()).isEqualTo("prod");
        assertThat(p.getLabelsMap()).isEqualTo(Map.of("app", "web"));
        assertThat(p.getAnnotationsMap()).isEqualTo(Map.of("a", "1"));
        assertThat(p.getRuntimeHandler()).isEqualTo("runc");
        assertThat(p.getLinux().getCgroupParent()).isEqualTo("/kubepods/pod-u1");
        assertThat(p.getLinux().getPodOverhead().getCpu().getShares().getValue()).isEqualTo(10);
        assertThat(p.getLinux().getPodResources().getCpu().getCpus()).isEqualTo("0-1");
        assertThat(p.getLinux().getNamespacesList())
                .extracting(LinuxNamespace::getType)
                .containsExactly("pid", "ipc", "mount");
        PodSandbox bare = NriFromCri.pod("sb2", PodSandboxConfig.getDefaultInstance(), "");
        assertThat(bare.getLinux().hasPodOverhead()).isFalse();
        assertThat(bare.getLinux().getNamespacesList())
                .extracting(LinuxNamespace::getType)
                .containsExactly("pid", "ipc", "uts", "mount", "network");
    }

    @Test
    void resourcesConvertAsContainerdConvertsThem() {
        LinuxResources r = NriFromCri.resources(CRI_RES);
        assertThat(r.getCpu().getShares().getValue()).isEqualTo(512);
        assertThat(r.getCpu().getQuota().getValue()).isEqualTo(50_000);
        assertThat(r.getCpu().getPeriod().getValue()).isEqualTo(100_000);
        assertThat(r.getCpu().getCpus()).isEqualTo("0-1");
        assertThat(r.getCpu().getMems()).isEqualTo("0");
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(256L << 20);
        assertThat(r.getMemory().getSwap().getValue()).isEqualTo(512L << 20);
        assertThat(r.getHugepageLimits(0).getPageSize()).isEqualTo("2MB");
        assertThat(r.getHugepageLimits(0).getLimit()).isEqualTo(4096);
        assertThat(r.getUnifiedMap()).containsEntry("memory.high", "200M");
        LinuxResources zero = NriFromCri.resources(LinuxContainerResources.getDefaultInstance());
        assertThat(zero.getCpu().hasShares()).isTrue();
        assertThat(zero.getMemory().hasLimit()).isTrue();
        assertThat(zero.getMemory().hasSwap()).isFalse();
    }

    @Test
    void containerCarriesTheCriConfig() {
        ContainerConfig config =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                        .setImage(ImageSpec.newBuilder().setImage("busybox:1"))
                        .addCommand("/bin/sh")
                        .addArgs("-c")
                        .addArgs("sleep 1")
                        .addEnvs(
                                KeyValue.newBuilder()
                                        .setKey("A")
                                        .setValue(ByteString.copyFromUtf8("1")))
                        .addMounts(
                                Mount.newBuilder()
                                        .setContainerPath("/data")
                                        .setHostPath("/srv/data")
                                        .setReadonly(true)
                                        .setPropagation(
                                                MountPropagation.PROPAGATION_HOST_TO_CONTAINER))
                        .addDevices(
                                Device.newBuilder()
                                        .setContainerPath("/dev/mynull")
                                        .setHostPath("/dev/null")
                                        .setPermissions("rwm"))
                        .putLabels("l", "1")
                        .putAnnotations("n", "2")
                        .addCDIDevices(
                                io.cri4j.cri.v1.CDIDevice.newBuilder().setName("vendor.com/gpu=0"))
                        .setLinux(
                                LinuxContainerConfig.newBuilder()
                                        .setResources(CRI_RES)
                                        .setSecurityContext(
                                                LinuxContainerSecurityContext.newBuilder()
                                                        .setRunAsUser(
                                                                Int64Value.newBuilder()
                                                                        .setValue(1000))
                                                        .setRunAsGroup(
                                                                Int64Value.newBuilder()
                                                                        .setValue(2000))
                                                        .addSupplementalGroups(3000)
                                                        .setSeccomp(
                                                                SecurityProfile.newBuilder()
                                                                        .setProfileType(
                                                                                SecurityProfile
                                                                                        .ProfileType
                                                                                        .Localhost)
                                                                        .setLocalhostRef(
                                                                                "profiles/x.json"))))
                        .build();
        Container c =
                NriFromCri.container(
                        "c1",
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId("sb1")
                                .setConfig(config)
                                .setSandboxConfig(POD_CONFIG)
                                .build(),
                        DeviceNodes.system());
        assertThat(c.getId()).isEqualTo("c1");
        assertThat(c.getPodSandboxId()).isEqualTo("sb1");
        assertThat(c.getName()).isEqualTo("app");
        assertThat(c.getState()).isEqualTo(ContainerState.CONTAINER_UNKNOWN);
        assertThat(c.getArgsList()).containsExactly("/bin/sh", "-c", "sleep 1");
        assertThat(c.getEnvList()).containsExactly("A=1");
        assertThat(c.getLabelsMap()).containsEntry("l", "1");
        assertThat(c.getAnnotationsMap()).containsEntry("n", "2");
        assertThat(c.getMounts(0).getDestination()).isEqualTo("/data");
        assertThat(c.getMounts(0).getSource()).isEqualTo("/srv/data");
        assertThat(c.getMounts(0).getType()).isEqualTo("bind");
        assertThat(c.getMounts(0).getOptionsList()).containsExactly("rbind", "rslave", "ro");
        LinuxDevice d = c.getLinux().getDevices(0);
        assertThat(d.getPath()).isEqualTo("/dev/mynull");
        assertThat(d.getType()).isEqualTo("c");
        assertThat(d.getMajor()).isEqualTo(1);
        assertThat(d.getMinor()).isEqualTo(3);
        assertThat(d.getFileMode().getValue()).isEqualTo(0666);
        assertThat(c.getLinux().getResources().getCpu().getShares().getValue()).isEqualTo(512);
        assertThat(c.getLinux().getOomScoreAdj().getValue()).isEqualTo(-5);
        assertThat(c.getLinux().getNamespacesList())
                .extracting(LinuxNamespace::getType)
                .containsExactly("pid", "ipc", "mount");
        assertThat(c.getLinux().getSeccompProfile().getProfileType())
                .isEqualTo(io.cri4j.hook.nri.v1alpha1.SecurityProfile.ProfileType.LOCALHOST);
        assertThat(c.getLinux().getSeccompProfile().getLocalhostRef()).isEqualTo("profiles/x.json");
        assertThat(c.getUser().getUid()).isEqualTo(1000);
        assertThat(c.getUser().getGid()).isEqualTo(2000);
        assertThat(c.getUser().getAdditionalGidsList()).containsExactly(3000);
        assertThat(c.getCDIDevices(0).getName()).isEqualTo("vendor.com/gpu=0");
        assertThat(c.getImage().getName()).isEqualTo("busybox:1");
    }

    @Test
    void aContainerWithoutResourcesHasNoOomScoreAndADeviceWithoutNodeHasNoNumber() {
        Container c =
                NriFromCri.container(
                        "c2",
                        "sb",
                        ContainerConfig.newBuilder()
                                .addDevices(
                                        Device.newBuilder()
                                                .setContainerPath("/dev/x")
                                                .setHostPath("/nonexistent"))
                                .build(),
                        NamespaceOption.getDefaultInstance(),
                        DeviceNodes.system());
        assertThat(c.getLinux().hasResources()).isFalse();
        assertThat(c.getLinux().hasOomScoreAdj()).isFalse();
        assertThat(c.getLinux().getDevices(0).getType()).isEmpty();
        assertThat(c.hasUser()).isFalse();
    }
}
