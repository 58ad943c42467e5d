package io.cri4j.proxy.internal.hooks;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.MountPropagation;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.PodSandboxConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CheckpointStoreTest {

    @Test
    void readsAPodConfigFromContainerdsVerboseInfo() {
        String info =
                """
        {"pid": 4242, "config": {"metadata": {"name": "p", "uid": "u", "namespace": "ns",
          "attempt": 1}, "labels": {"app": "web"}, "annotations": {"a": "1"},
          "linux": {"cgroup_parent": "/kubepods/burstable/pod-1",
          "security_context": {"namespace_options": {"network": 2}},
          "resources": {"cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 256,
            "memory_limit_in_bytes": 1073741824, "cpuset_cpus": "0-1",
            "hugepage_limits": [{"page_size": "2MB", "limit": 4194304}],
            "unified": {"memory.high": "900M"}}},
          "unknown_field": {"x": 1}, "port_mappings": null}}
        """;
        PodSandboxConfig.Builder b = PodSandboxConfig.newBuilder();
        CheckpointStore.merge(CheckpointStore.verboseConfig(Map.of("info", info)), b);
        PodSandboxConfig c = b.build();
        assertThat(c.getMetadata().getName()).isEqualTo("p");
        assertThat(c.getMetadata().getAttempt()).isEqualTo(1);
        assertThat(c.getLabelsMap()).containsExactly(Map.entry("app", "web"));
        assertThat(c.getLinux().getCgroupParent()).isEqualTo("/kubepods/burstable/pod-1");
        assertThat(c.getLinux().getSecurityContext().getNamespaceOptions().getNetwork())
                .isEqualTo(NamespaceMode.NODE);
        var r = c.getLinux().getResources();
        assertThat(r.getCpuPeriod()).isEqualTo(100000);
        assertThat(r.getCpuShares()).isEqualTo(256);
        assertThat(r.getMemoryLimitInBytes()).isEqualTo(1L << 30);
        assertThat(r.getHugepageLimits(0).getLimit()).isEqualTo(4194304);
        assertThat(r.getUnifiedMap()).containsEntry("memory.high", "900M");
    }

    @Test
    void readsAContainerConfigWithItsEnvironmentInOrder() {
        String info =
                """
        {"config": {"metadata": {"name": "app"}, "image": {"image": "busybox"},
          "command": ["sleep"], "args": ["3600"],
          "envs": [{"key": "PATH", "value": "/bin"}, {"key": "A", "value": "1"}, {"key": "EMPTY"},
            7, "x"],
          "mounts": [{"container_path": "/data", "host_path": "/tmp", "readonly": true,
            "propagation": 1}]}}
        """;
        ContainerConfig.Builder b = ContainerConfig.newBuilder();
        CheckpointStore.merge(CheckpointStore.verboseConfig(Map.of("info", info)), b);
        ContainerConfig c = b.build();
        assertThat(c.getEnvsList())
                .extracting(kv -> kv.getKey() + "=" + kv.getValue().toStringUtf8())
                .containsExactly("PATH=/bin", "A=1", "EMPTY=");
        assertThat(c.getCommandList()).containsExactly("sleep");
        assertThat(c.getImage().getImage()).isEqualTo("busybox");
        assertThat(c.getMounts(0).getReadonly()).isTrue();
        assertThat(c.getMounts(0).getPropagation())
                .isEqualTo(MountPropagation.PROPAGATION_HOST_TO_CONTAINER);
    }

    @Test
    void toleratesMissingOrForeignInfo() {
        assertThat(CheckpointStore.verboseConfig(Map.of())).isNull();
        assertThat(CheckpointStore.verboseConfig(Map.of("info", "not json {"))).isNull();
        assertThat(CheckpointStore.verboseConfig(Map.of("info", "{\"config\": 3}"))).isNull();
        ContainerConfig.Builder b = ContainerConfig.newBuilder();
        CheckpointStore.merge(
                com.google.gson.JsonParser.parseString(
                                "{\"metadata\": \"not an object\", \"command\": 5, \"labels\": []}")
                        .getAsJsonObject(),
                b);
        assertThat(b.build()).isEqualTo(ContainerConfig.getDefaultInstance());
    }

    @Test
    void removingAPodRemovesItsContainers() {
        CheckpointStore s = new CheckpointStore();
        s.putPod(new CheckpointStore.Pod("p1", PodSandboxConfig.getDefaultInstance(), ""));
        s.putContainer(
                new CheckpointStore.Ctr(
                        "c1",
                        "p1",
                        ContainerConfig.getDefaultInstance(),
                        ContainerState.CONTAINER_RUNNING));
        s.putContainer(
                new CheckpointStore.Ctr(
                        "c2",
                        "p2",
                        ContainerConfig.getDefaultInstance(),
                        ContainerState.CONTAINER_RUNNING));
        s.removePod("p1");
        assertThat(s.pod("p1")).isEmpty();
        assertThat(s.container("c1")).isEmpty();
        assertThat(s.container("c2")).isPresent();
    }
}
