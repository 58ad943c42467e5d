package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.hook.nri.v1alpha1.CDIDevice;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a runtime would drop without a word is reported like what CRI cannot carry. */
class RuntimeFeaturesTest {

    @TempDir Path cgroups;

    @Test
    void containerdTakesCdiDevicesFrom17On() {
        assertThat(RuntimeFeatures.detect("containerd", "1.6.20", cgroups).cdiDevices()).isFalse();
        assertThat(RuntimeFeatures.detect("containerd", "v1.6.20", cgroups).cdiDevices()).isFalse();
        assertThat(RuntimeFeatures.detect("containerd", "1.7.2", cgroups).cdiDevices()).isTrue();
        assertThat(RuntimeFeatures.detect("containerd", "v2.3.4", cgroups).cdiDevices()).isTrue();
        assertThat(RuntimeFeatures.detect("cri-o", "1.30.0", cgroups).cdiDevices()).isTrue();
        assertThat(RuntimeFeatures.detect("containerd", "1.6.20", cgroups).runtime())
                .isEqualTo("containerd 1.6.20");
    }

    @Test
    void hugepageLimitsNeedTheNodesHugetlbController() throws Exception {
        assertThat(RuntimeFeatures.detect("containerd", "2.3.4", cgroups).hugepageLimits())
                .isFalse();
        Files.createDirectory(cgroups.resolve("hugetlb")); // cgroup v1
        assertThat(RuntimeFeatures.detect("containerd", "2.3.4", cgroups).hugepageLimits())
                .isTrue();

        Path v2 = Files.createDirectory(cgroups.resolve("v2"));
        Files.writeString(v2.resolve("cgroup.controllers"), "cpuset cpu io memory pids\n");
        assertThat(RuntimeFeatures.detect("containerd", "2.3.4", v2).hugepageLimits()).isFalse();
        Files.writeString(v2.resolve("cgroup.controllers"), "cpuset cpu io memory hugetlb pids\n");
        assertThat(RuntimeFeatures.detect("containerd", "2.3.4", v2).hugepageLimits()).isTrue();

        // a runtime that is not runc's underneath is taken at its word
        assertThat(RuntimeFeatures.detect("fake", "1.0", cgroups.resolve("none")).hugepageLimits())
                .isTrue();
    }

    @Test
    void whatTheRuntimeWouldDropIsReportedNotApplied() {
        ContainerAdjustment a =
                ContainerAdjustment.newBuilder()
                        .addCDIDevices(CDIDevice.newBuilder().setName("vendor.com/gpu=0"))
                        .setLinux(
                                LinuxContainerAdjustment.newBuilder()
                                        .setResources(
                                                LinuxResources.newBuilder()
                                                        .addHugepageLimits(
                                                                HugepageLimit.newBuilder()
                                                                        .setPageSize("2MB")
                                                                        .setLimit(4 << 20))))
                        .build();
        ContainerConfig config = ContainerConfig.getDefaultInstance();

        Adjusted<ContainerConfig> honoured =
                CriAdjuster.create(DeviceNodes.system(), RuntimeFeatures.ALL)
                        .apply(config, a, OwningPlugins.getDefaultInstance(), "c1");
        assertThat(honoured.unsupported()).isEmpty();
        assertThat(honoured.value().getCDIDevicesList()).hasSize(1);
        assertThat(honoured.value().getLinux().getResources().getHugepageLimitsList()).hasSize(1);

        Adjusted<ContainerConfig> dropped =
                CriAdjuster.create(
                                DeviceNodes.system(),
                                new RuntimeFeatures("containerd 1.6.20", false, false))
                        .apply(config, a, OwningPlugins.getDefaultInstance(), "c1");
        assertThat(dropped.value().getCDIDevicesList()).isEmpty();
        assertThat(dropped.value().getLinux().getResources().getHugepageLimitsList()).isEmpty();
        assertThat(dropped.unsupported())
                .extracting(UnsupportedAdjustment::field)
                .containsExactly("CDIDevices vendor.com/gpu=0", "HugepageLimits 2MB");
        assertThat(dropped.unsupported().get(0).reason()).contains("containerd 1.6.20");
        assertThat(dropped.unsupported().get(1).reason()).contains("hugetlb");
    }
}
