package io.cri4j.hook.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The lifecycle host's contracts (those of cri-tools' NRI conformance specs) against an in-memory
 * runtime and a hook that records the events it gets, without a real runtime.
 */
class LifecycleHostTest {

    /** A runtime in memory: the objects the adapter's steps make, as NRI views. */
    static final class MemoryRuntime implements LifecycleHost.Runtime {
        final Map<String, PodSandbox> pods = Collections.synchronizedMap(new LinkedHashMap<>());
        final Map<String, Container> containers =
                Collections.synchronizedMap(new LinkedHashMap<>());
        final List<String> undone = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger ids = new AtomicInteger();

        @Override
        public Optional<PodSandbox> pod(String id) {
            return Optional.ofNullable(pods.get(id));
        }

        @Override
        public Optional<Container> container(String id) {
            return Optional.ofNullable(containers.get(id));
        }

        @Override
        public RuntimeSnapshot snapshot() {
            synchronized (pods) {
                synchronized (containers) {
                    return new RuntimeSnapshot(
                            List.copyOf(pods.values()), List.copyOf(containers.values()));
                }
            }
        }

        @Override
        public CompletionStage<?> undoPodSandbox(String id) {
            undone.add(id);
            pods.remove(id);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> apply(
                List<ContainerUpdate> updates, List<ContainerEviction> evictions, String what) {
            return CompletableFuture.completedFuture(List.of());
        }

        void state(String id, ContainerState s) {
            containers.computeIfPresent(id, (k, c) -> c.toBuilder().setState(s).build());
        }
    }

    /** Records every event as "Event id"; runPodSandbox answers with what {@link #onRun} gives. */
    static final class Recorder implements AsyncHook {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        volatile java.util.function.Function<PodSandbox, CompletionStage<Void>> onRun =
                p -> CompletableFuture.completedFuture(null);

        @Override
        public String name() {
            return "recorder";
        }

        @Override
        public io.cri4j.hook.HookPolicy policy() {
            return new io.cri4j.hook.HookPolicy(
                    10, java.time.Duration.ofSeconds(5), io.cri4j.hook.FailurePolicy.FAIL);
        }

        @Override
        public CompletionStage<Void> runPodSandbox(PodSandbox pod) {
            events.add("RunPodSandbox " + pod.getId());
            return onRun.apply(pod);
        }

        @Override
        public CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
            events.add("StopPodSandbox " + pod.getId());
            return done();
        }

        @Override
        public CompletionStage<Void> removePodSandbox(PodSandbox pod) {
            events.add("RemovePodSandbox " + pod.getId());
            return done();
        }

        @Override
        public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
            events.add("CreateContainer " + pod.getId());
            return CompletableFuture.completedFuture(HookResult.none());
        }

        @Override
        public CompletionStage<Void> postCreateContainer(PodSandbox pod, Container c) {
            events.add("PostCreateContainer " + c.getId());
            return done();
        }

        @Override
        public CompletionStage<Void> startContainer(PodSandbox pod, Container c) {
            events.add("StartContainer " + c.getId());
            return done();
        }

