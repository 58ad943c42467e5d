package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.NriGoPlugin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The Java NRI plugin's cases that say something different per runtime, run on containerd 2.1.4
 * (NRI v0.8.0: {@code StateChange}, no version exchange; {@link NriPluginContainerdIT}) and on
 * containerd 2.3.4 (NRI v0.12.0: version exchange, one RPC per event; {@link
 * NriPluginContainerd23IT}). Each subclass brings its containerd.
 */
abstract class NriPluginRuntimeCases {

    /** The containerd of the subclass, started. */
    abstract LocalContainerd containerd();

    /** Pods on {@link #containerd()}. */
    abstract Pods pods();

    /** A scratch directory of the subclass. */
    abstract Path tmp();

    /** The containerd version, as it names itself in {@code Configure}. */
    abstract String runtimeVersion();

    /**
     * Checks in containerd's log that it called plugin {@code fullName} the way this runtime
     * calls plugins (with NRI v0.12: registered with the plugin's NRI version, no fallback to
     * {@code StateChange}).
     */
    abstract void assertCalledAsThisRuntimeCallsPlugins(String fullName) throws Exception;

    /** A hook that adds one env var at CreateContainer. */
    static Hook addEnv(String name, String key, String value) {
        return addEnv(name, key, value, HookPolicy.DEFAULT);
    }

