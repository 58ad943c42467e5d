package io.cri4j.testing.fake;

import static io.cri4j.testing.fake.FakeHooksIT.IMAGE;
import static io.cri4j.testing.fake.FakeHooksIT.create;
import static io.cri4j.testing.fake.FakeHooksIT.runPod;
import static io.cri4j.testing.fake.FakeHooksIT.status;
import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ExecSyncRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.conformance.ContainerInfo;
import io.grpc.ManagedChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fake runtime hosting a {@link HookProvider} (hooks that come and go, as external NRI plugins
 * do): the provider gets the fake's identity, state and update path, and its hooks run in one chain
 * with the in-process hooks. The real provider, {@code NriHost} with NRI's Go plugins, is tested in
 * module nri ({@code NriHostFakeRuntimeIT}); cri-testing does not depend on nri.
 */
class FakeHookProviderIT {

    @TempDir Path dir;

    /** A provider whose hooks a test sets. */
    static final class TestProvider implements HookProvider {
        volatile HookHost host;
        volatile List<AsyncHook> hooks = List.of();
        volatile boolean closed;

        @Override
        public void start(HookHost h) {
            this.host = h;
        }

        @Override
        public List<AsyncHook> hooks() {
            return hooks;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    static AsyncHook envHook(String name, int index, String key) {
        return new AsyncHook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return HookPolicy.DEFAULT.withIndex(index);
            }

            @Override
            public Set<HookEvent> events() {
                return Set.of(HookEvent.CREATE_CONTAINER);
            }

            @Override
            public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
                return CompletableFuture.completedFuture(
                        HookResult.adjust(
                                Adjustments.create()
                                        .addEnv(key, name)
                                        .addAnnotation("provided-by", name)
                                        .build()));
            }
        };
    }

    @Test
    void aProvidersHooksRunWithTheInProcessHooksAndItsHostIsTheFake() throws Exception {
        TestProvider provider = new TestProvider();
        AtomicReference<List<String>> seenByInProcess = new AtomicReference<>();
        Hook inProcess =
                new Hook() {
                    @Override
                    public String name() {
                        return "in-process";
                    }

                    @Override
                    public HookResult createContainer(PodSandbox pod, Container c) {
                        seenByInProcess.set(c.getEnvList());
                        return HookResult.none();
                    }
                };
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("cri.sock")))
                        .runtime("fake-with-plugins", "9.9")
                        .addHook(inProcess)
                        .addHookProvider(provider)
                        .build()
                        .start()) {
            fake.runtime().addImage(IMAGE);
            ManagedChannel ch = fake.newChannel();
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                        RuntimeServiceGrpc.newBlockingStub(ch)
                                .withDeadlineAfter(20, TimeUnit.SECONDS);
                assertThat(provider.host.runtimeName()).isEqualTo("fake-with-plugins");
                assertThat(provider.host.runtimeVersion()).isEqualTo("9.9");

                String pod = runPod(rt, "web");
                String before = create(rt, pod, "web", "before");
                assertThat(ContainerInfo.read(rt, before).runtimeSpec().annotations())
                        .doesNotContainKey("provided-by");

                // a plugin comes: index 10 runs before the in-process hook (index 50), which sees
                // its env
                provider.hooks = List.of(envHook("plugin-a", 10, "FROM_PLUGIN"));
                String app = create(rt, pod, "web", "app");
                rt.startContainer(StartContainerRequest.newBuilder().setContainerId(app).build());
                assertThat(ContainerInfo.read(rt, app).runtimeSpec().annotations())
                        .containsEntry("provided-by", "plugin-a");
                String env =
                        rt.execSync(
                                        ExecSyncRequest.newBuilder()
                                                .setContainerId(app)
                                                .addCmd("env")
                                                .setTimeout(10)
                                                .build())
                                .getStdout()
                                .toString(StandardCharsets.UTF_8);
                assertThat(env).contains("FROM_PLUGIN=plugin-a");
                assertThat(seenByInProcess.get()).contains("FROM_PLUGIN=plugin-a");

                // the snapshot a new plugin is synchronized with is the fake's state in NRI's model
                RuntimeSnapshot snap =
                        provider.host.snapshot().toCompletableFuture().get(5, TimeUnit.SECONDS);
                assertThat(snap.pods())
                        .extracting(PodSandbox::getId, PodSandbox::getName)
                        .containsExactly(org.assertj.core.groups.Tuple.tuple(pod, "web"));
                assertThat(snap.containers())
                        .extracting(Container::getId)
                        .containsExactlyInAnyOrder(before, app);
                assertThat(snap.containers())
                        .filteredOn(c -> c.getId().equals(app))
                        .singleElement()
                        .satisfies(
                                c -> {
                                    assertThat(c.getState())
                                            .isEqualTo(
                                                    io.cri4j.hook.nri.v1alpha1.ContainerState
                                                            .CONTAINER_RUNNING);
                                    assertThat(c.getEnvList()).contains("FROM_PLUGIN=plugin-a");
                                });

                // a plugin's own updates and evictions change the fake's containers
                rt.startContainer(
                        StartContainerRequest.newBuilder().setContainerId(before).build());
                ContainerUpdate cpus =
                        ContainerUpdate.newBuilder()
                                .setContainerId(app)
                                .setLinux(
                                        LinuxContainerUpdate.newBuilder()
                                                .setResources(
                                                        LinuxResources.newBuilder()
                                                                .setCpu(
                                                                        LinuxCPU.newBuilder()
                                                                                .setCpus("0-1"))))
                                .build();
                List<ContainerUpdate> failed =
                        provider.host
                                .runtime()
                                .updateContainers(
                                        List.of(cpus),
                                        List.of(
                                                ContainerEviction.newBuilder()
                                                        .setContainerId(before)
                                                        .setReason("test")
                                                        .build()))
                                .toCompletableFuture()
                                .get(5, TimeUnit.SECONDS);
                assertThat(failed).isEmpty();
                assertThat(status(rt, app).getResources().getLinux().getCpusetCpus())
                        .isEqualTo("0-1");
                assertThat(status(rt, before).getState())
                        .isEqualTo(ContainerState.CONTAINER_EXITED);

                // a plugin named like an in-process hook is not run; a plugin that goes no longer
                // adjusts
                provider.hooks = List.of(envHook("in-process", 5, "IMPOSTOR"));
                String after = create(rt, pod, "web", "after");
                assertThat(ContainerInfo.read(rt, after).runtimeSpec().annotations())
                        .doesNotContainKey("provided-by");
                provider.hooks = List.of();
                String last = create(rt, pod, "web", "last");
                assertThat(ContainerInfo.read(rt, last).runtimeSpec().annotations())
                        .doesNotContainKey("provided-by");
            } finally {
                ch.shutdownNow();
            }
            assertThat(provider.closed).isFalse();
        }
        assertThat(provider.closed).as("the fake closes the providers it started").isTrue();
    }

    @Test
    void theExtensionStartsAFreshProviderForEachFake() throws Exception {
        List<TestProvider> made = new java.util.concurrent.CopyOnWriteArrayList<>();
        FakeCriExtension ext =
                FakeCriExtension.inProcess()
                        .addHookProvider(
                                () -> {
                                    TestProvider p = new TestProvider();
                                    p.hooks = List.of(envHook("from-extension", 20, "EXT"));
                                    made.add(p);
                                    return p;
                                });
        ext.beforeEach(null);
        try {
            ext.fakeRuntime().addImage(IMAGE);
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt =
                    ext.runtimeService().withDeadlineAfter(20, TimeUnit.SECONDS);
            String pod = runPod(rt, "ext");
            String c = create(rt, pod, "ext", "app");
            assertThat(ContainerInfo.read(rt, c).runtimeSpec().annotations())
                    .containsEntry("provided-by", "from-extension");
            assertThat(made).hasSize(1);
            assertThat(made.get(0).host).isNotNull();
        } finally {
            ext.afterEach(null);
        }
        assertThat(made.get(0).closed).isTrue();
    }
}
