package io.cri4j.hook.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.HugepageLimit;
import io.cri4j.cri.v1.LinuxContainerResources;
import org.junit.jupiter.api.Test;

class CriHookInterceptorTest {

  @Test
  void zeroAndEmptyHookValuesLeaveCriResourcesAlone() {
    LinuxContainerResources base = LinuxContainerResources.newBuilder()
        .setCpuPeriod(100000).setCpuQuota(50000).setCpuShares(512).setMemoryLimitInBytes(1 << 30)
        .setOomScoreAdj(-997).setCpusetCpus("0-3").setCpusetMems("0")
        .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("2MB").setLimit(4))
        .putUnified("memory.high", "1G").setMemorySwapLimitInBytes(2L << 30).build();
    LinuxContainerResources same = CriHookInterceptor.applyResources(base,
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.getDefaultInstance());
    assertThat(same).isEqualTo(base);
  }

  @Test
  void setHookValuesWinAndMapsMergeByKey() {
    LinuxContainerResources base = LinuxContainerResources.newBuilder()
        .setCpuQuota(50000).setCpusetCpus("0-3").setOomScoreAdj(-997)
        .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("2MB").setLimit(4))
        .addHugepageLimits(HugepageLimit.newBuilder().setPageSize("1GB").setLimit(1))
        .putUnified("memory.high", "1G").build();
    LinuxContainerResources out = CriHookInterceptor.applyResources(base,
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.newBuilder()
            .setCpuQuota(-1).setCpusetCpus("4-7").setOomScoreAdj(500)
            .addHugepageLimits(io.cri4j.hook.koordinator.v1alpha1.HugepageLimit.newBuilder()
                .setPageSize("2MB").setLimit(8))
            .putUnified("io.weight", "default 100").build());
    assertThat(out.getCpuQuota()).isEqualTo(-1);
    assertThat(out.getCpusetCpus()).isEqualTo("4-7");
    assertThat(out.getOomScoreAdj()).isEqualTo(500);
    assertThat(out.getHugepageLimitsList()).extracting(HugepageLimit::getPageSize,
        HugepageLimit::getLimit).containsExactly(
            org.assertj.core.groups.Tuple.tuple("2MB", 8L),
            org.assertj.core.groups.Tuple.tuple("1GB", 1L));
    assertThat(out.getUnifiedMap()).containsEntry("memory.high", "1G")
        .containsEntry("io.weight", "default 100");
  }
}
