package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java NRI plugins against containerd 2.3.4 (NRI v0.12.0) on a private NRI socket: what the plugin
 * asks for is checked in the OCI spec containerd created the container with.
 */
class NriPluginContainerd23IT {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd23WithNri().build();

    @TempDir static Path tmp;

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

    @Test
    void aDeviceCgroupRuleReachesTheContainersOciSpec() throws Exception {
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "tun-access";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.adjust(
                                Adjustments.create()
                                        .addEnv("CRI4J_RULES", "tun")
                                        .addLinuxDeviceCgroupRule(true, "c", 10L, 200L, "rwm")
                                        .build());
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(hook)
                        .socket(CONTAINERD.containerd().nriSocket())
                        .index(10)
                        .build()) {
            plugin.start();
            CONTAINERD
                    .containerd()
                    .awaitNriPluginRegistrations("10-tun-access", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("rules", Map.of());
            String id = pods.start(pod, "app");
            assertThat(pods.exec(id, "env")).contains("CRI4J_RULES=tun");

            // ContainerStatus (verbose): info.runtimeSpec.linux.resources.devices
            JsonObject spec = pods.spec(id);
            List<String> rules = new ArrayList<>();
            for (JsonElement e :
                    spec.getAsJsonObject("linux")
                            .getAsJsonObject("resources")
                            .getAsJsonArray("devices")) {
                JsonObject r = e.getAsJsonObject();
                rules.add(
                        r.get("allow").getAsBoolean()
                                + " "
                                + (r.has("type") ? r.get("type").getAsString() : "a")
                                + " "
                                + (r.has("major") ? r.get("major").getAsString() : "*")
                                + ":"
                                + (r.has("minor") ? r.get("minor").getAsString() : "*")
                                + " "
                                + r.get("access").getAsString());
            }
            assertThat(rules)
                    .as("the OCI spec's device cgroup rules")
                    .contains("true c 10:200 rwm");
        }
    }
}
