package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.real.ContainerdExtension;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.NriGoPlugin;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java NRI plugins against the real peer: containerd 2.1.4 (NRI v0.8.0) on a private NRI socket.
 * What the plugin asks for is checked inside the container and in what containerd reports. The
 * cases that differ per runtime ({@link NriPluginRuntimeCases}) run on containerd 2.3.4 too
 * ({@link NriPluginContainerd23IT}); the ones here do the same on both.
 */
class NriPluginContainerdIT extends NriPluginRuntimeCases {

    @RegisterExtension
    static final ContainerdExtension CONTAINERD =
            ContainerdExtension.builder().containerd2WithNri().build();

    @TempDir static Path tmp;

    static Pods pods;

    @BeforeAll
    static void startPods() {
        pods = new Pods(CONTAINERD.containerd(), tmp);
    }

    @AfterAll
    static void closePods() throws Exception {
        if (pods != null) {
            pods.close();
        }
    }

    @Override
    LocalContainerd containerd() {
        return CONTAINERD.containerd();
    }

    @Override
    Pods pods() {
        return pods;
    }

    @Override
    Path tmp() {
        return tmp;
    }

    @Override
    String runtimeVersion() {
        return "2.1.4";
    }

    @Override
    void assertCalledAsThisRuntimeCallsPlugins(String fullName) {
        // NRI v0.8: events without an answer come as StateChange, which the hook saw as its
        // methods; nothing in containerd 2.1.4's log tells the two forms apart
    }

    @Test
    void synchronizeListsThePodsAndContainersCreatedBeforeThePluginStarted() throws Exception {
        Pods.Pod pod = pods.runPod("early", Map.of());
        String running = pods.start(pod, "running");
        String created = pods.create(pod, "created", Map.of());
        CompletableFuture<List<Container>> seen = new CompletableFuture<>();
        List<String> podIds = Collections.synchronizedList(new ArrayList<>());
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "sync";
                    }

                    @Override
                    public List<ContainerUpdate> synchronize(
                            List<PodSandbox> ps, List<Container> cs) {
                        ps.forEach(p -> podIds.add(p.getId()));
                        seen.complete(cs);
                        return List.of();
                    }

