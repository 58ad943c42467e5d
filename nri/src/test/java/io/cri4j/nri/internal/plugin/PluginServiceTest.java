package io.cri4j.nri.internal.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConfiguration;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.ConfigureResponse;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.CreateContainerRequest;
import io.cri4j.hook.nri.v1alpha1.CreateContainerResponse;
import io.cri4j.hook.nri.v1alpha1.Event;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.StateChangeEvent;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeResponse;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentResponse;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.PluginEvents;
import io.cri4j.nri.internal.ttrpc.TtrpcPeer;
import io.cri4j.nri.internal.ttrpc.TtrpcStatus;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** How NRI's plugin service calls a hook: the mask, Synchronize's continuation, StateChange, bounds. */
class PluginServiceTest {

    private final EmbeddedChannel loop = new EmbeddedChannel();
    private final List<String> calls = new ArrayList<>();
    private final List<Object> args = new ArrayList<>();
    private final List<ConfigureRequest> configured = new ArrayList<>();
    private int synchronizedCount;

    /**
     * The per-event calls' table, read as a registered plugin has read it before its first event:
     * the deadline tests measure the runtime's time from a call's arrival, which reading it in the
     * middle of a call would spend.
     */
    @BeforeAll
    static void eventTable() {
        PluginEvents.load();
    }

    @AfterEach
    void close() {
        loop.finishAndReleaseAll();
    }

    /** Records every call; createContainer answers with {@code create}. */
    private final class Recorder implements AsyncHook {
        final Set<HookEvent> events;
        final HookPolicy policy;
        CompletionStage<HookResult> create = CompletableFuture.completedFuture(HookResult.none());
        CompletionStage<Void> validate = CompletableFuture.completedFuture(null);

        Recorder(Set<HookEvent> events, HookPolicy policy) {
            this.events = events;
            this.policy = policy;
        }

        @Override
        public String name() {
            return "rec";
        }

        @Override
        public HookPolicy policy() {
            return policy;
        }

        @Override
        public Set<HookEvent> events() {
            return events;
        }

        private CompletionStage<Void> rec(String m, Object... a) {
            calls.add(m);
            args.addAll(List.of(a));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Void> configure(HookConfiguration c) {
            return rec("configure", c);
        }

        @Override
        public CompletionStage<List<ContainerUpdate>> synchronize(
                List<PodSandbox> p, List<Container> c) {
            rec("synchronize", p, c);
            return CompletableFuture.completedFuture(
                    List.of(ContainerUpdate.newBuilder().setContainerId("u1").build()));
        }

        @Override
        public CompletionStage<Void> runPodSandbox(PodSandbox p) {
            return rec("runPodSandbox", p);
        }

        @Override
        public CompletionStage<Void> stopPodSandbox(PodSandbox p) {
            return rec("stopPodSandbox", p);
        }

        @Override
        public CompletionStage<Void> removePodSandbox(PodSandbox p) {
            return rec("removePodSandbox", p);
        }

        @Override
        public CompletionStage<Void> postUpdatePodSandbox(PodSandbox p) {
            return rec("postUpdatePodSandbox", p);
        }

        @Override
        public CompletionStage<HookResult> createContainer(PodSandbox p, Container c) {
            rec("createContainer", p, c);
            return create;
        }

        @Override
        public CompletionStage<Void> postCreateContainer(PodSandbox p, Container c) {
            return rec("postCreateContainer", c);
        }

        @Override
        public CompletionStage<Void> startContainer(PodSandbox p, Container c) {
            return rec("startContainer", c);
        }

        @Override
        public CompletionStage<Void> postStartContainer(PodSandbox p, Container c) {
            return rec("postStartContainer", c);
        }

        @Override
        public CompletionStage<Void> postUpdateContainer(PodSandbox p, Container c) {
            return rec("postUpdateContainer", c);
        }

        @Override
        public CompletionStage<Void> removeContainer(PodSandbox p, Container c) {
            return rec("removeContainer", c);
        }

        @Override
        public CompletionStage<Void> validateContainerAdjustment(
                ValidateContainerAdjustmentRequest r) {
            rec("validate", r);
            return validate;
        }
    }