        @Override
        public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container c) {
            events.add("StopContainer " + c.getId());
            return CompletableFuture.completedFuture(HookResult.none());
        }

        @Override
        public CompletionStage<Void> removeContainer(PodSandbox pod, Container c) {
            events.add("RemoveContainer " + c.getId());
            return done();
        }

        private static CompletionStage<Void> done() {
            return CompletableFuture.completedFuture(null);
        }
    }

    final MemoryRuntime runtime = new MemoryRuntime();
    final Recorder hook = new Recorder();
    final LifecycleHost host =
            LifecycleHost.builder()
                    .chain(HookChain.builder().add(hook).build())
                    .runtime(runtime)
                    .runtimeName("memory", "1")
                    .build();

    @AfterEach
    void close() {
        host.close();
    }

    // ---------------------------------------------------------------- adapter steps

    String runPod(String name) throws Exception {
        return await(
                host.runPodSandbox(
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(
                                        PodSandboxConfig.newBuilder()
                                                .setMetadata(
                                                        PodSandboxMetadata.newBuilder()
                                                                .setName(name)
                                                                .setUid(name)
                                                                .setNamespace("ns")))
                                .build(),
                        req -> {
                            String id = "pod" + runtime.ids.incrementAndGet();
                            runtime.pods.put(
                                    id,
                                    NriFromCri.pod(id, req.getConfig(), req.getRuntimeHandler()));
                            return CompletableFuture.completedFuture(id);
                        },
                        id -> id));
    }

    CompletionStage<String> create(String podId, String name) {
        return host.createContainer(
                podId,
                PodSandboxConfig.getDefaultInstance(),
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName(name))
                        .build(),
                null,
                config -> {
                    String id = "ctr" + runtime.ids.incrementAndGet();
                    runtime.containers.put(
                            id,
                            Container.newBuilder()
                                    .setId(id)
                                    .setPodSandboxId(podId)
                                    .setName(name)
                                    .setState(ContainerState.CONTAINER_CREATED)
                                    .build());
                    return CompletableFuture.completedFuture(id);
                },
                id -> id);
    }

    String start(String podId, String name) throws Exception {
        String id = await(create(podId, name));
        await(
                host.startContainer(
                        id,
                        () -> {
                            runtime.state(id, ContainerState.CONTAINER_RUNNING);
                            return CompletableFuture.completedFuture(id);
                        }));
        return id;
    }

    void stopContainer(String id) throws Exception {
        await(
                host.stopContainer(
                        id,
                        () -> {
                            runtime.state(id, ContainerState.CONTAINER_STOPPED);
                            return CompletableFuture.completedFuture(id);
                        }));
    }

    void removeContainer(String id) throws Exception {
        await(
                host.removeContainer(
                        id,
                        () -> {
                            runtime.containers.remove(id);
                            return CompletableFuture.completedFuture(id);
                        }));
    }

    void stopPod(String id) throws Exception {
        await(
                host.stopPodSandbox(
                        id,
                        () -> {
                            runtime.snapshot().containers().stream()
                                    .filter(c -> c.getPodSandboxId().equals(id))
                                    .forEach(
                                            c ->
                                                    runtime.state(
                                                            c.getId(),
                                                            ContainerState.CONTAINER_STOPPED));
                            return CompletableFuture.completedFuture(id);
                        }));
    }

    void removePod(String id) throws Exception {
        await(
                host.removePodSandbox(
                        id,
                        () -> {
                            runtime.pods.remove(id);
                            runtime.containers
                                    .values()
                                    .removeIf(c -> c.getPodSandboxId().equals(id));
                            return CompletableFuture.completedFuture(id);
                        }));
    }

    static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    static Status.Code failure(CompletionStage<?> stage) {
        try {
            stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return Status.fromThrowable(e.getCause()).getCode();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        throw new AssertionError("did not fail");
    }

    // ---------------------------------------------------------------- contracts

    @Test
    void aPodIsPendingHiddenAndRefusesContainersUntilItsRunPodSandboxHooksAreDone()
            throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<String> reached = new CompletableFuture<>();
        hook.onRun =
                p -> {
                    reached.complete(p.getId());
                    return release;
                };
        CompletableFuture<String> run =
                CompletableFuture.supplyAsync(() -> uncheck(this::runPodQuietly));
        String id = reached.get(10, TimeUnit.SECONDS);
        assertThat(host.isPending(id)).isTrue();
        assertThat(host.anyPending()).isTrue();
        assertThat(await(host.snapshot()).pods()).extracting(PodSandbox::getId).doesNotContain(id);
        assertThat(failure(create(id, "early"))).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(run).isNotDone();

        release.complete(null);
        assertThat(run.get(10, TimeUnit.SECONDS)).isEqualTo(id);
        assertThat(host.isPending(id)).isFalse();
        assertThat(await(host.snapshot()).pods()).extracting(PodSandbox::getId).contains(id);
        assertThat(await(create(id, "after"))).isNotEmpty();
    }

    private String runPodQuietly() throws Exception {
        return runPod("p");
    }

    interface Call<T> {
        T call() throws Exception;
    }

    static <T> T uncheck(Call<T> c) {
        try {
            return c.call();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    @Test
    void aPodItsHooksRefuseIsUndoneWithTheirStatusAndARetryWorks() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        hook.onRun =
                p ->
                        runs.incrementAndGet() == 1
                                ? CompletableFuture.failedFuture(
                                        new IllegalStateException("induced failure"))
                                : CompletableFuture.completedFuture(null);
        assertThatThrownBy(() -> runPod("p"))
                .hasCauseInstanceOf(StatusException.class)
                .hasMessageContaining("induced failure");
        assertThat(runtime.undone).containsExactly("pod1");
        assertThat(runtime.pods).isEmpty();
        assertThat(host.anyPending()).isFalse();

        String retried = runPod("p");
        assertThat(runtime.pods).containsOnlyKeys(retried);
        assertThat(host.isPending(retried)).isFalse();
    }

    @Test
    void aContainerTheRuntimeFailsToCreateIsAnnouncedStoppedAndRemoved() throws Exception {
        String pod = runPod("p");
        CompletionStage<String> failed =
                host.createContainer(
                        pod,
                        PodSandboxConfig.getDefaultInstance(),
                        ContainerConfig.getDefaultInstance(),
                        "draft",
                        c ->
                                CompletableFuture.failedFuture(
                                        Status.UNKNOWN.withDescription("no").asException()),
                        id -> id);
        assertThat(failure(failed)).isEqualTo(Status.Code.UNKNOWN);
        awaitEvents("RemoveContainer draft");
        assertThat(hook.events)
                .containsSubsequence(
                        "CreateContainer " + pod, "StopContainer draft", "RemoveContainer draft");
    }

    /** A sequence of calls and exits, and the events the hooks must see after the pod's run. */
    static Stream<Arguments> onceEach() {
        return Stream.of(
                Arguments.of(
                        "stop twice",
                        (Steps)
                                t -> {
                                    t.stopContainer(t.ctr);
                                    t.stopContainer(t.ctr);
                                },
                        List.of("StopContainer C")),
                Arguments.of(
                        "exit, then stop",
                        (Steps)
                                t -> {
                                    t.exit(t.ctr);
                                    t.stopContainer(t.ctr);
                                    t.exit(t.ctr);
                                },
                        List.of("StopContainer C")),
                Arguments.of(
                        "removed while running",
                        (Steps) t -> t.removeContainer(t.ctr),
                        List.of("StopContainer C", "RemoveContainer C")),
                Arguments.of(
                        "remove twice",
                        (Steps)
                                t -> {
                                    t.stopContainer(t.ctr);
                                    t.removeContainer(t.ctr);
                                    t.removeContainer(t.ctr);
                                },
                        List.of("StopContainer C", "RemoveContainer C")),
                Arguments.of(
                        "pod stopped twice",
                        (Steps)
                                t -> {
                                    t.stopPod(t.pod);
                                    t.stopPod(t.pod);
                                },
                        List.of("StopContainer C", "StopPodSandbox P")),
                Arguments.of(
                        "pod removed without a stop, twice",
                        (Steps)
                                t -> {
                                    t.removePod(t.pod);
                                    t.removePod(t.pod);
                                    t.stopPod(t.pod);
                                },
                        List.of(
                                "StopContainer C",
                                "StopPodSandbox P",
                                "RemoveContainer C",
                                "RemovePodSandbox P")),
                Arguments.of(
                        "exit, pod stop, pod remove",
                        (Steps)
                                t -> {
                                    t.exit(t.ctr);
                                    t.stopPod(t.pod);
                                    t.removePod(t.pod);
                                },
                        List.of(
                                "StopContainer C",
                                "StopPodSandbox P",
                                "RemoveContainer C",
                                "RemovePodSandbox P")));
    }

    /** Steps of one case on a pod P with a running container C. */
    interface Steps {
        void run(LifecycleHostTest t) throws Exception;
    }

    String pod;
    String ctr;

    void exit(String id) throws Exception {
        runtime.state(id, ContainerState.CONTAINER_STOPPED);
        await(host.containerExited(id));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("onceEach")
    void stopsAndRemovesReachTheHooksOnceEach(String name, Steps steps, List<String> expected)
            throws Exception {
        pod = runPod("p");
        ctr = start(pod, "c");
        hook.events.clear();
        steps.run(this);
        assertThat(hook.events)
                .containsExactlyElementsOf(
                        expected.stream()
                                .map(e -> e.replace(" C", " " + ctr).replace(" P", " " + pod))
                                .toList());
    }

    @Test
    void aHookRegistersAfterTheEventsInProgressAndBeforeTheNextOnes() throws Exception {
        String pod = runPod("p");
        CompletableFuture<Void> release = new CompletableFuture<>();
        hook.onRun = p -> release;
        CompletableFuture<String> slowPod =
                CompletableFuture.supplyAsync(() -> uncheck(this::runPodQuietly));
        awaitEvents("RunPodSandbox pod2");

        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> registered = new CompletableFuture<>();
        CompletionStage<Void> registration =
                host.register(
                        snapshot -> {
                            snapshot.pods().forEach(p -> seen.add(p.getId()));
                            snapshot.containers().forEach(c -> seen.add(c.getId()));
                            return registered;
                        });
        // the pod whose hooks run is an event in progress: the registration waits for it
        assertThat(seen).isEmpty();
        CompletionStage<String> during = create(pod, "during");
        assertThat(during.toCompletableFuture()).isNotDone();

        release.complete(null);
        assertThat(slowPod.get(10, TimeUnit.SECONDS)).isEqualTo("pod2");
        // the registration has its snapshot, the container created meanwhile waits for it
        assertThat(seen).containsExactly(pod, "pod2");
        assertThat(during.toCompletableFuture()).isNotDone();
        registered.complete(null);
        await(registration);
        String created = await(during);
        assertThat(runtime.containers).containsKey(created);
    }

    @Test
    void aContainerIsNotStartedWhileItsCreateContainerHooksRun() throws Exception {
        String pod = runPod("p");
        CompletableFuture<Void> release = new CompletableFuture<>();
        AsyncHook slow =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "slow";
                    }

                    @Override
                    public CompletionStage<Void> postCreateContainer(PodSandbox p, Container c) {
                        return release;
                    }
                };
        try (LifecycleHost h =
                LifecycleHost.builder()
                        .chain(HookChain.builder().add(slow).build())
                        .runtime(runtime)
                        .build()) {
            CompletionStage<String> creating =
                    h.createContainer(
                            pod,
                            PodSandboxConfig.getDefaultInstance(),
                            ContainerConfig.getDefaultInstance(),
                            "c9",
                            c -> {
                                runtime.containers.put(
                                        "c9",
                                        Container.newBuilder()
                                                .setId("c9")
                                                .setPodSandboxId(pod)
                                                .build());
                                return CompletableFuture.completedFuture("c9");
                            },
                            id -> id);
            assertThat(
                            failure(
                                    h.startContainer(
                                            "c9", () -> CompletableFuture.completedFuture("c9"))))
                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
            release.complete(null);
            assertThat(await(creating)).isEqualTo("c9");
            assertThat(await(h.startContainer("c9", () -> CompletableFuture.completedFuture("ok"))))
                    .isEqualTo("ok");
        }
    }

    private void awaitEvents(String event) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!hook.events.contains(event)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no " + event + " in " + hook.events);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
    }
}
