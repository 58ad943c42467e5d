package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookRejectedException;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * cri4j's own plugin stub ({@link NriPlugin}) connected to an {@link NriHost}: what only a plugin
 * of our own can do on demand (unsolicited updates and evictions, updates answered at Synchronize,
 * a validator's rejection) reaching the host, and the exact Synchronize content, split where the
 * state is over ttrpc's 4 MiB. NRI's Go plugins against the host: {@code NriHostGoPluginsIT}.
 */
class NriHostJavaPluginIT {

    @TempDir Path dir;

    private final RecordingHost host = new RecordingHost();
    private final BlockingQueue<String> registered = new LinkedBlockingQueue<>();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    private NriHost startHost() throws Exception {
        return startHost(NriHost.builder(dir.resolve("nri.sock")));
    }

    private NriHost startHost(NriHost.Builder builder) throws Exception {
        NriHost nri =
                builder.listener(
                                new NriHost.Listener() {
                                    @Override
                                    public void registered(
                                            String name, int index, Set<HookEvent> events) {
                                        registered.add(name);
                                    }
                                })
                        .build();
        toClose.add(0, nri);
        nri.start(host);
        return nri;
    }

    private NriPlugin plugin(NriHost nri, Hook hook, String name, int index) throws Exception {
        NriPlugin p =
                NriPlugin.builder(hook)
                        .socket(nri.socket())
                        .name(name)
                        .index(index)
                        .noReconnect()
                        .build();
        toClose.add(0, p);
        p.start();
        assertThat(registered.poll(10, TimeUnit.SECONDS)).isEqualTo(name);
        return p;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    private static PodSandbox pod(int i) {
        return PodSandbox.newBuilder()
                .setId("pod-" + i)
                .setName("p" + i)
                .setNamespace("ns")
                .build();
    }

    private static Container container(int i, int padding) {
        return Container.newBuilder()
                .setId("ctr-" + i)
                .setPodSandboxId("pod-" + (i % 3))
                .setName("c" + i)
                .putAnnotations("padding", "x".repeat(padding))
                .build();
    }

    @Test
    void synchronizeGivesThePluginTheHostsSnapshotAndItsUpdatesReachTheRuntimeBeforeItIsListed()
            throws Exception {
        host.snapshot =
                new RuntimeSnapshot(
                        List.of(pod(0), pod(1)), List.of(container(0, 10), container(1, 10)));
        AtomicReference<List<Object>> seen = new AtomicReference<>();
        NriHost nri = startHost();
        ContainerUpdate cpus =
                ContainerUpdate.newBuilder()
                        .setContainerId("ctr-1")
                        .setLinux(
                                LinuxContainerUpdate.newBuilder()
                                        .setResources(
                                                io.cri4j.hook.nri.v1alpha1.LinuxResources
                                                        .newBuilder()
                                                        .setCpu(
                                                                LinuxCPU.newBuilder()
                                                                        .setCpus("0"))))
                        .build();
        plugin(
                nri,
                new Hook() {
                    @Override
                    public List<ContainerUpdate> synchronize(
                            List<PodSandbox> pods, List<Container> containers) {
                        seen.set(List.of(pods, containers));
                        assertThat(host.requests).as("nothing applied before the answer").isEmpty();
                        return List.of(cpus);
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.none();
                    }
                },
                "syncer",
                30);
        assertThat(seen.get()).isEqualTo(List.of(host.snapshot.pods(), host.snapshot.containers()));
        assertThat(host.requests.poll())
                .isEqualTo(new RecordingHost.Request(List.of(cpus), List.of()));
        assertThat(nri.hooks()).extracting(AsyncHook::name).containsExactly("syncer");
        AsyncHook h = nri.hooks().get(0);
        assertThat(h.policy().index()).isEqualTo(30);
        assertThat(h.events()).containsExactly(HookEvent.CREATE_CONTAINER);
    }

    @Test
    void aStateOverFourMebibytesIsSplitAndThePluginSeesItWhole() throws Exception {
        List<Container> big = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            big.add(container(i, 512 * 1024));
        }
        host.snapshot = new RuntimeSnapshot(List.of(pod(0), pod(1), pod(2)), big);
        AtomicReference<List<Container>> seen = new AtomicReference<>();
        NriHost nri = startHost();
        plugin(
                nri,
                new Hook() {
                    @Override
                    public List<ContainerUpdate> synchronize(
                            List<PodSandbox> pods, List<Container> containers) {
                        seen.set(containers);
                        return List.of();
                    }

                    @Override
                    public void removeContainer(PodSandbox pod, Container container) {}
                },
                "big-sync",
                10);
        assertThat(seen.get()).isEqualTo(big);
    }

    @Test
    void unsolicitedUpdatesAndEvictionsReachTheRuntimeAndFailuresAnswerThePlugin()
            throws Exception {
        NriHost nri = startHost();
        CompletableFuture<HookConfiguration> cfg = new CompletableFuture<>();
        plugin(
                nri,
                new Hook() {
                    @Override
                    public void configure(HookConfiguration c) {
                        cfg.complete(c);
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container container) {
                        return HookResult.none();
                    }
                },
                "updater",
                40);
        HookConfiguration c = cfg.get(5, TimeUnit.SECONDS);
        assertThat(c.runtimeName()).isEqualTo("cri4j-test");
        assertThat(c.runtimeVersion()).isEqualTo("1.2.3");
        assertThat(c.requestTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.registrationTimeout()).isEqualTo(Duration.ofSeconds(5));

        ContainerUpdate ok = ContainerUpdate.newBuilder().setContainerId("ctr-ok").build();
        ContainerUpdate bad = ContainerUpdate.newBuilder().setContainerId("ctr-bad").build();
        ContainerEviction evict =
                ContainerEviction.newBuilder().setContainerId("ctr-x").setReason("too big").build();
        host.failing = List.of("ctr-bad");
        List<ContainerUpdate> failed =
                c.runtime()
                        .updateContainers(List.of(ok, bad), List.of(evict))
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS);
        assertThat(failed).containsExactly(bad);
        assertThat(host.requests.poll(5, TimeUnit.SECONDS))
                .isEqualTo(new RecordingHost.Request(List.of(ok, bad), List.of(evict)));

        host.broken = new IllegalStateException("the runtime is on fire");
        assertThatThrownBy(
                        () ->
                                c.runtime()
                                        .updateContainers(List.of(ok), List.of())
                                        .toCompletableFuture()
                                        .get(5, TimeUnit.SECONDS))
                .hasMessageContaining(
                        "the runtime could not apply the updates of plugin 40-updater: the runtime is on fire");
    }

    @Test
    void eachPluginIsToldItsOwnRequestTimeoutInConfigure() throws Exception {
        NriHost nri =
                startHost(
                        NriHost.builder(dir.resolve("nri.sock"))
                                .requestTimeout(Duration.ofSeconds(3))
                                .requestTimeout("tuned", Duration.ofMillis(3500))
                                .requestTimeout(45, Duration.ofMillis(700)));
        java.util.Map<String, CompletableFuture<HookConfiguration>> seen =
                new java.util.concurrent.ConcurrentHashMap<>();
        for (String name : List.of("tuned", "indexed", "plain")) {
            CompletableFuture<HookConfiguration> cfg = new CompletableFuture<>();
            seen.put(name, cfg);
            plugin(
                    nri,
                    new Hook() {
                        @Override
                        public String name() {
                            return name;
                        }

                        @Override
                        public void configure(HookConfiguration c) {
                            cfg.complete(c);
                        }

                        @Override
                        public HookResult createContainer(PodSandbox pod, Container container) {
                            return HookResult.none();
                        }
                    },
                    name,
                    name.equals("indexed") ? 45 : 46);
        }
        assertThat(seen.get("tuned").get(5, TimeUnit.SECONDS).requestTimeout())
                .isEqualTo(Duration.ofMillis(3500));
        assertThat(seen.get("indexed").get(5, TimeUnit.SECONDS).requestTimeout())
                .isEqualTo(Duration.ofMillis(700));
        assertThat(seen.get("plain").get(5, TimeUnit.SECONDS).requestTimeout())
                .isEqualTo(Duration.ofSeconds(3));
    }

    @Test
    void aPluginGoneBeforeTheCallIsSkippedUnlessItIsRequired() throws Exception {
        BlockingQueue<String> gone = new LinkedBlockingQueue<>();
        NriHost.Listener listener =
                new NriHost.Listener() {
                    @Override
                    public void registered(String name, int index, Set<HookEvent> events) {
                        registered.add(name);
                    }

                    @Override
                    public void disconnected(String name, Throwable cause) {
                        gone.add(name);
                    }
                };
        Hook adds =
                new Hook() {
                    @Override
                    public HookResult createContainer(PodSandbox pod, Container c) {
                        return HookResult.adjust(Adjustments.create().addEnv("K", "v").build());
                    }
                };
        for (boolean required : new boolean[] {false, true}) {
            String name = required ? "needed" : "optional";
            NriHost.Builder b = NriHost.builder(dir.resolve(name + ".sock")).listener(listener);
            if (required) {
                b.requirePlugin(name);
            }
            NriHost nri = b.build();
            toClose.add(0, nri);
            nri.start(host);
            NriPlugin p = plugin(nri, adds, name, 30);
            // a chain that listed the plugin before its connection closed (a call racing a plugin
            // going away)
            List<AsyncHook> listed = List.copyOf(nri.hooks());
            p.close();
            assertThat(gone.poll(10, TimeUnit.SECONDS)).isEqualTo(name);
            try (HookChain chain = HookChain.builder().source(() -> listed).build()) {
                var result = chain.createContainer(pod(0), container(0, 1)).toCompletableFuture();
                if (required) {
                    assertThatThrownBy(result::join)
                            .isInstanceOf(CompletionException.class)
                            .hasMessageContaining("is disconnected");
                } else {
                    assertThat(result.join().adjustment().getEnvList()).isEmpty();
                }
            }
        }
    }

    @Test
    void aValidatorsRejectionFailsTheEventNamingIt() throws Exception {
        NriHost nri = startHost();
        plugin(
                nri,
                new Hook() {
                    @Override
                    public void validateContainerAdjustment(
                            ValidateContainerAdjustmentRequest request) {
                        throw new IllegalArgumentException("no privileged containers here");
                    }
                },
                "strict",
                90);
        assertThat(nri.hooks().get(0).events())
                .containsExactly(HookEvent.VALIDATE_CONTAINER_ADJUSTMENT);
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            assertThatThrownBy(
                            () ->
                                    chain.createContainer(pod(0), container(0, 1))
                                            .toCompletableFuture()
                                            .join())
                    .isInstanceOf(CompletionException.class)
                    .cause()
                    .isInstanceOf(HookRejectedException.class)
                    .hasMessageContaining("validator \"strict\" rejected the container adjustment")
                    .hasMessageContaining("no privileged containers here");
        }
    }

    @Test
    void everyEventReachesAV012PluginAsItsOwnCallAndItsAnswersComeBack() throws Exception {
        NriHost nri = startHost();
        List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        ContainerUpdate other =
                ContainerUpdate.newBuilder()
                        .setContainerId("ctr-9")
                        .setLinux(
                                LinuxContainerUpdate.newBuilder()
                                        .setResources(
                                                io.cri4j.hook.nri.v1alpha1.LinuxResources
                                                        .newBuilder()
                                                        .setCpu(
                                                                LinuxCPU.newBuilder()
                                                                        .setShares(
                                                                                io.cri4j.hook.nri
                                                                                        .v1alpha1
                                                                                        .OptionalUInt64
                                                                                        .newBuilder()
                                                                                        .setValue(
                                                                                                512)))))
                        .build();
        plugin(
                nri,
                new Hook() {
                    @Override
                    public void runPodSandbox(PodSandbox pod) {
                        seen.add("RunPodSandbox " + pod.getName());
                    }

                    @Override
                    public void updatePodSandbox(
                            PodSandbox pod,
                            io.cri4j.hook.nri.v1alpha1.LinuxResources overhead,
                            io.cri4j.hook.nri.v1alpha1.LinuxResources resources) {
                        seen.add("UpdatePodSandbox " + resources.getCpu().getCpus());
                    }

                    @Override
                    public void postUpdatePodSandbox(PodSandbox pod) {
                        seen.add("PostUpdatePodSandbox");
                    }

                    @Override
                    public void startContainer(PodSandbox pod, Container c) {
                        seen.add("StartContainer " + c.getName());
                    }

                    @Override
                    public void postStartContainer(PodSandbox pod, Container c) {
                        seen.add("PostStartContainer");
                    }

                    @Override
                    public HookResult updateContainer(
                            PodSandbox pod,
                            Container c,
                            io.cri4j.hook.nri.v1alpha1.LinuxResources r) {
                        seen.add("UpdateContainer " + r.getCpu().getCpus());
                        return HookResult.builder()
                                .addUpdate(other)
                                .evict("ctr-8", "too hungry")
                                .build();
                    }

                    @Override
                    public void postUpdateContainer(PodSandbox pod, Container c) {
                        seen.add("PostUpdateContainer");
                    }

                    @Override
                    public HookResult stopContainer(PodSandbox pod, Container c) {
                        seen.add("StopContainer " + c.getName());
                        return HookResult.update(List.of(other));
                    }

                    @Override
                    public void removeContainer(PodSandbox pod, Container c) {
                        seen.add("RemoveContainer");
                    }

                    @Override
                    public void stopPodSandbox(PodSandbox pod) {
                        seen.add("StopPodSandbox");
                    }

                    @Override
                    public void removePodSandbox(PodSandbox pod) {
                        seen.add("RemovePodSandbox");
                    }
                },
                "all-events",
                10);
        io.cri4j.hook.nri.v1alpha1.LinuxResources cpus =
                io.cri4j.hook.nri.v1alpha1.LinuxResources.newBuilder()
                        .setCpu(LinuxCPU.newBuilder().setCpus("1"))
                        .build();
        PodSandbox pod = pod(0);
        Container ctr = container(0, 1);
        try (HookChain chain = HookChain.builder().source(nri::hooks).build()) {
            chain.runPodSandbox(pod).toCompletableFuture().get(5, TimeUnit.SECONDS);
            chain.updatePodSandbox(
                            pod,
                            io.cri4j.hook.nri.v1alpha1.LinuxResources.getDefaultInstance(),
                            cpus)
                    .toCompletableFuture()
                    .get(5, TimeUnit.SECONDS);
            chain.postUpdatePodSandbox(pod).toCompletableFuture().get(5, TimeUnit.SECONDS);
            chain.startContainer(pod, ctr).toCompletableFuture().get(5, TimeUnit.SECONDS);
            chain.postStartContainer(pod, ctr).toCompletableFuture().get(5, TimeUnit.SECONDS);
            HookResult updated =
                    chain.updateContainer(pod, ctr, cpus)
                            .toCompletableFuture()
                            .get(5, TimeUnit.SECONDS);
            assertThat(updated.updates()).contains(other);
            assertThat(updated.evictions())
                    .extracting(ContainerEviction::getContainerId)
                    .containsExactly("ctr-8");
            chain.postUpdateContainer(pod, ctr).toCompletableFuture().get(5, TimeUnit.SECONDS);
            assertThat(
                            chain.stopContainer(pod, ctr)
                                    .toCompletableFuture()
                                    .get(5, TimeUnit.SECONDS)
                                    .updates())
                    .containsExactly(other);
            chain.removeContainer(pod, ctr).toCompletableFuture().get(5, TimeUnit.SECONDS);
            chain.stopPodSandbox(pod).toCompletableFuture().get(5, TimeUnit.SECONDS);
            chain.removePodSandbox(pod).toCompletableFuture().get(5, TimeUnit.SECONDS);
        }
        assertThat(seen)
                .containsExactly(
                        "RunPodSandbox p0",
                        "UpdatePodSandbox 1",
                        "PostUpdatePodSandbox",
                        "StartContainer c0",
                        "PostStartContainer",
                        "UpdateContainer 1",
                        "PostUpdateContainer",
                        "StopContainer c0",
                        "RemoveContainer",
                        "StopPodSandbox",
                        "RemovePodSandbox");
    }
}
