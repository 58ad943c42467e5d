package io.cri4j.hook.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.LinuxContainerResources;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CheckpointStoreTest {

  @Test
  void readsCgroupParentAndResourcesFromContainerdsVerboseInfo() {
    String info = """
        {"pid": 4242, "config": {"metadata": {"name": "p"}, "linux": {
          "cgroup_parent": "/kubepods/burstable/pod-1",
          "resources": {"cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 256,
            "memory_limit_in_bytes": 1073741824, "cpuset_cpus": "0-1",
            "hugepage_limits": [{"page_size": "2MB", "limit": 4194304}],
            "unified": {"memory.high": "900M"}}}}}
        """;
    var linux = CheckpointStore.linuxOfVerboseConfig(Map.of("info", info));
    assertThat(linux).isNotNull();
    assertThat(linux.get("cgroup_parent").getAsString()).isEqualTo("/kubepods/burstable/pod-1");
    LinuxContainerResources r = CheckpointStore.resources(linux.getAsJsonObject("resources"));
    assertThat(r.getCpuPeriod()).isEqualTo(100000);
    assertThat(r.getCpuQuota()).isEqualTo(50000);
    assertThat(r.getCpuShares()).isEqualTo(256);
    assertThat(r.getMemoryLimitInBytes()).isEqualTo(1L << 30);
    assertThat(r.getCpusetCpus()).isEqualTo("0-1");
    assertThat(r.getHugepageLimits(0).getLimit()).isEqualTo(4194304);
    assertThat(r.getUnifiedMap()).containsEntry("memory.high", "900M");
  }

  @Test
  void readsTheEnvironmentInOrderFromContainerdsVerboseInfo() {
    String info = """
        {"config": {"metadata": {"name": "app"}, "envs": [{"key": "PATH", "value": "/bin"},
          {"key": "A", "value": "1"}, {"key": "EMPTY"}, {"value": "no key"}, 7]}}
        """;
    assertThat(CheckpointStore.envsOfVerboseConfig(Map.of("info", info)))
        .extracting(kv -> kv.getKey() + "=" + kv.getValue().toStringUtf8())
        .containsExactly("PATH=/bin", "A=1", "EMPTY=");
    assertThat(CheckpointStore.envsOfVerboseConfig(Map.of("info", "{\"config\": {}}"))).isEmpty();
    assertThat(CheckpointStore.envsOfVerboseConfig(Map.of())).isEmpty();
  }

  @Test
  void toleratesMissingOrForeignInfo() {
    assertThat(CheckpointStore.linuxOfVerboseConfig(Map.of())).isNull();
    assertThat(CheckpointStore.linuxOfVerboseConfig(Map.of("info", "not json {"))).isNull();
    assertThat(CheckpointStore.linuxOfVerboseConfig(Map.of("info", "{\"config\": 3}"))).isNull();
    assertThat(CheckpointStore.resources(null)).isEqualTo(LinuxContainerResources.getDefaultInstance());
  }

  @Test
  void removingAPodRemovesItsContainers() {
    CheckpointStore s = new CheckpointStore();
    s.putPod(new CheckpointStore.Pod("p1", io.cri4j.cri.v1.PodSandboxMetadata.getDefaultInstance(),
        "", Map.of(), Map.of(), "", LinuxContainerResources.getDefaultInstance()));
    s.putContainer(new CheckpointStore.Ctr("c1", "p1",
        io.cri4j.cri.v1.ContainerMetadata.getDefaultInstance(), Map.of(),
        LinuxContainerResources.getDefaultInstance()));
    s.putContainer(new CheckpointStore.Ctr("c2", "p2",
        io.cri4j.cri.v1.ContainerMetadata.getDefaultInstance(), Map.of(),
        LinuxContainerResources.getDefaultInstance()));
    s.removePod("p1");
    assertThat(s.pod("p1")).isEmpty();
    assertThat(s.container("c1")).isEmpty();
    assertThat(s.container("c2")).isPresent();
  }
}