    private PluginService service(AsyncHook hook) {
        return new PluginService(
                hook,
                hook.policy(),
                hook.events(),
                loop.eventLoop(),
                new PluginService.Session() {
                    @Override
                    public void configured(ConfigureRequest r) {
                        configured.add(r);
                    }

                    @Override
                    public RuntimeHandle runtimeHandle() {
                        return (u, e) -> CompletableFuture.completedFuture(List.of());
                    }

                    @Override
                    public void synchronizedWithRuntime() {
                        synchronizedCount++;
                    }

                    @Override
                    public void shutdownRequested() {
                        calls.add("shutdownRequested");
                    }

                    @Override
                    public void registrationFailed(Throwable cause) {
                        calls.add("registrationFailed");
                    }
                });
    }

    private static TtrpcPeer.Call call(String method, Message m) {
        return new TtrpcPeer.Call(
                1,
                NriWire.PLUGIN_SERVICE,
                method,
                m.toByteArray(),
                TimeUnit.SECONDS.toNanos(2),
                System.nanoTime(),
                List.of());
    }

    private static <T> T answer(CompletionStage<byte[]> s, com.google.protobuf.Parser<T> parser)
            throws Exception {
        return parser.parseFrom(s.toCompletableFuture().get(1, TimeUnit.SECONDS));
    }

    private static StatusRuntimeException error(CompletionStage<byte[]> s) {
        return (StatusRuntimeException)
                TtrpcStatus.unwrap(s.toCompletableFuture().handle((v, t) -> t).join());
    }

    private static final Set<HookEvent> ALL =
            EnumSet.complementOf(EnumSet.of(HookEvent.ADJUST_POD_SANDBOX));

