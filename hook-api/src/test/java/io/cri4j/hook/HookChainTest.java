package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.LinuxContainer;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HookChainTest {

    static final PodSandbox POD =
            PodSandbox.newBuilder().setId("pod1").setName("web-pod").putLabels("team", "a").build();
    static final Container CTR =
            Container.newBuilder()
                    .setId("c1")
                    .setName("web")
                    .setPodSandboxId("pod1")
                    .addEnv("PATH=/bin")
                    .addEnv("KEEP=1")
                    .putAnnotations("orig", "x")
                    .addMounts(
                            Mount.newBuilder()
                                    .setDestination("/data")
                                    .setSource("/srv")
                                    .setType("bind"))
                    .setLinux(
                            LinuxContainer.newBuilder()
                                    .setResources(
                                            LinuxResources.newBuilder()
                                                    .setCpu(
                                                            io.cri4j.hook.nri.v1alpha1.LinuxCPU
                                                                    .newBuilder()
                                                                    .setShares(
                                                                            io.cri4j.hook.nri
                                                                                    .v1alpha1
                                                                                    .OptionalUInt64
                                                                                    .newBuilder()
                                                                                    .setValue(
                                                                                            1024)))))
                    .build();
    static final HookPolicy FAIL = HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL);
    static final HookPolicy IGNORE = HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.IGNORE);

    private final List<HookChain> chains = new ArrayList<>();

    @AfterEach
    void closeChains() {
        chains.forEach(HookChain::close);
    }

    private HookChain chain(Object... hooks) {
        HookChain c = HookChain.builder().addAll(List.of(hooks)).build();
        chains.add(c);
        return c;
    }

    static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(20, TimeUnit.SECONDS);
    }

    static Throwable failure(CompletionStage<?> stage) throws Exception {
        try {
            stage.toCompletableFuture().get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("the stage did not fail");
    }

    /** A blocking hook answering CreateContainer with a function of the container it sees. */
    static Hook creating(String name, HookPolicy policy, Function<Container, HookResult> answer) {
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
            public HookResult createContainer(PodSandbox pod, Container c) {
                return answer.apply(c);
            }
        };
    }

    /** An asynchronous hook answering CreateContainer at once. */
    static AsyncHook creatingAsync(
            String name, HookPolicy policy, Function<Container, HookResult> answer) {
        return new AsyncHook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return policy;
            }

            @Override
            public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
                return CompletableFuture.completedFuture(answer.apply(c));
            }
        };
    }

    static HookResult adjust(Adjustments a) {
        return HookResult.adjust(a.build());
    }

    // ---------------------------------------------------------------- order and subscription

    @Test
    void hooksRunInIndexThenNameOrderAndOnlyForTheirEvents() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        Hook observer =
                new Hook() {
                    @Override
                    public String name() {
                        return "observer";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(1);
                    }

                    @Override
                    public void runPodSandbox(PodSandbox pod) {
                        calls.add("observer");
                    }
                };
        HookChain c =
                chain(
                        creating(
                                "b",
                                FAIL.withIndex(10),
                                x -> {
                                    calls.add("b");
                                    return HookResult.none();
                                }),
                        creatingAsync(
                                "a",
                                FAIL.withIndex(10),
                                x -> {
                                    calls.add("a");
                                    return HookResult.none();
                                }),
                        creating(
                                "z",
                                FAIL.withIndex(5),
                                x -> {
                                    calls.add("z");
                                    return HookResult.none();
                                }),
                        observer);
        assertThat(c.hookNames()).containsExactly("observer", "z", "a", "b");
        get(c.createContainer(POD, CTR));
        assertThat(calls).containsExactly("z", "a", "b");
        calls.clear();
        get(c.runPodSandbox(POD));
        assertThat(calls).containsExactly("observer");
        assertThat(c.events())
                .containsExactlyInAnyOrder(HookEvent.CREATE_CONTAINER, HookEvent.RUN_POD_SANDBOX);
    }

    @Test
    void blockingHooksRunOnWorkersAndAsyncHooksOnTheCallingThread() throws Exception {
        AtomicReference<String> blocking = new AtomicReference<>();
        AtomicReference<String> async = new AtomicReference<>();
        HookChain c =
                chain(
                        creating(
                                "blocking",
                                FAIL.withIndex(1),
                                x -> {
                                    blocking.set(Thread.currentThread().getName());
                                    return HookResult.none();
                                }),
                        creatingAsync(
                                "async",
                                FAIL.withIndex(0),
                                x -> {
                                    async.set(Thread.currentThread().getName());
                                    return HookResult.none();
                                }));
        get(c.createContainer(POD, CTR));
        assertThat(blocking.get()).startsWith("cri4j-hook-worker-");
        assertThat(async.get()).isEqualTo(Thread.currentThread().getName());
    }

    @Test
    void anonymousHooksAreNamedByTheirBinaryName() {
        Hook anonymous =
                new Hook() {
                    @Override
                    public void runPodSandbox(PodSandbox pod) {}
                };
        assertThat(anonymous.name()).startsWith("HookChainTest$").isNotBlank();
        assertThat(chain(anonymous).hookNames()).containsExactly(anonymous.name());
    }

    @Test
    void duplicateNamesAreRefused() {
        assertThatThrownBy(
                        () ->
                                chain(
                                        creating("same", FAIL, x -> HookResult.none()),
                                        creatingAsync("same", FAIL, x -> HookResult.none())))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("\"same\"");
        assertThatThrownBy(() -> HookChain.builder().addAll(List.of("not a hook")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    // ---------------------------------------------------------------- merging

    @Test
    void eachHookSeesTheContainerAsEarlierHooksAdjustedIt() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "first",
                                FAIL.withIndex(1),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addEnv("A", "1")
                                                        .addAnnotation("first", "yes")
                                                        .setLinuxCpuSetCpus("0-1")
                                                        .addMount("/cache", "bind", "/var/cache"))),
                        creating(
                                "second",
                                FAIL.withIndex(2),
                                x -> {
                                    assertThat(x.getEnvList()).contains("A=1", "PATH=/bin");
                                    assertThat(x.getAnnotationsMap()).containsEntry("first", "yes");
                                    assertThat(x.getLinux().getResources().getCpu().getCpus())
                                            .isEqualTo("0-1");
                                    assertThat(x.getMountsList())
                                            .extracting(Mount::getDestination)
                                            .containsExactly("/data", "/cache");
                                    return adjust(
                                            Adjustments.create()
                                                    .addEnv(
                                                            "B",
                                                            x.getEnvList()
                                                                            .toString()
                                                                            .contains("A=1")
                                                                    ? "saw-a"
                                                                    : "no"));
                                }));
        ContainerCreation out = get(c.createContainerDetailed(POD, CTR));
        assertThat(out.result().adjustment().getEnvList())
                .extracting(kv -> kv.getKey() + "=" + kv.getValue())
                .containsExactly("A=1", "B=saw-a");
        assertThat(out.container().getEnvList())
                .containsExactly("PATH=/bin", "KEEP=1", "A=1", "B=saw-a");
        assertThat(out.owner(Field.Env, "A")).contains("first");
        assertThat(out.owner(Field.Env, "B")).contains("second");
        assertThat(out.owner(Field.CPUSetCPUs)).contains("first");
        assertThat(out.owner(Field.Mounts, "/cache")).contains("first");
        // NRI's owners message says the same as the lookups
        io.cri4j.hook.nri.v1alpha1.FieldOwners owners =
                out.owners().getOwnersMap().get(CTR.getId());
        assertThat(owners.getCompoundMap().get(Field.Env.getNumber()).getOwnersMap())
                .containsExactly(Map.entry("A", "first"), Map.entry("B", "second"));
        assertThat(owners.getSimpleMap()).containsEntry(Field.CPUSetCPUs.getNumber(), "first");
        // and a creation made from its parts answers as the chain's own
        ContainerCreation copy = new ContainerCreation(out.result(), out.container(), out.owners());
        assertThat(copy).isEqualTo(out);
        assertThat(copy.owner(Field.Env, "B")).isEqualTo(out.owner(Field.Env, "B"));
        assertThat(copy.owner(Field.CPUSetCPUs)).isEqualTo(out.owner(Field.CPUSetCPUs));
    }

    @Test
    void twoHooksSettingOneFieldFailWithAConflictNamingBoth() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "cpu-a",
                                IGNORE.withIndex(1),
                                x -> adjust(Adjustments.create().setLinuxCpuShares(512))),
                        creatingAsync(
                                "cpu-b",
                                IGNORE.withIndex(2),
                                x -> adjust(Adjustments.create().setLinuxCpuShares(256))));
        Throwable t = failure(c.createContainer(POD, CTR));
        assertThat(t)
                .isInstanceOf(HookConflictException.class)
                .hasMessage(
                        "CreateContainer: hooks \"cpu-a\" and \"cpu-b\" both tried to set CPUShares"
                                + " of container \"web\"");
        HookConflictException e = (HookConflictException) t;
        assertThat(e.firstHook()).isEqualTo("cpu-a");
        assertThat(e.secondHook()).isEqualTo("cpu-b");
        assertThat(e.hookName()).isEqualTo("cpu-b");
        assertThat(e.field()).isEqualTo("CPUShares");
        assertThat(e.event()).contains(HookEvent.CREATE_CONTAINER);
    }

    @Test
    void keyedFieldsConflictPerKey() throws Exception {
        HookChain ok =
                chain(
                        creating(
                                "env-a",
                                FAIL.withIndex(1),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addEnv("A", "1")
                                                        .addAnnotation("x", "1")
                                                        .addDevice(
                                                                Adjustments.device(
                                                                        "/dev/a", "c", 1, 3)))),
                        creating(
                                "env-b",
                                FAIL.withIndex(2),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addEnv("B", "2")
                                                        .addAnnotation("y", "1")
                                                        .addDevice(
                                                                Adjustments.device(
                                                                        "/dev/b", "c", 1, 5)))));
        HookResult r = get(ok.createContainer(POD, CTR));
        assertThat(r.adjustment().getEnvCount()).isEqualTo(2);
        assertThat(r.adjustment().getLinux().getDevicesList())
                .extracting(LinuxDevice::getPath)
                .containsExactly("/dev/a", "/dev/b");

        HookChain clash =
                chain(
                        creating(
                                "env-a",
                                FAIL.withIndex(1),
                                x -> adjust(Adjustments.create().addEnv("A", "1"))),
                        creating(
                                "env-c",
                                FAIL.withIndex(2),
                                x -> adjust(Adjustments.create().addEnv("A", "2"))));
        HookConflictException e = (HookConflictException) failure(clash.createContainer(POD, CTR));
        assertThat(e.getMessage()).contains("\"env-a\"", "\"env-c\"", "Env A");
        assertThat(e.key()).isEqualTo("A");
    }

    @Test
    void removingFirstLetsAHookOverrideAnotherHooksValue() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "setter",
                                FAIL.withIndex(1),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addEnv("X", "1")
                                                        .addAnnotation("k", "a"))),
                        creating(
                                "overrider",
                                FAIL.withIndex(2),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .removeEnv("X")
                                                        .addEnv("X", "2")
                                                        .removeAnnotation("k")
                                                        .addAnnotation("k", "b"))));
        ContainerCreation out = get(c.createContainerDetailed(POD, CTR));
        assertThat(out.result().adjustment().getEnvList())
                .extracting(kv -> kv.getKey() + "=" + kv.getValue())
                .containsExactly("-X=", "X=2");
        assertThat(out.result().adjustment().getAnnotationsMap())
                .containsEntry("k", "b")
                .containsEntry("-k", "");
        assertThat(out.container().getEnvList()).contains("X=2").doesNotContain("X=1");
        assertThat(out.owner(Field.Env, "X")).contains("overrider");
    }

    @Test
    void aRemovalOfAnotherHooksValueIsOwnedByTheRemover() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "setter",
                                FAIL.withIndex(1),
                                x -> adjust(Adjustments.create().addEnv("X", "1"))),
                        creating(
                                "remover",
                                FAIL.withIndex(2),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .removeEnv("X")
                                                        .removeEnv("KEEP")
                                                        .removeMount("/data"))),
                        creating(
                                "late",
                                FAIL.withIndex(3),
                                x -> {
                                    assertThat(x.getEnvList()).containsExactly("PATH=/bin");
                                    assertThat(x.getMountsList()).isEmpty();
                                    return adjust(
                                            Adjustments.create()
                                                    .addEnv("KEEP", "again")
                                                    .addEnv("X", "3"));
                                }));
        HookConflictException e = (HookConflictException) failure(c.createContainer(POD, CTR));
        assertThat(e.firstHook()).isEqualTo("remover");
        assertThat(e.secondHook()).isEqualTo("late");
        assertThat(e.key()).isEqualTo("X");
    }

    @Test
    void pureRemovalsAreCarriedAsMarkers() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "remover",
                                FAIL,
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .removeEnv("KEEP")
                                                        .removeAnnotation("orig")
                                                        .removeMount("/data"))));
        ContainerCreation out = get(c.createContainerDetailed(POD, CTR));
        assertThat(out.result().adjustment().getEnvList())
                .extracting(kv -> kv.getKey())
                .containsExactly("-KEEP");
        assertThat(out.result().adjustment().getAnnotationsMap()).containsOnlyKeys("-orig");
        assertThat(out.result().adjustment().getMountsList())
                .extracting(Mount::getDestination)
                .containsExactly("-/data");
        assertThat(out.container().getAnnotationsMap()).doesNotContainKey("orig");
        assertThat(out.container().getEnvList()).containsExactly("PATH=/bin");
    }

    @Test
    void argsOciHooksAndResourcesMerge() throws Exception {
        io.cri4j.hook.nri.v1alpha1.Hook oci =
                io.cri4j.hook.nri.v1alpha1.Hook.newBuilder().setPath("/bin/true").build();
        HookChain c =
                chain(
                        creating(
                                "a",
                                FAIL.withIndex(1),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .setArgs("sleep", "1")
                                                        .addHooks(
                                                                io.cri4j.hook.nri.v1alpha1.Hooks
                                                                        .newBuilder()
                                                                        .addPrestart(oci)
                                                                        .build())
                                                        .setLinuxMemoryLimit(100)
                                                        .addLinuxHugepageLimit("2MB", 1))),
                        creating(
                                "b",
                                FAIL.withIndex(2),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .updateArgs(List.of("sleep", "2"))
                                                        .addHooks(
                                                                io.cri4j.hook.nri.v1alpha1.Hooks
                                                                        .newBuilder()
                                                                        .addPoststop(oci)
                                                                        .build())
                                                        .addLinuxHugepageLimit("1GB", 2)
                                                        .addLinuxUnified("memory.high", "1M")
                                                        .setLinuxOomScoreAdj(5))));
        ContainerCreation out = get(c.createContainerDetailed(POD, CTR));
        assertThat(out.result().adjustment().getArgsList()).containsExactly("sleep", "2");
        assertThat(out.result().adjustment().getHooks().getPrestartCount()).isEqualTo(1);
        assertThat(out.result().adjustment().getHooks().getPoststopCount()).isEqualTo(1);
        assertThat(out.owner(Field.OciHooks)).contains("a,b");
        LinuxResources r = out.result().adjustment().getLinux().getResources();
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(100);
        assertThat(r.getHugepageLimitsCount()).isEqualTo(2);
        assertThat(r.getUnifiedMap()).containsEntry("memory.high", "1M");
        assertThat(out.result().adjustment().getLinux().getOomScoreAdj().getValue()).isEqualTo(5);
        assertThat(out.container().getLinux().getResources().getCpu().getShares().getValue())
                .isEqualTo(1024);

        HookChain clash =
                chain(
                        creating(
                                "a",
                                FAIL.withIndex(1),
                                x -> adjust(Adjustments.create().setArgs("a"))),
                        creating(
                                "b",
                                FAIL.withIndex(2),
                                x -> adjust(Adjustments.create().setArgs("b"))));
        assertThat(failure(clash.createContainer(POD, CTR)))
                .isInstanceOf(HookConflictException.class)
                .hasMessageContaining("Args");
    }

    @Test
    void updatesOfOtherContainersMergePerFieldAndEvictionsAreCollected() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "a",
                                FAIL.withIndex(1),
                                x ->
                                        HookResult.builder()
                                                .addUpdate(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxCpuShares(10)
                                                                .build())
                                                .evict("c3", "too big")
                                                .build()),
                        creating(
                                "b",
                                FAIL.withIndex(2),
                                x ->
                                        HookResult.builder()
                                                .addUpdate(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxMemoryLimit(20)
                                                                .build())
                                                .evict("c3", "second reason")
                                                .evict("c4", "also")
                                                .build()));
        HookResult r = get(c.createContainer(POD, CTR));
        assertThat(r.updates())
                .singleElement()
                .satisfies(
                        u -> {
                            assertThat(u.getContainerId()).isEqualTo("c2");
                            assertThat(u.getLinux().getResources().getCpu().getShares().getValue())
                                    .isEqualTo(10);
                            assertThat(
                                            u.getLinux()
                                                    .getResources()
                                                    .getMemory()
                                                    .getLimit()
                                                    .getValue())
                                    .isEqualTo(20);
                        });
        assertThat(r.evictions())
                .extracting(e -> e.getContainerId() + ":" + e.getReason())
                .containsExactly("c3:too big", "c4:also");
    }

    @Test
    void twoHooksUpdatingOneFieldOfAContainerConflictUnlessTheUpdateIgnoresFailure()
            throws Exception {
        HookChain clash =
                chain(
                        creating(
                                "a",
                                FAIL.withIndex(1),
                                x ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxCpuShares(10)
                                                                .build()))),
                        creating(
                                "b",
                                FAIL.withIndex(2),
                                x ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxCpuShares(20)
                                                                .build()))));
        assertThat(failure(clash.createContainer(POD, CTR)))
                .isInstanceOf(HookConflictException.class)
                .hasMessageContaining("\"a\" and \"b\"")
                .hasMessageContaining("CPUShares")
                .hasMessageContaining("c2");

        HookChain optional =
                chain(
                        creating(
                                "a",
                                FAIL.withIndex(1),
                                x ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxCpuShares(10)
                                                                .build()))),
                        creating(
                                "b",
                                FAIL.withIndex(2),
                                x ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c2")
                                                                .setLinuxCpuShares(20)
                                                                .setIgnoreFailure()
                                                                .build()))));
        HookResult r = get(optional.createContainer(POD, CTR));
        assertThat(r.updates())
                .singleElement()
                .satisfies(
                        u ->
                                assertThat(
                                                u.getLinux()
                                                        .getResources()
                                                        .getCpu()
                                                        .getShares()
                                                        .getValue())
                                        .isEqualTo(10));
    }

    @Test
    void updatingTheContainerBeingCreatedIsTheHooksFailure() throws Exception {
        HookChain failing =
                chain(
                        creating(
                                "self",
                                FAIL,
                                x ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c1")
                                                                .setLinuxCpuShares(1)
                                                                .build()))));
        assertThat(failure(failing.createContainer(POD, CTR)))
                .isInstanceOf(HookFailedException.class)
                .hasMessageContaining("\"self\"")
                .hasMessageContaining("during its creation");

        HookChain ignoring =
                chain(
                        creating(
                                "self",
                                IGNORE.withIndex(1),
                                x ->
                                        HookResult.builder()
                                                .adjust(
                                                        Adjustments.create()
                                                                .addEnv("DROPPED", "1")
                                                                .build())
                                                .addUpdate(
                                                        ContainerUpdates.of("c1")
                                                                .setLinuxCpuShares(1)
                                                                .build())
                                                .build()),
                        creating(
                                "other",
                                FAIL.withIndex(2),
                                x -> adjust(Adjustments.create().addEnv("OK", "1"))));
        HookResult r = get(ignoring.createContainer(POD, CTR));
        assertThat(r.adjustment().getEnvList()).extracting(kv -> kv.getKey()).containsExactly("OK");
    }

    @Test
    void updateContainerMergesIntoTheRequestedResources() throws Exception {
        LinuxResources requested =
                Adjustments.create().setLinuxCpuShares(100).build().getLinux().getResources();
        List<Long> seen = new CopyOnWriteArrayList<>();
        class Updater implements Hook {
            final String n;
            final int idx;
            final Function<LinuxResources, HookResult> f;

            Updater(String n, int idx, Function<LinuxResources, HookResult> f) {
                this.n = n;
                this.idx = idx;
                this.f = f;
            }

            @Override
            public String name() {
                return n;
            }

            @Override
            public HookPolicy policy() {
                return FAIL.withIndex(idx);
            }

            @Override
            public HookResult updateContainer(PodSandbox pod, Container c, LinuxResources r) {
                seen.add(r.getCpu().getShares().getValue());
                return f.apply(r);
            }
        }
        HookChain c =
                chain(
                        new Updater(
                                "a",
                                1,
                                r ->
                                        HookResult.update(
                                                List.of(
                                                        ContainerUpdates.of("c1")
                                                                .setLinuxCpuShares(200)
                                                                .build()))),
                        new Updater(
                                "b",
                                2,
                                r ->
                                        HookResult.builder()
                                                .addUpdate(
                                                        ContainerUpdates.of("c1")
                                                                .setLinuxMemoryLimit(300)
                                                                .build())
                                                .addUpdate(
                                                        ContainerUpdates.of("c9")
                                                                .setLinuxPidLimits(7)
                                                                .build())
                                                .build()));
        HookResult r = get(c.updateContainer(POD, CTR, requested));
        assertThat(seen).containsExactly(100L, 200L);
        assertThat(r.updates())
                .extracting(ContainerUpdate::getContainerId)
                .containsExactly("c9", "c1");
        LinuxResources merged = r.updates().get(1).getLinux().getResources();
        assertThat(merged.getCpu().getShares().getValue()).isEqualTo(200);
        assertThat(merged.getMemory().getLimit().getValue()).isEqualTo(300);

        HookChain none = chain(new Updater("quiet", 1, x -> HookResult.none()));
        assertThat(get(none.updateContainer(POD, CTR, requested)).updates()).isEmpty();
    }

    @Test
    void stopContainerAndSynchronizeMergeUpdates() throws Exception {
        AsyncHook a =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "a";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(1);
                    }

                    @Override
                    public CompletionStage<HookResult> stopContainer(PodSandbox p, Container c) {
                        return CompletableFuture.completedFuture(
                                HookResult.update(
                                        List.of(
                                                ContainerUpdates.of("c2")
                                                        .setLinuxCpuShares(1)
                                                        .build())));
                    }

                    @Override
                    public CompletionStage<List<ContainerUpdate>> synchronize(
                            List<PodSandbox> pods, List<Container> containers) {
                        return CompletableFuture.completedFuture(
                                List.of(
                                        ContainerUpdates.of(containers.get(0).getId())
                                                .setLinuxCpuShares(5)
                                                .build()));
                    }
                };
        Hook b =
                new Hook() {
                    @Override
                    public String name() {
                        return "b";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(2);
                    }

                    @Override
                    public HookResult stopContainer(PodSandbox p, Container c) {
                        return HookResult.update(
                                List.of(ContainerUpdates.of("c2").setLinuxCpuShares(2).build()));
                    }

                    @Override
                    public List<ContainerUpdate> synchronize(
                            List<PodSandbox> pods, List<Container> containers) {
                        return List.of(ContainerUpdates.of("c1").setLinuxMemoryLimit(6).build());
                    }
                };
        HookChain c = chain(a, b);
        assertThat(failure(c.stopContainer(POD, CTR)))
                .isInstanceOf(HookConflictException.class)
                .hasMessageStartingWith("StopContainer: ");
        List<ContainerUpdate> synced = get(c.synchronize(List.of(POD), List.of(CTR)));
        assertThat(synced)
                .singleElement()
                .satisfies(
                        u -> {
                            assertThat(u.getLinux().getResources().getCpu().getShares().getValue())
                                    .isEqualTo(5);
                            assertThat(
                                            u.getLinux()
                                                    .getResources()
                                                    .getMemory()
                                                    .getLimit()
                                                    .getValue())
                                    .isEqualTo(6);
                        });
    }

    @Test
    void podAdjustmentsMergeAndConflictPerLabel() throws Exception {
        Hook first =
                new Hook() {
                    @Override
                    public String name() {
                        return "first";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(1);
                    }

                    @Override
                    public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
                        return PodSandboxAdjustment.builder()
                                .putLabel("tier", "gold")
                                .cgroupParent("/gold")
                                .build();
                    }
                };
        AsyncHook second =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "second";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(2);
                    }

                    @Override
                    public CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox pod) {
                        return CompletableFuture.completedFuture(
                                PodSandboxAdjustment.builder()
                                        .putAnnotation(
                                                "seen-tier", pod.getLabelsOrDefault("tier", "none"))
                                        .putAnnotation(
                                                "seen-parent", pod.getLinux().getCgroupParent())
                                        .build());
                    }
                };
        PodSandboxAdjustment a = get(chain(first, second).adjustPodSandbox(POD));
        assertThat(a.labels()).containsEntry("tier", "gold");
        assertThat(a.annotations())
                .containsEntry("seen-tier", "gold")
                .containsEntry("seen-parent", "/gold");
        assertThat(a.cgroupParent()).isEqualTo("/gold");

        Hook clash =
                new Hook() {
                    @Override
                    public String name() {
                        return "clash";
                    }

                    @Override
                    public HookPolicy policy() {
                        return FAIL.withIndex(3);
                    }

                    @Override
                    public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
                        return PodSandboxAdjustment.builder().putLabel("tier", "silver").build();
                    }
                };
        assertThat(failure(chain(first, clash).adjustPodSandbox(POD)))
                .isInstanceOf(HookConflictException.class)
                .hasMessage(
                        "AdjustPodSandbox: hooks \"first\" and \"clash\" both tried to set Labels"
                                + " tier of pod \"web-pod\"");
    }

    // ---------------------------------------------------------------- failures

    @Test
    void aFailingFailHookFailsTheEventNamingItAndLaterHooksAreNotCalled() throws Exception {
        AtomicInteger later = new AtomicInteger();
        HookChain c =
                chain(
                        creating(
                                "broken",
                                FAIL.withIndex(1),
                                x -> {
                                    throw new IllegalStateException("disk full");
                                }),
                        creating(
                                "later",
                                FAIL.withIndex(2),
                                x -> {
                                    later.incrementAndGet();
                                    return HookResult.none();
                                }));
        Throwable t = failure(c.createContainer(POD, CTR));
        assertThat(t)
                .isExactlyInstanceOf(HookFailedException.class)
                .hasMessage("CreateContainer: hook \"broken\" failed: disk full")
                .hasCauseInstanceOf(IllegalStateException.class);
        assertThat(((HookException) t).hookName()).isEqualTo("broken");
        assertThat(later).hasValue(0);
    }

    @Test
    void aFailingIgnoreHookIsSkippedAndTheEventGoesOn() throws Exception {
        AsyncHook failedStage =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "failed-stage";
                    }

                    @Override
                    public HookPolicy policy() {
                        return IGNORE.withIndex(2);
                    }

                    @Override
                    public CompletionStage<HookResult> createContainer(PodSandbox p, Container c) {
                        return CompletableFuture.failedFuture(new RuntimeException("remote down"));
                    }
                };
        HookChain c =
                chain(
                        creating(
                                "thrower",
                                IGNORE.withIndex(1),
                                x -> {
                                    throw new IllegalStateException("boom");
                                }),
                        failedStage,
                        creatingAsync("nulls", IGNORE.withIndex(3), x -> null),
                        creating(
                                "good",
                                FAIL.withIndex(4),
                                x -> adjust(Adjustments.create().addEnv("G", "1"))));
        HookResult r = get(c.createContainer(POD, CTR));
        assertThat(r.adjustment().getEnvList()).extracting(kv -> kv.getKey()).containsExactly("G");
    }

    @Test
    void aBlockingHookPastItsTimeoutIsInterruptedAndFailsTheEvent() throws Exception {
        CountDownLatch interrupted = new CountDownLatch(1);
        Hook stuck =
                creating(
                        "stuck",
                        FAIL.withTimeout(Duration.ofMillis(100)),
                        x -> {
                            try {
                                new CountDownLatch(1).await();
                            } catch (InterruptedException e) {
                                interrupted.countDown();
                                Thread.currentThread().interrupt();
                            }
                            return adjust(Adjustments.create().addEnv("LATE", "1"));
                        });
        HookChain c = chain(stuck);
        Throwable t = failure(c.createContainer(POD, CTR));
        assertThat(t)
                .isInstanceOf(HookTimeoutException.class)
                .hasMessage("CreateContainer: hook \"stuck\" did not answer within 100 ms");
        assertThat(((HookTimeoutException) t).timeout()).isEqualTo(Duration.ofMillis(100));
        assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aStageThatNeverCompletesIsCancelledAndIgnoredUnderIgnore() throws Exception {
        CompletableFuture<HookResult> never = new CompletableFuture<>();
        AsyncHook silent =
                silentAt(1, IGNORE.withIndex(1).withTimeout(Duration.ofMillis(50)), never);
        // what the next hook sees when it is called: the late hook's stage must be cancelled by
        // then (the timer used to complete the call first, which ran the next hook on the timer
        // thread before the cancellation; this test saw it every time)
        AtomicReference<Boolean> cancelledWhenNextRan = new AtomicReference<>();
        HookChain c =
                chain(
                        silent,
                        creatingAsync(
                                "after",
                                FAIL.withIndex(2),
                                x -> {
                                    cancelledWhenNextRan.set(never.isCancelled());
                                    return adjust(Adjustments.create().addEnv("A", "1"));
                                }));
        HookResult r = get(c.createContainer(POD, CTR));
        assertThat(r.adjustment().getEnvCount()).isEqualTo(1);
        assertThat(cancelledWhenNextRan.get()).isTrue();
        assertThat(never).isCancelled();
    }

    @Test
    void aLateStageIsCancelledBeforeTheEventFailsUnderFail() throws Exception {
        CompletableFuture<HookResult> never = new CompletableFuture<>();
        HookChain c = chain(silentAt(1, FAIL.withTimeout(Duration.ofMillis(50)), never));
        CompletableFuture<HookResult> event = c.createContainer(POD, CTR).toCompletableFuture();
        // what whoever waits for the event sees when it fails
        CompletableFuture<Boolean> seen = event.handle((v, t) -> never.isCancelled());
        assertThat(failure(event)).isInstanceOf(HookTimeoutException.class);
        assertThat(seen.get(20, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void closingTheChainCancelsAPendingStageBeforeFailingTheEvent() throws Exception {
        CompletableFuture<HookResult> never = new CompletableFuture<>();
        HookChain c = chain(silentAt(1, FAIL.withTimeout(Duration.ofMinutes(5)), never));
        CompletableFuture<HookResult> event = c.createContainer(POD, CTR).toCompletableFuture();
        CompletableFuture<Boolean> seen = event.handle((v, t) -> never.isCancelled());
        c.close(); // fails the pending call on this thread
        assertThat(seen).isDone();
        assertThat(seen.get()).isTrue();
        assertThat(failure(event)).hasMessageContaining("was closed");
    }

    /** An asynchronous hook answering CreateContainer with {@code answer} (left pending). */
    static AsyncHook silentAt(int index, HookPolicy policy, CompletableFuture<HookResult> answer) {
        return new AsyncHook() {
            @Override
            public String name() {
                return "silent";
            }

            @Override
            public HookPolicy policy() {
                return policy.withIndex(index);
            }

            @Override
            public CompletionStage<HookResult> createContainer(PodSandbox p, Container c) {
                return answer;
            }
        };
    }

    @Test
    void deviceCgroupRulesOfSeveralHooksAreAppendedInHookOrderWithoutConflict() throws Exception {
        HookChain c =
                chain(
                        creating(
                                "b-second",
                                FAIL.withIndex(2),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addLinuxDeviceCgroupRule(
                                                                true, "c", 1L, 3L, "rw"))),
                        creating(
                                "a-first",
                                FAIL.withIndex(1),
                                x ->
                                        adjust(
                                                Adjustments.create()
                                                        .addLinuxDeviceCgroupRule(
                                                                false, "c", 1L, 3L, "rwm")
                                                        .setLinuxMemoryLimit(1 << 20))),
                        creating("quiet", FAIL.withIndex(3), x -> HookResult.none()));
        ContainerCreation out = get(c.createContainerDetailed(POD, CTR));
        LinuxResources r = out.result().adjustment().getLinux().getResources();
        // the same device in both: no conflict, the later hook's rule comes last (and wins)
        assertThat(r.getDevicesList())
                .extracting(d -> d.getAllow() + " " + d.getAccess())
                .containsExactly("false rwm", "true rw");
        assertThat(r.getMemory().getLimit().getValue()).isEqualTo(1 << 20);
        assertThat(out.deviceCgroupRuleOwners()).containsExactly("a-first", "b-second");
        // the container as the hooks left it carries them after its own resources
        assertThat(out.container().getLinux().getResources().getDevicesCount()).isEqualTo(2);
        assertThat(out.container().getLinux().getResources().getCpu().getShares().getValue())
                .isEqualTo(1024);
        // NRI has no field number for them: the owners message leaves them out
        assertThat(out.owners().toString()).contains("a-first").doesNotContain("b-second");
    }

    @Test
    void theCallingThreadIsNeverBlocked() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        HookChain c =
                chain(
                        creating(
                                "slow",
                                FAIL.withTimeout(Duration.ofSeconds(30)),
                                x -> {
                                    try {
                                        release.await();
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                    return adjust(Adjustments.create().addEnv("S", "1"));
                                }));
        CompletionStage<HookResult> stage = c.createContainer(POD, CTR);
        assertThat(stage.toCompletableFuture()).isNotDone();
        release.countDown();
        assertThat(get(stage).adjustment().getEnvCount()).isEqualTo(1);
    }

    // ---------------------------------------------------------------- validation

    static AsyncHook validator(
            String name,
            Function<ValidateContainerAdjustmentRequest, CompletionStage<Void>> f,
            List<ValidateContainerAdjustmentRequest> seen) {
        return new AsyncHook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return IGNORE.withIndex(90);
            }

            @Override
            public CompletionStage<Void> validateContainerAdjustment(
                    ValidateContainerAdjustmentRequest r) {
                seen.add(r);
                return f.apply(r);
            }
        };
    }

    @Test
    void validatorsSeeTheMergedAdjustmentAndOwnersAndMayReject() throws Exception {
        List<ValidateContainerAdjustmentRequest> seen = new CopyOnWriteArrayList<>();
        Hook setter =
                creating(
                        "setter",
                        FAIL.withIndex(1),
                        x -> adjust(Adjustments.create().addEnv("A", "1").setLinuxCpuShares(7)));
        HookChain accepting =
                chain(setter, validator("ok", r -> CompletableFuture.completedFuture(null), seen));
        get(accepting.createContainer(POD, CTR));
        assertThat(seen)
                .singleElement()
                .satisfies(
                        r -> {
                            assertThat(r.getAdjust().getEnv(0).getKey()).isEqualTo("A");
                            assertThat(r.getContainer()).isEqualTo(CTR);
                            assertThat(r.getPod()).isEqualTo(POD);
                            assertThat(r.getOwners().getOwnersMap().get("c1").getSimpleMap())
                                    .containsEntry(Field.CPUShares.getNumber(), "setter");
                            assertThat(r.getPluginsList())
                                    .extracting(p -> p.getIndex() + "-" + p.getName())
                                    .containsExactly("01-setter", "90-ok");
                        });

        HookChain rejecting =
                chain(
                        setter,
                        validator(
                                "policy",
                                r ->
                                        CompletableFuture.failedFuture(
                                                new IllegalArgumentException(
                                                        "CPU shares are reserved")),
                                seen));
        Throwable t = failure(rejecting.createContainer(POD, CTR));
        assertThat(t)
                .isInstanceOf(HookRejectedException.class)
                .hasMessage(
                        "ValidateContainerAdjustment: validator \"policy\" rejected the container"
                                + " adjustment: CPU shares are reserved");
        assertThat(((HookRejectedException) t).reason()).isEqualTo("CPU shares are reserved");
    }

    @Test
    void aChainHostedByAnNriRuntimeLeavesValidationToTheRuntime() throws Exception {
        List<ValidateContainerAdjustmentRequest> seen = new CopyOnWriteArrayList<>();
        HookChain c =
                HookChain.builder()
                        .validateAdjustments(false)
                        .add(
                                validator(
                                        "v",
                                        r ->
                                                CompletableFuture.failedFuture(
                                                        new RuntimeException("no")),
                                        seen))
                        .build();
        chains.add(c);
        get(c.createContainer(POD, CTR));
        assertThat(seen).isEmpty();
        assertThat(c.events()).contains(HookEvent.VALIDATE_CONTAINER_ADJUSTMENT);
        assertThat(
                        failure(
                                c.validateContainerAdjustment(
                                        ValidateContainerAdjustmentRequest.getDefaultInstance())))
                .isInstanceOf(HookRejectedException.class)
                .hasMessageContaining("\"v\"");
    }

    // ---------------------------------------------------------------- registration, lifecycle

    static final class Lifecycle implements Hook {
        final String name;
        final HookPolicy policy;
        final boolean failConfigure;
        final List<String> log;

        Lifecycle(String name, HookPolicy policy, boolean failConfigure, List<String> log) {
            this.name = name;
            this.policy = policy;
            this.failConfigure = failConfigure;
            this.log = log;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public HookPolicy policy() {
            return policy;
        }

        @Override
        public void configure(HookConfiguration c) {
            log.add(name + ":configure:" + c.config());
            if (failConfigure) {
                throw new IllegalStateException("bad config");
            }
        }

        @Override
        public void shutdown() {
            log.add(name + ":shutdown");
        }

        @Override
        public void runPodSandbox(PodSandbox pod) {
            log.add(name + ":run");
        }
    }

    static HookConfiguration config(String text) {
        return new HookConfiguration(
                text,
                "test",
                "1",
                Duration.ofSeconds(5),
                Duration.ofSeconds(2),
                (updates, evictions) -> CompletableFuture.completedFuture(List.of()));
    }

    @Test
    void configureFansOutAndAFailedConfigureDisablesOrFails() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        HookChain c =
                chain(
                        new Lifecycle("good", FAIL.withIndex(1), false, log),
                        new Lifecycle("lenient", IGNORE.withIndex(2), true, log));
        get(c.configure(config("cfg")));
        assertThat(log).containsExactlyInAnyOrder("good:configure:cfg", "lenient:configure:cfg");
        log.clear();
        get(c.runPodSandbox(POD));
        assertThat(log).containsExactly("good:run");

        HookChain strict = chain(new Lifecycle("strict", FAIL, true, log));
        assertThat(failure(strict.configure(config("x"))))
                .isInstanceOf(HookFailedException.class)
                .hasMessage("Configure: hook \"strict\" failed: bad config");
        assertThat(failure(strict.runPodSandbox(POD)))
                .isInstanceOf(HookFailedException.class)
                .hasMessageContaining("strict");
    }

    @Test
    void aSourceIsAskedAtEveryEventNewHooksAreConfiguredAndGoneHooksShutDown() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        List<Object> current = new CopyOnWriteArrayList<>();
        Lifecycle one = new Lifecycle("one", FAIL.withIndex(1), false, log);
        current.add(one);
        HookChain c = HookChain.builder().source(() -> List.copyOf(current)).build();
        chains.add(c);
        get(c.configure(config("v1")));
        get(c.runPodSandbox(POD));
        assertThat(log).containsExactly("one:configure:v1", "one:run");
        log.clear();
        current.add(new Lifecycle("two", FAIL.withIndex(2), false, log));
        current.remove(one);
        get(c.runPodSandbox(POD));
        assertThat(log).contains("two:configure:v1", "two:run");
        assertThat(log.indexOf("two:configure:v1")).isLessThan(log.indexOf("two:run"));
        assertThat(c.hookNames()).containsExactly("two");
        c.close();
        assertThat(log).contains("one:shutdown", "two:shutdown");
    }

    @Test
    void aHeldSourceKeepsAnEventsHooksUntilTheEventEnds() throws Exception {
        CompletableFuture<Void> answer = new CompletableFuture<>();
        AsyncHook slow =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "slow";
                    }

                    @Override
                    public CompletionStage<Void> runPodSandbox(PodSandbox pod) {
                        return answer;
                    }
                };
        List<Object> list = List.of(slow);
        AtomicInteger held = new AtomicInteger();
        List<Object> released = new CopyOnWriteArrayList<>();
        HookChain c =
                HookChain.builder()
                        .source(
                                () -> {
                                    held.incrementAndGet();
                                    return list;
                                },
                                l -> {
                                    held.decrementAndGet();
                                    released.add(l);
                                })
                        .build();
        chains.add(c);
        assertThat(held).as("uses that are no event give back at once").hasValue(0);
        CompletionStage<Void> event = c.runPodSandbox(POD);
        assertThat(held).as("held while the event runs").hasValue(1);
        answer.complete(null);
        get(event);
        assertThat(held).hasValue(0);
        assertThat(released).last().isSameAs(list);
        // an event no hook wants gives back too
        get(c.stopPodSandbox(POD));
        assertThat(held).hasValue(0);
    }

    @Test
    void providedHooksJoinTheOrderButTheirProviderConfiguresAndShutsThemDown() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        AsyncHook provided =
                Hooks.async(
                        new Lifecycle("provided", FAIL.withIndex(5), false, log), Runnable::run);
        List<AsyncHook> fromProvider = new CopyOnWriteArrayList<>(List.of(provided));
        HookChain c =
                HookChain.builder()
                        .add(new Lifecycle("own", FAIL.withIndex(9), false, log))
                        .provided(() -> List.copyOf(fromProvider))
                        .build();
        chains.add(c);
        assertThat(c.hookNames()).containsExactly("provided", "own");
        get(c.configure(config("cfg")));
        get(c.synchronize(List.of(POD), List.of(CTR)));
        assertThat(log).containsExactly("own:configure:cfg");
        log.clear();
        get(c.runPodSandbox(POD));
        assertThat(log).containsExactly("provided:run", "own:run");
        fromProvider.clear();
        log.clear();
        get(c.runPodSandbox(POD));
        assertThat(log).as("gone, and not shut down by the chain").containsExactly("own:run");
        c.close();
        assertThat(log).containsExactly("own:run", "own:shutdown");
    }

    @Test
    void shutdownFansOutOnceAndCloseIsIdempotent() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        AsyncHook async =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "async";
                    }

                    @Override
                    public void shutdown() {
                        log.add("async:shutdown");
                    }
                };
        HookChain c = chain(new Lifecycle("blocking", FAIL, false, log), async);
        c.shutdown();
        c.shutdown();
        c.close();
        c.close();
        assertThat(log).containsExactlyInAnyOrder("blocking:shutdown", "async:shutdown");
        assertThat(failure(c.createContainer(POD, CTR)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void closeFailsWaitingCallsAndLeavesNoThreads() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        HookChain c =
                HookChain.builder()
                        .add(
                                creating(
                                        "waits",
                                        FAIL.withTimeout(Duration.ofMinutes(10)),
                                        x -> {
                                            started.countDown();
                                            try {
                                                new CountDownLatch(1).await();
                                            } catch (InterruptedException e) {
                                                Thread.currentThread().interrupt();
                                            }
                                            return HookResult.none();
                                        }))
                        .build();
        CompletionStage<HookResult> pending = c.createContainer(POD, CTR);
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        List<Thread> ours = chainThreads();
        assertThat(ours).isNotEmpty();
        c.close();
        Throwable t = failure(pending);
        assertThat(t).isInstanceOf(HookFailedException.class).hasMessageContaining("closed");
        for (Thread th : ours) {
            th.join(TimeUnit.SECONDS.toMillis(10));
            assertThat(th.isAlive()).as(th.getName()).isFalse();
        }
    }

    static List<Thread> chainThreads() {
        List<Thread> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("cri4j-hook-")) {
                out.add(t);
            }
        }
        return Collections.unmodifiableList(out);
    }

    @Test
    void pinnedEventsAndPolicyDescribeTheChainAsOneHook() {
        HookChain c =
                HookChain.builder()
                        .name("all-of-them")
                        .events(Set.of(HookEvent.CREATE_CONTAINER))
                        .build();
        chains.add(c);
        assertThat(c.name()).isEqualTo("all-of-them");
        assertThat(c.events()).containsExactly(HookEvent.CREATE_CONTAINER);
        assertThat(c.policy().failurePolicy()).isEqualTo(FailurePolicy.FAIL);
        assertThat(c.policy().timeout()).isEqualTo(HookPolicy.MAX_TIMEOUT);
    }
}