                    @Override
                    public void startContainer(PodSandbox p, Container c) {}
                };
        try (NriPlugin plugin =
                NriPlugin.builder(hook).socket(containerd().nriSocket()).build().start()) {
            List<Container> containers = seen.get(10, TimeUnit.SECONDS);
            assertThat(podIds).contains(pod.id());
            assertThat(containers)
                    .filteredOn(c -> c.getId().equals(running))
                    .singleElement()
                    .satisfies(
                            c -> {
                                assertThat(c.getState())
                                        .isEqualTo(ContainerState.CONTAINER_RUNNING);
                                assertThat(c.getPodSandboxId()).isEqualTo(pod.id());
                                assertThat(c.getName()).isEqualTo("running");
                                assertThat(c.getArgsList()).containsExactly("sleep", "3600");
                            });
            assertThat(containers)
                    .filteredOn(c -> c.getId().equals(created))
                    .singleElement()
                    .extracting(Container::getState)
                    .isEqualTo(ContainerState.CONTAINER_CREATED);
        }
    }

    @Test
    void anUnsolicitedUpdateChangesARunningContainersCpuset() throws Exception {
        Pods.Pod pod = pods.runPod("update", Map.of());
        String id = pods.start(pod, "app");
        assertThat(pods.cpusAllowed(id)).isEqualTo("0-1");
        CompletableFuture<RuntimeHandle> handle = new CompletableFuture<>();
        Hook hook =
                new Hook() {
                    @Override
                    public String name() {
                        return "updater";
                    }

                    @Override
                    public void configure(HookConfiguration configuration) {
                        handle.complete(configuration.runtime());
                    }

                    @Override
                    public void postStartContainer(PodSandbox p, Container c) {}
                };
        try (NriPlugin plugin =
                NriPlugin.builder(hook).socket(containerd().nriSocket()).build().start()) {
            containerd().awaitNriPluginRegistrations("50-updater", 1, Duration.ofSeconds(10));
            List<ContainerUpdate> failed =
                    handle.get(10, TimeUnit.SECONDS)
                            .updateContainers(
                                    List.of(
                                            ContainerUpdate.newBuilder()
                                                    .setContainerId(id)
                                                    .setLinux(
                                                            LinuxContainerUpdate.newBuilder()
                                                                    .setResources(
                                                                            LinuxResources
                                                                                    .newBuilder()
                                                                                    .setCpu(
                                                                                            LinuxCPU
                                                                                                    .newBuilder()
                                                                                                    .setCpus(
                                                                                                            "0"))))
                                                    .build()),
                                    List.of())
                            .toCompletableFuture()
                            .get(30, TimeUnit.SECONDS);
            assertThat(failed).isEmpty();
            assertThat(pods.cpusAllowed(id)).isEqualTo("0");
        }
    }

    @Test
    void reconnectsAfterContainerdIsKilledAndServesTheNextContainer() throws Exception {
        CountDownLatch disconnected = new CountDownLatch(1);
        try (NriPlugin plugin =
                NriPlugin.builder(addEnv("survivor", "CRI4J_SURVIVOR", "1"))
                        .socket(containerd().nriSocket())
                        .reconnect(Duration.ofMillis(200), Duration.ofSeconds(2))
                        .listener(
                                new NriPlugin.Listener() {
                                    @Override
                                    public void disconnected(Throwable cause) {
                                        disconnected.countDown();
                                    }
                                })
                        .build()
                        .start()) {
            containerd().awaitNriPluginRegistrations("50-survivor", 1, Duration.ofSeconds(10));
            int before = containerd().nriPluginRegistrations("50-survivor");
            containerd().restart();
            assertThat(disconnected.await(10, TimeUnit.SECONDS)).isTrue();
            containerd()
                    .awaitNriPluginRegistrations("50-survivor", before + 1, Duration.ofSeconds(20));
            assertThat(plugin.isRegistered()).isTrue();
            Pods.Pod pod = pods.runPod("after-restart", Map.of());
            String id = pods.start(pod, "app");
            assertThat(pods.exec(id, "env")).contains("CRI4J_SURVIVOR=1");
        }
    }

    @Test
    void
            aHookSlowerThanTheRuntimesTimeoutIsAnsweredForInTimeAndTheNextContainerIsServedWhileItStillBlocks()
                    throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch firstReturned = new CountDownLatch(1);
        List<String> calls = Collections.synchronizedList(new ArrayList<>());
        Hook slowOnce =
                new Hook() {
                    @Override
                    public String name() {
                        return "slow";
                    }

                    @Override
                    public HookPolicy policy() {
                        return HookPolicy.DEFAULT.withTimeout(Duration.ofSeconds(30));
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container)
                            throws Exception {
                        calls.add(container.getName());
                        if (container.getName().equals("first")) {
                            // far beyond the runtime's 2 s, and deaf to the interrupt when the
                            // plugin gives up
                            while (true) {
                                try {
                                    release.await();
                                    break;
                                } catch (InterruptedException ignored) {
                                    // keep blocking
                                }
                            }
                            firstReturned.countDown();
                        }
                        return HookResult.adjust(
                                ContainerAdjustment.newBuilder()
                                        .addEnv(
                                                KeyValue.newBuilder()
                                                        .setKey("CRI4J_SLOW")
                                                        .setValue("served"))
                                        .build());
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(slowOnce).socket(containerd().nriSocket()).build().start()) {
            containerd().awaitNriPluginRegistrations("50-slow", 1, Duration.ofSeconds(10));
            int registrations = containerd().nriPluginRegistrations("50-slow");
            Pods.Pod pod = pods.runPod("slow", Map.of());
            String first = pods.start(pod, "first");
            assertThat(pods.exec(first, "env")).doesNotContain("CRI4J_SLOW");
            String second = pods.start(pod, "second");
            assertThat(pods.exec(second, "env")).contains("CRI4J_SLOW=served");
            assertThat(firstReturned.getCount())
                    .as("the first call still blocks its thread")
                    .isEqualTo(1);
            assertThat(calls).containsExactly("first", "second");
            assertThat(containerd().nriPluginRegistrations("50-slow"))
                    .as("containerd kept the plugin: no reconnection")
                    .isEqualTo(registrations);
            assertThat(plugin.isRegistered()).isTrue();
        } finally {
            release.countDown();
        }
    }

    @Test
    void aFailingLateHookFailsTheContainerWithAnErrorNamingIt() throws Exception {
        Hook stuck =
                new Hook() {
                    @Override
                    public String name() {
                        return "stuck";
                    }

                    @Override
                    public HookPolicy policy() {
                        return HookPolicy.DEFAULT
                                .withTimeout(Duration.ofMillis(500))
                                .withFailurePolicy(FailurePolicy.FAIL);
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container)
                            throws Exception {
                        new CountDownLatch(1).await();
                        return HookResult.none();
                    }
                };
        try (NriPlugin plugin =
                NriPlugin.builder(stuck).socket(containerd().nriSocket()).build().start()) {
            containerd().awaitNriPluginRegistrations("50-stuck", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("stuck", Map.of());
            assertThatThrownBy(() -> pods.create(pod, "never", Map.of()))
                    .isInstanceOf(StatusRuntimeException.class)
                    .hasMessageContaining("hook 'stuck' did not answer CreateContainer")
                    .hasMessageContaining("nri-test/stuck/never");
        }
    }

    @Test
    void twoPluginsSettingTheSameEnvFailTheContainerWithContainerdsConflictNamingBoth()
            throws Exception {
        try (NriPlugin plugin =
                        NriPlugin.builder(addEnv("java-conflict", "CRI4J_OWNER", "java"))
                                .socket(containerd().nriSocket())
                                .index(10)
                                .build()
                                .start();
                NriGoPlugin logger =
                        NriGoPlugin.logger(containerd(), 20, "-add-env", "CRI4J_OWNER")) {
            containerd().awaitNriPluginRegistrations("10-java-conflict", 1, Duration.ofSeconds(10));
            Pods.Pod pod = pods.runPod("conflict", Map.of());
            assertThatThrownBy(() -> pods.create(pod, "app", Map.of()))
                    .isInstanceOf(StatusRuntimeException.class)
                    .hasMessageContaining("10-java-conflict")
                    .hasMessageContaining("20-nri-logger")
                    .hasMessageContaining("CRI4J_OWNER");
        }
    }
}