    @Test
    void configuresTheHookAndAnswersItsEventMask() throws Exception {
        Recorder hook =
                new Recorder(
                        EnumSet.of(
                                HookEvent.CREATE_CONTAINER,
                                HookEvent.REMOVE_CONTAINER,
                                HookEvent.ADJUST_POD_SANDBOX),
                        HookPolicy.DEFAULT);
        ConfigureResponse r =
                answer(
                        service(hook)
                                .handle(
                                        call(
                                                "Configure",
                                                ConfigureRequest.newBuilder()
                                                        .setConfig("cfg")
                                                        .setRuntimeName("containerd")
                                                        .setRuntimeVersion("2.1.4")
                                                        .setRegistrationTimeout(5000)
                                                        .setRequestTimeout(3000)
                                                        .build())),
                        ConfigureResponse.parser());
        assertThat(r.getEvents()).isEqualTo((1 << 3) | (1 << 10));
        HookConfiguration cfg = (HookConfiguration) args.get(0);
        assertThat(cfg.config()).isEqualTo("cfg");
        assertThat(cfg.runtimeName()).isEqualTo("containerd");
        assertThat(cfg.requestTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(cfg.registrationTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(configured).hasSize(1);
    }

    @Test
    void leavesOutTheEventsAnNriV08RuntimeRefuses() throws Exception {
        Recorder hook =
                new Recorder(
                        EnumSet.of(
                                HookEvent.CREATE_CONTAINER,
                                HookEvent.UPDATE_POD_SANDBOX,
                                HookEvent.VALIDATE_CONTAINER_ADJUSTMENT),
                        HookPolicy.DEFAULT);
        ConfigureRequest v08 =
                ConfigureRequest.newBuilder()
                        .setRuntimeName("containerd")
                        .setRuntimeVersion("2.1.4")
                        .build();
        assertThat(
                        answer(
                                        service(hook).handle(call("Configure", v08)),
                                        ConfigureResponse.parser())
                                .getEvents())
                .isEqualTo(1 << 3);
        ConfigureRequest v012 = v08.toBuilder().setNRIVersion("v0.12.2").build();
        assertThat(
                        answer(
                                        service(hook).handle(call("Configure", v012)),
                                        ConfigureResponse.parser())
                                .getEvents())
                .isEqualTo((1 << 3) | (1 << 11) | (1 << 13));
        ConfigureRequest v09 = v08.toBuilder().setNRIVersion("v0.9.4").build();
        assertThat(
                        answer(
                                        service(hook).handle(call("Configure", v09)),
                                        ConfigureResponse.parser())
                                .getEvents())
                .isEqualTo(1 << 3);
        // a hook with only newer events stays registered: subscribed to an event it does not
        // get called for (an empty mask would mean all events)
        Recorder onlyNew =
                new Recorder(EnumSet.of(HookEvent.UPDATE_POD_SANDBOX), HookPolicy.DEFAULT);
        PluginService s = service(onlyNew);
        int mask = answer(s.handle(call("Configure", v08)), ConfigureResponse.parser()).getEvents();
        assertThat(mask).isEqualTo(HookEvent.REMOVE_POD_SANDBOX.nriMaskBit());
        calls.clear();
        answer(
                s.handle(
                        call(
                                "StateChange",
                                StateChangeEvent.newBuilder()
                                        .setEvent(Event.REMOVE_POD_SANDBOX)
                                        .setPod(PodSandbox.newBuilder().setId("p"))
                                        .build())),
                io.cri4j.hook.nri.v1alpha1.Empty.parser());
        assertThat(calls).as("the placeholder event does not reach the hook").isEmpty();
    }

    @Test
    void readsTheNriVersionsThatKnowTheV010Events() {
        assertThat(PluginService.knowsV010Events("")).isFalse();
        assertThat(PluginService.knowsV010Events("v0.9.4")).isFalse();
        assertThat(PluginService.knowsV010Events("v0.10.0")).isTrue();
        assertThat(PluginService.knowsV010Events("v0.12.0")).isTrue();
        assertThat(PluginService.knowsV010Events("v1.0.0-rc.1")).isTrue();
        assertThat(PluginService.knowsV010Events("0.0.0-unknown")).isFalse();
        assertThat(PluginService.knowsV010Events("devel")).isTrue();
    }

    @Test
    void collectsSynchronizeContinuationsAndCallsTheHookOnceWithEverything() throws Exception {
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT);
        PluginService s = service(hook);
        PodSandbox p1 = PodSandbox.newBuilder().setId("p1").build();
        PodSandbox p2 = PodSandbox.newBuilder().setId("p2").build();
        Container c1 = Container.newBuilder().setId("c1").build();
        Container c2 = Container.newBuilder().setId("c2").build();
        SynchronizeResponse first =
                answer(
                        s.handle(
                                call(
                                        "Synchronize",
                                        SynchronizeRequest.newBuilder()
                                                .addPods(p1)
                                                .addContainers(c1)
                                                .setMore(true)
                                                .build())),
                        SynchronizeResponse.parser());
        assertThat(first.getMore()).isTrue();
        assertThat(first.getUpdateList()).isEmpty();
        assertThat(calls).isEmpty();
        SynchronizeResponse last =
                answer(
                        s.handle(
                                call(
                                        "Synchronize",
                                        SynchronizeRequest.newBuilder()
                                                .addPods(p2)
                                                .addContainers(c2)
                                                .build())),
                        SynchronizeResponse.parser());
        assertThat(last.getMore()).isFalse();
        assertThat(last.getUpdateList())
                .extracting(ContainerUpdate::getContainerId)
                .containsExactly("u1");
        assertThat(calls).containsExactly("synchronize");
        assertThat(args).containsExactly(List.of(p1, p2), List.of(c1, c2));
        assertThat(synchronizedCount).isEqualTo(1);
    }

    @Test
    void mapsEveryStateChangeToItsHookMethod() throws Exception {
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT);
        PluginService s = service(hook);
        Event[] events = {
            Event.RUN_POD_SANDBOX,
            Event.STOP_POD_SANDBOX,
            Event.REMOVE_POD_SANDBOX,
            Event.POST_UPDATE_POD_SANDBOX,
            Event.POST_CREATE_CONTAINER,
            Event.START_CONTAINER,
            Event.POST_START_CONTAINER,
            Event.POST_UPDATE_CONTAINER,
            Event.REMOVE_CONTAINER
        };
        for (Event e : events) {
            s.handle(
                            call(
                                    "StateChange",
                                    StateChangeEvent.newBuilder()
                                            .setEvent(e)
                                            .setPod(PodSandbox.newBuilder().setId("p"))
                                            .setContainer(Container.newBuilder().setId("c"))
                                            .build()))
                    .toCompletableFuture()
                    .get(1, TimeUnit.SECONDS);
        }
        assertThat(calls)
                .containsExactly(
                        "runPodSandbox",
                        "stopPodSandbox",
                        "removePodSandbox",
                        "postUpdatePodSandbox",
                        "postCreateContainer",
                        "startContainer",
                        "postStartContainer",
                        "postUpdateContainer",
                        "removeContainer");
    }

