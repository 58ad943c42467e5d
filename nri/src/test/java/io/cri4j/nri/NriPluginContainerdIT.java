package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.ContainerAdjustment;
import io.cri4j.nri.api.KeyValue;
import io.cri4j.nri.api.LinuxCPU;
import io.cri4j.nri.api.LinuxContainerAdjustment;
import io.cri4j.nri.api.LinuxResources;
import io.cri4j.nri.api.Mount;
import io.cri4j.nri.api.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.LocalContainerd;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java NRI plugins against the real peer: containerd 2.1.4 (NRI v0.8.0) on a private NRI socket.
 * What the plugin asks for is checked inside the container and in what containerd reports.
 */
class NriPluginContainerdIT {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD = ContainerdExtension.builder().containerd2WithNri().build();

    @TempDir
    static Path tmp;

    static Pods pods;

    @BeforeAll
    static void pods() {
        pods = new Pods(CONTAINERD.containerd(), tmp);
    }

    @AfterAll
    static void closePods() throws Exception {
        if (pods != null) {
            pods.close();
        }
    }

    private static LocalContainerd containerd() {
        return CONTAINERD.containerd();
    }

    @Test
    void injectsEnvAnAnnotationABindMountAndACpuset() throws Exception {
        Path data = Files.createDirectories(tmp.resolve("data"));
        Files.writeString(data.resolve("hello"), "from the host\n");
        Hook hook = new Hook() {
            @Override
            public String name() {
                return "inject";
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container container) {
                return HookResult.adjust(ContainerAdjustment.newBuilder()
                        .addEnv(KeyValue.newBuilder().setKey("CRI4J_INJECTED").setValue("yes"))
                        .putAnnotations("cri4j.io/injected", "by-java")
                        .addMounts(Mount.newBuilder().setDestination("/nri-data").setType("bind")
                                .setSource(data.toString()).addOptions("rbind").addOptions("ro"))
                        .setLinux(LinuxContainerAdjustment.newBuilder().setResources(
                                LinuxResources.newBuilder().setCpu(LinuxCPU.newBuilder().setCpus("1"))))
                        .build());
            }
        };
        try (NriPlugin plugin = NriPlugin.builder(hook).socket(containerd().nriSocket()).index(10).build()) {
            plugin.start();
            containerd().awaitNriPluginRegistrations("10-inject", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("inject", Map.of());
            String id = pods.start(pod, "app");

            assertThat(pods.exec(id, "env")).contains("CRI4J_INJECTED=yes");
            assertThat(pods.exec(id, "cat", "/nri-data/hello")).isEqualTo("from the host\n");
            assertThat(pods.cpusAllowed(id)).isEqualTo("1");

            // ContainerStatus (verbose): the OCI spec containerd created the container with
            var spec = pods.spec(id);
            assertThat(spec.getAsJsonObject("annotations").get("cri4j.io/injected").getAsString())
                    .isEqualTo("by-java");
            assertThat(spec.getAsJsonObject("process").getAsJsonArray("env").toString())
                    .contains("CRI4J_INJECTED=yes");
            assertThat(spec.getAsJsonArray("mounts").toString()).contains("/nri-data");
            assertThat(spec.getAsJsonObject("linux").getAsJsonObject("resources")
                    .getAsJsonObject("cpu").get("cpus").getAsString()).isEqualTo("1");
        }
    }
}