    static Hook addEnv(String name, String key, String value, HookPolicy policy) {
        return new Hook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return policy;
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container container) {
                return HookResult.adjust(
                        ContainerAdjustment.newBuilder()
                                .addEnv(KeyValue.newBuilder().setKey(key).setValue(value))
                                .build());
            }
        };
    }

    /**
     * The same hook on both runtimes: it overrides two events NRI v0.10 added. containerd 2.1.4
     * (NRI v0.8) registers it without them (it would refuse the plugin for their bits), 2.3.4
     * calls both.
     */
    @Test
    void aHookWithEventsOfNewerNriRegistersOnBothAndGetsThemWhereTheRuntimeHasThem()
            throws Exception {
        List<String> validated = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<LinuxResources> podUpdated = new CompletableFuture<>();
        Hook skew =
                new Hook() {
                    @Override
                    public String name() {
                        return "skew";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.adjust(
                                Adjustments.create().addEnv("CRI4J_SKEW", "1").build());
                    }

                    @Override
                    public void updatePodSandbox(
                            PodSandbox pod, LinuxResources overhead, LinuxResources resources) {
                        if (pod.getName().equals("skew")) {
                            podUpdated.complete(resources);
                        }
                    }

                    @Override
                    public void validateContainerAdjustment(
                            ValidateContainerAdjustmentRequest request) {
                        validated.add(request.getContainer().getName());
                    }
                };
        assertThat(skew.events())
                .contains(
                        HookEvent.UPDATE_POD_SANDBOX,
                        HookEvent.VALIDATE_CONTAINER_ADJUSTMENT,
                        HookEvent.CREATE_CONTAINER);
        try (NriPlugin plugin =
                NriPlugin.builder(skew)
                        .socket(containerd().nriSocket())
                        .index(30)
                        .build()
                        .start()) {
            containerd().awaitNriPluginRegistrations("30-skew", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods().runPod("skew", Map.of());
            String id = pods().start(pod, "app");
            assertThat(pods().exec(id, "env")).contains("CRI4J_SKEW=1");
            String log = Files.readString(containerd().logFile());
            assertThat(log).doesNotContain("invalid plugin events");
            if (containerd().hasNri012()) {
                assertThat(validated).containsExactly("app");
                // kubelet's in-place pod resize
                pods().runtime
                        .updatePodSandboxResources(
                                io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest.newBuilder()
                                        .setPodSandboxId(pod.id())
                                        .setResources(
                                                io.cri4j.cri.v1.LinuxContainerResources.newBuilder()
                                                        .setCpuShares(512))
                                        .build());
                assertThat(podUpdated.get(10, TimeUnit.SECONDS).getCpu().getShares().getValue())
                        .isEqualTo(512);
            } else {
                // the next container is served too: the plugin is still registered, and the
                // newer events never came
                String second = pods().start(pod, "second");
                assertThat(pods().exec(second, "env")).contains("CRI4J_SKEW=1");
                assertThat(validated).isEmpty();
                assertThat(podUpdated).isNotDone();
            }
            assertThat(plugin.isRegistered()).isTrue();
        }
    }

    @Test
    void injectsEnvAnAnnotationABindMountAndACpuset() throws Exception {
        Path data = Files.createDirectories(tmp().resolve("data"));
        Files.writeString(data.resolve("hello"), "from the host\n");
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "inject";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.adjust(
                                Adjustments.create()
                                        .addEnv("CRI4J_INJECTED", "yes")
                                        .addAnnotation("cri4j.io/injected", "by-java")
                                        .addMount(
                                                "/nri-data", "bind", data.toString(), "rbind", "ro")
                                        .setLinuxCpuSetCpus("1")
                                        .build());
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(hook).socket(containerd().nriSocket()).index(10).build()) {
            plugin.start();
            containerd().awaitNriPluginRegistrations("10-inject", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods().runPod("inject", Map.of());
            String id = pods().start(pod, "app");

            assertThat(pods().exec(id, "env")).contains("CRI4J_INJECTED=yes");
            assertThat(pods().exec(id, "cat", "/nri-data/hello")).isEqualTo("from the host\n");
            assertThat(pods().cpusAllowed(id)).isEqualTo("1");

            // ContainerStatus (verbose): the OCI spec containerd created the container with
            var spec = pods().spec(id);
            assertThat(spec.getAsJsonObject("annotations").get("cri4j.io/injected").getAsString())
                    .isEqualTo("by-java");
            assertThat(spec.getAsJsonObject("process").getAsJsonArray("env").toString())
                    .contains("CRI4J_INJECTED=yes");
            assertThat(spec.getAsJsonArray("mounts").toString()).contains("/nri-data");
            assertThat(
                            spec.getAsJsonObject("linux")
                                    .getAsJsonObject("resources")
                                    .getAsJsonObject("cpu")
                                    .get("cpus")
                                    .getAsString())
                    .isEqualTo("1");
        }
    }

    @Test
    void receivesTheEventsContainerdSendsAsStateChangesAndDirectCalls() throws Exception {
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        Hook recorder =
                new Hook() {
                    @Override
                    public String name() {
                        return "recorder";
                    }

                    private void record(HookEvent e, PodSandbox pod) {
                        if (pod.getName().equals("lifecycle")) {
                            events.add(e.displayName());
                        }
                    }

                    @Override
                    public void runPodSandbox(PodSandbox pod) {
                        record(HookEvent.RUN_POD_SANDBOX, pod);
                    }

                    @Override
                    public void stopPodSandbox(PodSandbox pod) {
                        record(HookEvent.STOP_POD_SANDBOX, pod);
                    }

                    @Override
                    public void removePodSandbox(PodSandbox pod) {
                        record(HookEvent.REMOVE_POD_SANDBOX, pod);
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container c) {
                        record(HookEvent.CREATE_CONTAINER, pod);
                        return HookResult.none();
                    }

                    @Override
                    public void postCreateContainer(PodSandbox pod, Container c) {
                        record(HookEvent.POST_CREATE_CONTAINER, pod);
                    }

                    @Override
                    public void startContainer(PodSandbox pod, Container c) {
                        record(HookEvent.START_CONTAINER, pod);
                    }

                    @Override
                    public void postStartContainer(PodSandbox pod, Container c) {
                        record(HookEvent.POST_START_CONTAINER, pod);
                    }

                    @Override
                    public HookResult stopContainer(PodSandbox pod, Container c) {
                        record(HookEvent.STOP_CONTAINER, pod);
                        return HookResult.none();
                    }

                    @Override
                    public void removeContainer(PodSandbox pod, Container c) {
                        record(HookEvent.REMOVE_CONTAINER, pod);
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(recorder).socket(containerd().nriSocket()).build().start()) {
            containerd().awaitNriPluginRegistrations("50-recorder", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods().runPod("lifecycle", Map.of());
            String id = pods().start(pod, "app");
            pods().runtime
                    .stopContainer(
                            io.cri4j.cri.v1.StopContainerRequest.newBuilder()
                                    .setContainerId(id)
                                    .setTimeout(1)
                                    .build());
            pods().runtime
                    .removeContainer(
                            io.cri4j.cri.v1.RemoveContainerRequest.newBuilder()
                                    .setContainerId(id)
                                    .build());
            pods().runtime
                    .stopPodSandbox(
                            io.cri4j.cri.v1.StopPodSandboxRequest.newBuilder()
                                    .setPodSandboxId(pod.id())
                                    .build());
            pods().runtime
                    .removePodSandbox(
                            io.cri4j.cri.v1.RemovePodSandboxRequest.newBuilder()
                                    .setPodSandboxId(pod.id())
                                    .build());
            assertThat(events)
                    .containsSubsequence(
                            "RunPodSandbox",
                            "CreateContainer",
                            "PostCreateContainer",
                            "StartContainer",
                            "PostStartContainer",
                            "StopContainer",
                            "RemoveContainer",
                            "StopPodSandbox",
                            "RemovePodSandbox");
            assertCalledAsThisRuntimeCallsPlugins("50-recorder");
        }
    }

    @Test
    void runsWithNrisGoLoggerInIndexOrderAndBothEffectsArePresent() throws Exception {
        try (NriPlugin plugin =
                        NriPlugin.builder(addEnv("java-first", "CRI4J_JAVA", "10"))
                                .socket(containerd().nriSocket())
                                .index(10)
                                .build()
                                .start();
                NriGoPlugin logger = NriGoPlugin.logger(containerd(), 20, "-add-env", "CRI4J_GO")) {
            containerd().awaitNriPluginRegistrations("10-java-first", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods().runPod("both", Map.of());
            String id = pods().start(pod, "app");
            String env = pods().exec(id, "env");
            // nri-logger -add-env NAME sets NAME=logger-pid-PID
            assertThat(env).contains("CRI4J_JAVA=10").containsPattern("CRI4J_GO=logger-pid-\\d+");
            String log = Files.readString(containerd().logFile());
            String order = log.substring(log.lastIndexOf("plugin invocation order"));
            assertThat(order.indexOf("10-java-first"))
                    .isPositive()
                    .isLessThan(order.indexOf("20-nri-logger"));
        }
    }

    @Test
    void aHookThatCannotBeConfiguredFailsStartWithItsReason() {
        Hook broken =
                new Hook() {
                    @Override
                    public String name() {
                        return "broken";
                    }

                    @Override
                    public void configure(HookConfiguration configuration) {
                        throw new IllegalStateException("no license for this node");
                    }

                    @Override
                    public void startContainer(PodSandbox pod, Container container) {}
                };
        assertThatThrownBy(
                        () ->
                                NriPlugin.builder(broken)
                                        .socket(containerd().nriSocket())
                                        .build()
                                        .start())
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining("plugin 50-broken could not register with the runtime")
                .hasMessageContaining(
                        "hook 'broken' failed at Configure of the runtime containerd "
                                + runtimeVersion())
                .hasMessageContaining("no license for this node");
    }
}