    @Test
    void callsOnlyTheSubscribedEvents() throws Exception {
        Recorder hook = new Recorder(EnumSet.of(HookEvent.CREATE_CONTAINER), HookPolicy.DEFAULT);
        service(hook)
                .handle(
                        call(
                                "StateChange",
                                StateChangeEvent.newBuilder()
                                        .setEvent(Event.START_CONTAINER)
                                        .build()))
                .toCompletableFuture()
                .get(1, TimeUnit.SECONDS);
        assertThat(calls).isEmpty();
    }

    @Test
    void answersCreateContainerWithTheHooksAdjustmentUpdatesAndEvictions() throws Exception {
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT);
        ContainerAdjustment adj =
                ContainerAdjustment.newBuilder()
                        .addEnv(KeyValue.newBuilder().setKey("A").setValue("1"))
                        .build();
        hook.create =
                CompletableFuture.completedFuture(
                        HookResult.builder()
                                .adjust(adj)
                                .addUpdate(
                                        ContainerUpdate.newBuilder()
                                                .setContainerId("other")
                                                .build())
                                .evict("bad", "too big")
                                .build());
        CreateContainerResponse r =
                answer(
                        service(hook)
                                .handle(
                                        call(
                                                "CreateContainer",
                                                CreateContainerRequest.newBuilder()
                                                        .setPod(
                                                                PodSandbox.newBuilder()
                                                                        .setName("p"))
                                                        .setContainer(
                                                                Container.newBuilder().setName("c"))
                                                        .build())),
                        CreateContainerResponse.parser());
        assertThat(r.getAdjust()).isEqualTo(adj);
        assertThat(r.getUpdate(0).getContainerId()).isEqualTo("other");
        assertThat(r.getEvict(0).getContainerId()).isEqualTo("bad");
        assertThat(r.getEvict(0).getReason()).isEqualTo("too big");
    }

    @Test
    void answersBeforeTheRuntimesDeadlineWithoutTheResultOfALateHookUnderIgnore() throws Exception {
        loop.freezeTime();
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT.withTimeout(Duration.ofSeconds(30)));
        CompletableFuture<HookResult> never = new CompletableFuture<>();
        hook.create = never;
        CompletionStage<byte[]> answer =
                service(hook)
                        .handle(
                                call(
                                        "CreateContainer",
                                        CreateContainerRequest.newBuilder()
                                                .setPod(
                                                        PodSandbox.newBuilder()
                                                                .setNamespace("ns")
                                                                .setName("p"))
                                                .setContainer(
                                                        Container.newBuilder()
                                                                .setName("c")
                                                                .setId("0123456789abcdef"))
                                                .build()));
        loop.advanceTimeBy(1850, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        assertThat(answer).isNotDone();
        loop.advanceTimeBy(
                100, TimeUnit.MILLISECONDS); // 1.95 s: 2 s minus the 100 ms margin... minus now
        loop.runScheduledPendingTasks();
        assertThat(answer.toCompletableFuture()).isCompleted();
        assertThat(answer(answer, CreateContainerResponse.parser()))
                .isEqualTo(CreateContainerResponse.getDefaultInstance());
        assertThat(never).as("the hook's call was cancelled").isCancelled();
    }

    @Test
    void failsWithAnErrorNamingTheHookAtItsOwnTimeoutUnderFail() {
        loop.freezeTime();
        Recorder hook =
                new Recorder(
                        ALL,
                        HookPolicy.DEFAULT
                                .withTimeout(Duration.ofMillis(500))
                                .withFailurePolicy(FailurePolicy.FAIL));
        hook.create = new CompletableFuture<>();
        CompletionStage<byte[]> answer =
                service(hook)
                        .handle(
                                call(
                                        "CreateContainer",
                                        CreateContainerRequest.newBuilder()
                                                .setPod(
                                                        PodSandbox.newBuilder()
                                                                .setNamespace("ns")
                                                                .setName("p"))
                                                .setContainer(
                                                        Container.newBuilder()
                                                                .setName("c")
                                                                .setId("c1"))
                                                .build()));
        loop.advanceTimeBy(501, TimeUnit.MILLISECONDS);
        loop.runScheduledPendingTasks();
        StatusRuntimeException e = error(answer);
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(e.getStatus().getDescription())
                .isEqualTo(
                        "hook 'rec' did not answer CreateContainer of container ns/p/c (c1) within its timeout of 500 ms");
    }

    @Test
    void aFailingHookIsIgnoredOrFailsTheEventByItsPolicy() throws Exception {
        CreateContainerRequest req =
                CreateContainerRequest.newBuilder()
                        .setPod(PodSandbox.newBuilder().setNamespace("ns").setName("p"))
                        .setContainer(Container.newBuilder().setName("c").setId("c1"))
                        .build();
        Recorder ignore = new Recorder(ALL, HookPolicy.DEFAULT);
        ignore.create = CompletableFuture.failedFuture(new IllegalStateException("no quota"));
        assertThat(
                        answer(
                                service(ignore).handle(call("CreateContainer", req)),
                                CreateContainerResponse.parser()))
                .isEqualTo(CreateContainerResponse.getDefaultInstance());
        Recorder fail = new Recorder(ALL, HookPolicy.DEFAULT.withFailurePolicy(FailurePolicy.FAIL));
        fail.create = CompletableFuture.failedFuture(new IllegalStateException("no quota"));
        StatusRuntimeException e = error(service(fail).handle(call("CreateContainer", req)));
        assertThat(e.getStatus().getDescription())
                .isEqualTo(
                        "hook 'rec' failed at CreateContainer of container ns/p/c (c1): no quota");
    }

    @Test
    void aValidatorThatThrowsRejectsTheAdjustmentWithItsReason() throws Exception {
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT);
        hook.validate =
                CompletableFuture.failedFuture(
                        new IllegalArgumentException("privileged mounts are not allowed"));
        ValidateContainerAdjustmentResponse r =
                answer(
                        service(hook)
                                .handle(
                                        call(
                                                "ValidateContainerAdjustment",
                                                ValidateContainerAdjustmentRequest
                                                        .getDefaultInstance())),
                        ValidateContainerAdjustmentResponse.parser());
        assertThat(r.getReject()).isTrue();
        assertThat(r.getReason()).isEqualTo("hook 'rec': privileged mounts are not allowed");
        Recorder ok = new Recorder(ALL, HookPolicy.DEFAULT);
        assertThat(
                        answer(
                                        service(ok)
                                                .handle(
                                                        call(
                                                                "ValidateContainerAdjustment",
                                                                ValidateContainerAdjustmentRequest
                                                                        .getDefaultInstance())),
                                        ValidateContainerAdjustmentResponse.parser())
                                .getReject())
                .isFalse();
    }

    @Test
    void reportsShutdownAndRefusesUnknownMethods() {
        Recorder hook = new Recorder(ALL, HookPolicy.DEFAULT);
        service(hook)
                .handle(call("Shutdown", io.cri4j.hook.nri.v1alpha1.Empty.getDefaultInstance()));
        assertThat(calls).containsExactly("shutdownRequested");
        StatusRuntimeException e =
                error(
                        service(hook)
                                .handle(
                                        call(
                                                "Frobnicate",
                                                io.cri4j.hook.nri.v1alpha1.Empty
                                                        .getDefaultInstance())));
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
    }

    @Test
    void aHookChainsVerdictFailsTheEventWhateverThePolicy() {
        Recorder chainLike = new Recorder(ALL, HookPolicy.DEFAULT); // IGNORE
        chainLike.create =
                CompletableFuture.failedFuture(
                        new io.cri4j.hook.HookConflictException(
                                HookEvent.CREATE_CONTAINER,
                                "container ns/p/c",
                                "env",
                                "CRI4J_TEAM",
                                "second",
                                "owner-team"));
        StatusRuntimeException e =
                error(
                        service(chainLike)
                                .handle(
                                        call(
                                                "CreateContainer",
                                                CreateContainerRequest.newBuilder()
                                                        .setPod(
                                                                PodSandbox.newBuilder()
                                                                        .setNamespace("ns")
                                                                        .setName("p"))
                                                        .setContainer(
                                                                Container.newBuilder()
                                                                        .setName("c")
                                                                        .setId("c1"))
                                                        .build())));
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(e.getStatus().getDescription())
                .contains("second")
                .contains("owner-team")
                .contains("CRI4J_TEAM")
                .endsWith("(CreateContainer of container ns/p/c (c1))");
    }
}
