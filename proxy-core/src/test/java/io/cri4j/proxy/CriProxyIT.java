package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.cri.CriInterceptor;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The proxy in front of a hand-written CRI backend, all over real unix sockets. */
class CriProxyIT extends ProxyTestBase {
    static RunPodSandboxRequest pod(String name, String... labels) {
        PodSandboxConfig.Builder c =
                PodSandboxConfig.newBuilder()
                        .setMetadata(
                                PodSandboxMetadata.newBuilder()
                                        .setName(name)
                                        .setNamespace("default")
                                        .setUid("uid-" + name));
        for (int i = 0; i < labels.length; i += 2) {
            c.putLabels(labels[i], labels[i + 1]);
        }
        return RunPodSandboxRequest.newBuilder().setConfig(c).build();
    }

    static CreateContainerRequest container(String podId, RunPodSandboxRequest pod) {
        ContainerConfig.Builder c =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                        .addEnvs(kv("A", "1"))
                        .addEnvs(kv("B", "2"))
                        .addEnvs(kv("C", "3"))
                        .putAnnotations("owner", "kubelet");
        c.getLinuxBuilder()
                .getResourcesBuilder()
                .setCpuShares(512)
                .setCpusetCpus("0-1")
                .setOomScoreAdj(-998);
        return CreateContainerRequest.newBuilder()
                .setPodSandboxId(podId)
                .setConfig(c)
                .setSandboxConfig(pod.getConfig())
                .build();
    }

    static KeyValue kv(String k, String v) {
        return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
    }

    @Test
    void relayedInlineHookedWorkerHookedAndExpiringCallsMixOnOneConnection() throws Exception {
        TestHook inline =
                new TestHook("inline", 0, FailurePolicy.FAIL, HookEvent.ADJUST_POD_SANDBOX);
        inline.inline = true;
        inline.podAnswer = PodSandboxAdjustment.builder().putLabel("inline", "yes").build();
        TestHook threaded =
                new TestHook("threaded", 0, FailurePolicy.FAIL, HookEvent.CREATE_CONTAINER);
        threaded.containerAnswer =
                HookResult.adjust(Adjustments.create().addAnnotation("threaded", "yes").build());
        startProxy(with(inline, threaded));
        // a deadline per call: the 1,200 calls may take longer than one stub's deadline under load
        java.util.function.Supplier<RuntimeServiceGrpc.RuntimeServiceBlockingStub> stubs =
                () ->
                        RuntimeServiceGrpc.newBlockingStub(client)
                                .withDeadlineAfter(30, TimeUnit.SECONDS);
        MethodDescriptor<byte[], byte[]> echo =
                MethodDescriptor.<byte[], byte[]>newBuilder()
                        .setType(MethodDescriptor.MethodType.UNARY)
                        .setFullMethodName("test.Echo/Echo")
                        .setRequestMarshaller(TestBackend.BYTES)
                        .setResponseMarshaller(TestBackend.BYTES)
                        .build();
        java.util.concurrent.ExecutorService pool =
                java.util.concurrent.Executors.newFixedThreadPool(8);
        java.util.concurrent.atomic.AtomicInteger podsMade =
                new java.util.concurrent.atomic.AtomicInteger();
        List<String> expired = new CopyOnWriteArrayList<>();
        try {
            List<java.util.concurrent.Future<?>> work = new java.util.ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int seed = t;
                work.add(
                        pool.submit(
                                () -> {
                                    java.util.Random rnd = new java.util.Random(seed);
                                    String podId =
                                            stubs.get()
                                                    .runPodSandbox(pod("mix-" + seed))
                                                    .getPodSandboxId();
                                    podsMade.incrementAndGet();
                                    for (int i = 0; i < 150; i++) {
                                        switch ((i + seed) % 5) {
                                            case 0 ->
                                                    assertThat(
                                                                    stubs.get()
                                                                            .version(
                                                                                    VersionRequest
                                                                                            .getDefaultInstance())
                                                                            .getRuntimeName())
                                                            .isEqualTo("test-backend");
                                            case 1 -> {
                                                stubs.get()
                                                        .runPodSandbox(
                                                                pod("mix-" + seed + "-" + i));
                                                podsMade.incrementAndGet();
                                            }
                                            case 2 ->
                                                    assertThat(
                                                                    stubs.get()
                                                                            .createContainer(
                                                                                    container(
                                                                                            podId,
                                                                                            pod(
                                                                                                    "mix-"
                                                                                                            + seed)))
                                                                            .getContainerId())
                                                            // the proxy's id, not the runtime's
                                                            .matches("[0-9a-f]{64}");
                                            case 3 -> {
                                                byte[] in = new byte[1 + rnd.nextInt(96 * 1024)];
                                                rnd.nextBytes(in);
                                                byte[] out =
                                                        io.grpc.stub.ClientCalls.blockingUnaryCall(
                                                                client,
                                                                echo,
                                                                io.grpc.CallOptions.DEFAULT
                                                                        .withDeadlineAfter(
                                                                                10,
                                                                                TimeUnit.SECONDS),
                                                                in);
                                                assertThat(out.length).isEqualTo(in.length);
                                                assertThat(out[0]).isEqualTo(in[in.length - 1]);
                                            }
                                            default -> {
                                                // a deadline that may pass in the proxy, the hooks
                                                // or the backend
                                                try {
                                                    RuntimeServiceGrpc.newBlockingStub(client)
                                                            .withDeadlineAfter(
                                                                    rnd.nextInt(400),
                                                                    TimeUnit.MICROSECONDS)
                                                            .createContainer(
                                                                    container(
                                                                            podId,
                                                                            pod("mix-" + seed)));
                                                } catch (io.grpc.StatusRuntimeException e) {
                                                    assertThat(e.getStatus().getCode())
                                                            .as(e.getStatus().toString())
                                                            .isEqualTo(
                                                                    io.grpc.Status.Code
                                                                            .DEADLINE_EXCEEDED);
                                                    expired.add(e.getStatus().toString());
                                                }
                                            }
                                        }
                                    }
                                    return null;
                                }));
            }
            for (java.util.concurrent.Future<?> f : work) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(expired).as("calls whose deadline passed").isNotEmpty();
        // every pod went through the inline hook, every container through the hook-thread one
        assertThat(backend.pods).hasSize(podsMade.get());
        assertThat(backend.pods.values())
                .allSatisfy(p -> assertThat(p.getLabelsMap()).containsEntry("inline", "yes"));
        assertThat(backend.containers).isNotEmpty();
        assertThat(backend.containers.values())
                .allSatisfy(
                        c -> assertThat(c.getAnnotationsMap()).containsEntry("threaded", "yes"));
        assertThat(threaded.threads).allMatch(n -> n.startsWith(WORKER));
        assertThat(inline.threads).allMatch(n -> n.startsWith("cri4j-proxy-io"));
        // and the one connection the client used is still fine
        assertThat(stubs.get().version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("test-backend");
    }

    @Test
    void anInterceptorThatAnswersAfterTheProxyClosedKillsNoThread() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread[] worker = new Thread[1];
        startProxy(
                CriProxy.builder()
                        .addInterceptor(
                                blocking(
                                        "Version",
                                        chain -> {
                                            worker[0] = Thread.currentThread();
                                            entered.countDown();
                                            boolean interrupted = false;
                                            while (true) { // close() interrupts the workers: this
                                                // one answers anyway
                                                try {
                                                    release.await();
                                                    break;
                                                } catch (InterruptedException e) {
                                                    interrupted = true;
                                                }
                                            }
                                            if (interrupted) {
                                                Thread.currentThread().interrupt();
                                            }
                                            return VersionResponse.newBuilder()
                                                    .setRuntimeName("late")
                                                    .build();
                                        })));
        RuntimeServiceGrpc.RuntimeServiceFutureStub stub = RuntimeServiceGrpc.newFutureStub(client);
        List<Throwable> uncaught = new CopyOnWriteArrayList<>();
        Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
        try {
            var call = stub.version(VersionRequest.getDefaultInstance());
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            proxy.close();
            release.countDown();
            worker[0].join(10_000); // the pool is shut down: its thread ends after this task
            assertThat(worker[0].isAlive()).isFalse();
            assertThat(uncaught).as("exceptions that ended the worker").isEmpty();
            assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(StatusRuntimeException.class);
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(before);
        }
    }

    @Test
    void passesThroughUnknownServicesImagesStreamsAndHeaders() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder());
        Metadata h = new Metadata();
        h.put(TestBackend.TEST_HEADER, "from-client");
        VersionResponse v =
                stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h))
                        .version(VersionRequest.newBuilder().setVersion("v1").build());
        assertThat(v.getRuntimeName()).isEqualTo("test-backend");
        assertThat(backend.headerValues).containsExactly("from-client");

        assertThat(
                        ImageServiceGrpc.newBlockingStub(client)
                                .listImages(ListImagesRequest.getDefaultInstance())
                                .getImages(0)
                                .getRepoTags(0))
                .isEqualTo("test/busybox:1");

        Iterator<ContainerEventResponse> events =
                stub.getContainerEvents(GetEventsRequest.getDefaultInstance());
        List<String> ids = new ArrayList<>();
        events.forEachRemaining(e -> ids.add(e.getContainerId()));
        assertThat(ids).containsExactly("ctr-event-0", "ctr-event-1", "ctr-event-2");

        MethodDescriptor<byte[], byte[]> echo =
                MethodDescriptor.<byte[], byte[]>newBuilder()
                        .setType(MethodDescriptor.MethodType.UNARY)
                        .setFullMethodName("test.Echo/Echo")
                        .setRequestMarshaller(TestBackend.BYTES)
                        .setResponseMarshaller(TestBackend.BYTES)
                        .build();
        byte[] out =
                ClientCalls.blockingUnaryCall(
                        client, echo, CallOptions.DEFAULT, "abc".getBytes(StandardCharsets.UTF_8));
        assertThat(new String(out, StandardCharsets.UTF_8)).isEqualTo("cba");

        // a v1alpha2 call to a backend without v1alpha2 gets the backend's UNIMPLEMENTED
        assertThat(proxy.backendServesV1alpha2()).isFalse();
        assertThatThrownBy(
                        () ->
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client)
                                        .version(
                                                io.cri4j.cri.v1alpha2.VersionRequest
                                                        .getDefaultInstance()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.UNIMPLEMENTED));
    }

    @Test
    void interceptorsChangeRequestsAndResponsesAnswerThemselvesAndRunInOrder() throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        CriInterceptor first =
                new CriInterceptor() {
                    @Override
                    @SuppressWarnings("unchecked")
                    public <Q, R> R interceptUnary(UnaryChain<Q, R> chain) throws StatusException {
                        order.add("first:" + chain.method().getBareMethodName());
                        if (chain.method().getBareMethodName().equals("Version")
                                && ((VersionRequest) chain.request())
                                        .getVersion()
                                        .equals("answer-yourself")) {
                            return (R)
                                    VersionResponse.newBuilder()
                                            .setRuntimeName("interceptor")
                                            .build();
                        }
                        R r = chain.proceed(chain.request());
                        if (r instanceof RunPodSandboxResponse p) {
                            return (R)
                                    p.toBuilder()
                                            .setPodSandboxId(p.getPodSandboxId() + "-seen")
                                            .build();
                        }
                        return r;
                    }
                };
        CriInterceptor second =
                blocking(
                        "RunPodSandbox",
                        chain -> {
                            order.add("second:" + chain.method().getBareMethodName());
                            RunPodSandboxRequest r = (RunPodSandboxRequest) chain.request();
                            return chain.proceed(
                                    r.toBuilder()
                                            .setConfig(
                                                    r.getConfig().toBuilder()
                                                            .putLabels("added-by", "second"))
                                            .build());
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(first).addInterceptor(second));

        assertThat(
                        stub.version(
                                        VersionRequest.newBuilder()
                                                .setVersion("answer-yourself")
                                                .build())
                                .getRuntimeName())
                .isEqualTo("interceptor");
        assertThat(backend.versionCalls.get()).isZero();

        RunPodSandboxResponse r = stub.runPodSandbox(pod("p1"));
        assertThat(r.getPodSandboxId()).endsWith("-seen");
        assertThat(backend.received(RunPodSandboxRequest.class).get(0).getConfig().getLabelsMap())
                .containsEntry("added-by", "second");
        assertThat(order)
                .containsExactly("first:Version", "first:RunPodSandbox", "second:RunPodSandbox");
    }

    @Test
    void streamingInterceptorRewritesEvents() throws Exception {
        CriInterceptor rewrite =
                new CriInterceptor() {
                    @Override
                    @SuppressWarnings("unchecked")
                    public <Q, R> void interceptServerStreaming(StreamingChain<Q, R> chain) {
                        StreamObserver<R> out = chain.responses();
                        chain.proceed(
                                chain.request(),
                                new StreamObserver<R>() {
                                    @Override
                                    public void onNext(R value) {
                                        ContainerEventResponse e = (ContainerEventResponse) value;
                                        out.onNext(
                                                (R)
                                                        e.toBuilder()
                                                                .setContainerId(
                                                                        "x-" + e.getContainerId())
                                                                .build());
                                    }

                                    @Override
                                    public void onError(Throwable t) {
                                        out.onError(t);
                                    }

                                    @Override
                                    public void onCompleted() {
                                        out.onCompleted();
                                    }
                                });
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(rewrite));
        List<String> ids = new ArrayList<>();
        stub.getContainerEvents(GetEventsRequest.getDefaultInstance())
                .forEachRemaining(e -> ids.add(e.getContainerId()));
        assertThat(ids).containsExactly("x-ctr-event-0", "x-ctr-event-1", "x-ctr-event-2");
        proxy.close();
        proxy.close(); // idempotent
        assertThat(java.nio.file.Files.exists(dir.resolve("proxy.sock")))
                .as("the listen socket is removed on close")
                .isFalse();
    }

    /**
     * A hook for tests: fixed answers, optional failure or hang; {@link #hook()} is it as a
     * blocking {@link Hook} (run on a hook worker) or, when {@link #inline}, as an {@link
     * AsyncHook} answering at once (run on the proxy's I/O thread; a hang is a stage that never
     * completes).
     */
    static final class TestHook {
        final String name;
        final HookPolicy policy;
        final Set<HookEvent> events;
        volatile HookResult containerAnswer = HookResult.none();
        volatile PodSandboxAdjustment podAnswer = PodSandboxAdjustment.NONE;
        volatile RuntimeException failure;
        volatile CountDownLatch hang;
        volatile boolean inline;

        /** Pod events as "Event:pod name", container events as the NRI container. */
        final List<Object> seen = new CopyOnWriteArrayList<>();

        final List<String> threads = new CopyOnWriteArrayList<>();

        TestHook(String name, int index, FailurePolicy policy, HookEvent... events) {
            this.name = name;
            this.policy = new HookPolicy(index, Duration.ofMillis(300), policy);
            this.events = Set.of(events);
        }

        /** The hook to add to a proxy: a blocking {@link Hook}, or an {@link AsyncHook} inline. */
        Object hook() {
            return inline ? new Async() : new Blocking();
        }

        private void pod(HookEvent e, PodSandbox pod) {
            seen.add(e.displayName() + ":" + pod.getName());
            threads.add(Thread.currentThread().getName());
        }

        private void container(Container c) {
            seen.add(c);
            threads.add(Thread.currentThread().getName());
        }

        /** Fails or hangs, as set; blocking. */
        private void misbehave() throws InterruptedException {
            if (failure != null) {
                throw failure;
            }
            CountDownLatch h = hang;
            if (h != null) {
                h.await();
            }
        }

        /** Fails or hangs, as set; as a stage. */
        private <T> CompletionStage<T> answer(T value) {
            if (failure != null) {
                return CompletableFuture.failedFuture(failure);
            }
            if (hang != null) {
                return new CompletableFuture<>();
            }
            return CompletableFuture.completedFuture(value);
        }

        final class Blocking implements Hook {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return policy;
            }

            @Override
            public Set<HookEvent> events() {
                return events;
            }

            @Override
            public PodSandboxAdjustment adjustPodSandbox(PodSandbox p) throws Exception {
                pod(HookEvent.ADJUST_POD_SANDBOX, p);
                misbehave();
                return podAnswer;
            }

            @Override
            public void runPodSandbox(PodSandbox p) throws Exception {
                pod(HookEvent.RUN_POD_SANDBOX, p);
                misbehave();
            }

            @Override
            public HookResult createContainer(PodSandbox p, Container c) throws Exception {
                container(c);
                misbehave();
                return containerAnswer;
            }

            @Override
            public void startContainer(PodSandbox p, Container c) throws Exception {
                container(c);
                misbehave();
            }

            @Override
            public void postStartContainer(PodSandbox p, Container c) throws Exception {
                container(c);
                misbehave();
            }
        }

        final class Async implements AsyncHook {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return policy;
            }

            @Override
            public Set<HookEvent> events() {
                return events;
            }

            @Override
            public CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox p) {
                pod(HookEvent.ADJUST_POD_SANDBOX, p);
                return answer(podAnswer);
            }

            @Override
            public CompletionStage<Void> runPodSandbox(PodSandbox p) {
                pod(HookEvent.RUN_POD_SANDBOX, p);
                return answer(null);
            }

            @Override
            public CompletionStage<HookResult> createContainer(PodSandbox p, Container c) {
                container(c);
                return answer(containerAnswer);
            }

            @Override
            public CompletionStage<Void> startContainer(PodSandbox p, Container c) {
                container(c);
                return answer(null);
            }

            @Override
            public CompletionStage<Void> postStartContainer(PodSandbox p, Container c) {
                container(c);
                return answer(null);
            }
        }
    }

    /** Adds {@code hooks} (their {@link TestHook#hook()}) to a proxy builder. */
    static CriProxy.Builder with(TestHook... hooks) {
        CriProxy.Builder b = CriProxy.builder();
        for (TestHook h : hooks) {
            Object x = h.hook();
            if (x instanceof AsyncHook a) {
                b.addHook(a);
            } else {
                b.addHook((Hook) x);
            }
        }
        return b;
    }

    static final String WORKER = "cri4j-hook-worker";

    @org.junit.jupiter.params.ParameterizedTest(name = "hook never blocks: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aCreateContainerHookAdjustsEnvAnnotationsResourcesMountsAndDevices(boolean inline)
            throws Exception {
        TestHook hook =
                new TestHook(
                        "inject",
                        0,
                        FailurePolicy.FAIL,
                        HookEvent.CREATE_CONTAINER,
                        HookEvent.START_CONTAINER,
                        HookEvent.POST_START_CONTAINER);
        hook.inline = inline;
        hook.containerAnswer =
                HookResult.adjust(
                        Adjustments.create()
                                .addAnnotation("injected", "yes")
                                .addEnv("B", "two")
                                .addEnv("D", "4")
                                .setLinuxCpuShares(1024)
                                .setLinuxMemoryLimit(1 << 28)
                                .addMount("/data", "bind", "/tmp", "rbind", "ro")
                                .addDevice(Adjustments.device("/dev/xnull", "c", 1, 3))
                                .build());
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(hook));
        RunPodSandboxRequest p = pod("web", "app", "web");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        String ctr = stub.createContainer(container(podId, p)).getContainerId();

        CreateContainerRequest sent = backend.received(CreateContainerRequest.class).get(0);
        assertThat(sent.getConfig().getAnnotationsMap())
                .containsEntry("injected", "yes")
                .containsEntry("owner", "kubelet");
        assertThat(sent.getConfig().getEnvsList())
                .extracting(KeyValue::getKey)
                .containsExactly("A", "B", "C", "D");
        assertThat(sent.getConfig().getEnvs(1).getValue().toStringUtf8()).isEqualTo("two");
        io.cri4j.cri.v1.LinuxContainerResources res = sent.getConfig().getLinux().getResources();
        assertThat(res.getCpuShares()).isEqualTo(1024);
        assertThat(res.getMemoryLimitInBytes()).isEqualTo(1 << 28);
        assertThat(res.getCpusetCpus()).as("a field no hook set stays").isEqualTo("0-1");
        assertThat(res.getOomScoreAdj()).as("a field no hook set stays").isEqualTo(-998);
        assertThat(sent.getConfig().getMountsList())
                .singleElement()
                .satisfies(
                        m -> {
                            assertThat(m.getContainerPath()).isEqualTo("/data");
                            assertThat(m.getHostPath()).isEqualTo("/tmp");
                            assertThat(m.getReadonly()).isTrue();
                        });
        assertThat(sent.getConfig().getDevicesList())
                .singleElement()
                .satisfies(
                        d -> {
                            assertThat(d.getContainerPath()).isEqualTo("/dev/xnull");
                            assertThat(d.getHostPath())
                                    .as("the host node of c 1:3")
                                    .isEqualTo("/dev/null");
                        });
        assertThat(sent.getSandboxConfig()).isEqualTo(p.getConfig());

        Container seen = (Container) hook.seen.get(0);
        assertThat(seen.getName()).isEqualTo("app");
        assertThat(seen.getPodSandboxId()).isEqualTo(podId);
        assertThat(seen.getLinux().getResources().getCpu().getShares().getValue()).isEqualTo(512);

        // StartContainer carries only an id: the hook's container comes from the checkpoint store
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        Container atStart = (Container) hook.seen.get(1);
        assertThat(atStart.getId()).isEqualTo(ctr);
        assertThat(atStart.getName()).isEqualTo("app");
        assertThat(atStart.getAnnotationsMap()).containsEntry("injected", "yes");
        assertThat(atStart.getEnvList()).contains("B=two", "D=4");
        assertThat(hook.seen).hasSize(3); // start + post start
        assertThat(((Container) hook.seen.get(2)).getState())
                .isEqualTo(io.cri4j.hook.nri.v1alpha1.ContainerState.CONTAINER_RUNNING);
        // where the hook ran: a hook worker, or the proxy's I/O thread (no hand-off at all)
        assertThat(hook.threads)
                .allSatisfy(t -> assertThat(t).startsWith(inline ? "cri4j-proxy-io" : WORKER));

        // the runtime's error comes back as it was, and the post-event is not called
        int before = hook.seen.size();
        assertThatThrownBy(
                        () ->
                                stub.startContainer(
                                        StartContainerRequest.newBuilder()
                                                .setContainerId("no-such-container")
                                                .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        assertThat(hook.seen).hasSize(before + 1); // StartContainer only
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "hook never blocks: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aPostEventHookThatFailsOrHangsNeverFailsTheCall(boolean inline) throws Exception {
        TestHook post =
                new TestHook("after", 0, FailurePolicy.FAIL, HookEvent.POST_START_CONTAINER);
        post.inline = inline;
        post.failure = new IllegalStateException("post hook broke");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(post));
        RunPodSandboxRequest p = pod("web");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        String ctr = stub.createContainer(container(podId, p)).getContainerId();
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(post.seen).as("the post-event ran before the answer came back").hasSize(1);
        assertThat(post.threads)
                .singleElement()
                .asString()
                .startsWith(inline ? "cri4j-proxy-io" : WORKER);
        // hung past its timeout (300 ms): logged, and the call still succeeds
        post.failure = null;
        post.hang = new CountDownLatch(1);
        try {
            stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
            assertThat(post.seen).hasSize(2);
        } finally {
            post.hang.countDown();
        }
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "hook never blocks: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aFailingFailPolicyHookFailsTheCallBeforeTheRuntimeSeesIt(boolean inline) throws Exception {
        TestHook hook = new TestHook("strict", 0, FailurePolicy.FAIL, HookEvent.ADJUST_POD_SANDBOX);
        hook.inline = inline;
        hook.failure = new IllegalStateException("no quota for this pod");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(hook));
        assertThatThrownBy(() -> stub.runPodSandbox(pod("web")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .as("as containerd answers a failing NRI plugin")
                                    .isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hook \"strict\"")
                                    .contains("AdjustPodSandbox")
                                    .contains("no quota for this pod");
                        });
        assertThat(backend.received(RunPodSandboxRequest.class)).isEmpty();
    }

    @Test
    void twoHooksSettingOneFieldFailTheCallNamingBothOtherwiseTheyMerge() throws Exception {
        TestHook a = new TestHook("a", 20, FailurePolicy.IGNORE, HookEvent.ADJUST_POD_SANDBOX);
        TestHook b = new TestHook("b", 10, FailurePolicy.IGNORE, HookEvent.ADJUST_POD_SANDBOX);
        a.podAnswer =
                PodSandboxAdjustment.builder()
                        .putAnnotation("from-a", "1")
                        .putLabel("tier", "gold")
                        .cgroupParent("/kubepods/a")
                        .build();
        b.podAnswer =
                PodSandboxAdjustment.builder()
                        .putAnnotation("from-b", "1")
                        .putLabel("tier", "silver")
                        .build();
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(a, b));
        assertThatThrownBy(() -> stub.runPodSandbox(pod("m")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hooks \"b\" and \"a\" both tried to set")
                                    .contains("tier");
                        });
        assertThat(backend.received(RunPodSandboxRequest.class)).isEmpty();

        a.podAnswer =
                PodSandboxAdjustment.builder()
                        .putAnnotation("from-a", "1")
                        .cgroupParent("/kubepods/a")
                        .build();
        stub.runPodSandbox(pod("m"));
        PodSandboxConfig sent = backend.received(RunPodSandboxRequest.class).get(0).getConfig();
        assertThat(sent.getAnnotationsMap())
                .containsEntry("from-a", "1")
                .containsEntry("from-b", "1");
        assertThat(sent.getLabelsMap()).containsEntry("tier", "silver");
        assertThat(sent.getLinux().getCgroupParent()).isEqualTo("/kubepods/a");
    }

    @Test
    void failPolicyFailsTheCallNamingTheHookIgnoreForwardsUnmodified() throws Exception {
        TestHook failing =
                new TestHook("strict", 0, FailurePolicy.FAIL, HookEvent.ADJUST_POD_SANDBOX);
        failing.failure = new IllegalStateException("boom");
        failing.podAnswer = PodSandboxAdjustment.builder().putLabel("x", "y").build();
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(failing));
        assertThatThrownBy(() -> stub.runPodSandbox(pod("f")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(e.getStatus().getDescription())
                                    .contains("strict")
                                    .contains("boom")
                                    .contains("AdjustPodSandbox");
                        });
        assertThat(backend.received(RunPodSandboxRequest.class)).isEmpty();

        // hung past its timeout
        failing.failure = null;
        failing.hang = new CountDownLatch(1);
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> stub.runPodSandbox(pod("f")))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                            assertThat(e.getStatus().getDescription())
                                    .contains("strict")
                                    .contains("did not answer within 300 ms");
                        });
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(3));
        failing.hang.countDown();
    }

    @Test
    void ignorePolicyForwardsTheUnmodifiedRequestOnErrorAndTimeout() throws Exception {
        TestHook lax = new TestHook("lax", 0, FailurePolicy.IGNORE, HookEvent.ADJUST_POD_SANDBOX);
        lax.podAnswer = PodSandboxAdjustment.builder().putLabel("x", "y").build();
        lax.failure = new IllegalStateException("boom");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(lax));
        stub.runPodSandbox(pod("i"));
        lax.failure = null;
        lax.hang = new CountDownLatch(1);
        stub.runPodSandbox(pod("j"));
        lax.hang.countDown();
        assertThat(backend.received(RunPodSandboxRequest.class))
                .hasSize(2)
                .allSatisfy(r -> assertThat(r.getConfig().getLabelsMap()).doesNotContainKey("x"));
    }

    @Test
    void whatCriCannotCarryFailsTheCallUnderFailAndIsDroppedWithAWarningUnderIgnore()
            throws Exception {
        TestHook strict =
                new TestHook("strict-limits", 10, FailurePolicy.FAIL, HookEvent.CREATE_CONTAINER);
        strict.containerAnswer =
                HookResult.adjust(
                        Adjustments.create()
                                .addRlimit("RLIMIT_NOFILE", 1024, 1024)
                                .addEnv("STRICT", "1")
                                .build());
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(strict));
        RunPodSandboxRequest p = pod("u");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        assertThatThrownBy(() -> stub.createContainer(container(podId, p)))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode())
                                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription())
                                    .contains("hook \"strict-limits\"")
                                    .contains("Rlimits RLIMIT_NOFILE")
                                    .contains("CRI has no rlimits");
                        });
        assertThat(backend.received(CreateContainerRequest.class)).isEmpty();
        proxy.close();
        client.shutdownNow();

        TestHook lenient =
                new TestHook(
                        "lenient-limits", 10, FailurePolicy.IGNORE, HookEvent.CREATE_CONTAINER);
        lenient.containerAnswer = strict.containerAnswer;
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub2 = startProxy(with(lenient));
        String podId2 = stub2.runPodSandbox(p).getPodSandboxId();
        stub2.createContainer(container(podId2, p));
        CreateContainerRequest sent = backend.received(CreateContainerRequest.class).get(0);
        assertThat(sent.getConfig().getEnvsList()).extracting(KeyValue::getKey).contains("STRICT");
    }

    @Test
    void podsWithTheSkipLabelAreNeverHooked() throws Exception {
        TestHook hook =
                new TestHook(
                        "h",
                        0,
                        FailurePolicy.FAIL,
                        HookEvent.ADJUST_POD_SANDBOX,
                        HookEvent.CREATE_CONTAINER,
                        HookEvent.START_CONTAINER);
        hook.failure = new IllegalStateException("must not be called");
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(with(hook));
        RunPodSandboxRequest p = pod("s", "runtimeproxy.koordinator.sh/skip-hookserver", "true");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        String ctr = stub.createContainer(container(podId, p)).getContainerId();
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(hook.seen).isEmpty();
    }

    /** A hook subscribed to StopContainer only, recording the containers it hears of. */
    static AsyncHook recordingStops(List<Container> stopped) {
        return new AsyncHook() {
            @Override
            public String name() {
                return "on-stop";
            }

            @Override
            public Set<HookEvent> events() {
                return Set.of(HookEvent.STOP_CONTAINER);
            }

            @Override
            public CompletionStage<HookResult> stopContainer(PodSandbox pod, Container c) {
                stopped.add(c);
                return CompletableFuture.completedFuture(HookResult.none());
            }
        };
    }

    @Test
    void aRuntimeIgnoringTheExitFilterDoesNotStopRunningContainersForTheHooks() throws Exception {
        backend.ignoreListFilter = true;
        List<Container> stopped = new CopyOnWriteArrayList<>();
        AsyncHook onStop = recordingStops(stopped);
        startProxy(CriProxy.builder().addHook(onStop));
        java.util.function.Supplier<RuntimeServiceGrpc.RuntimeServiceBlockingStub> stubs =
                () ->
                        RuntimeServiceGrpc.newBlockingStub(client)
                                .withDeadlineAfter(10, TimeUnit.SECONDS);
        RunPodSandboxRequest p = pod("unfiltered");
        String podId = stubs.get().runPodSandbox(p).getPodSandboxId();
        String ctr = stubs.get().createContainer(container(podId, p)).getContainerId();
        stubs.get().startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        // the proxy looks for exits once a second; the runtime answers with its running container
        int before = backend.received(io.cri4j.cri.v1.ListContainersRequest.class).size();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (stopped.isEmpty()
                && backend.received(io.cri4j.cri.v1.ListContainersRequest.class).size()
                        < before + 2) {
            assertThat(System.nanoTime()).as("two exit polls in 20 s").isLessThan(deadline);
            Thread.sleep(20); // polling a condition with a deadline
        }
        assertThat(stopped).as("no StopContainer for a running container").isEmpty();
        stubs.get()
                .stopContainer(
                        io.cri4j.cri.v1.StopContainerRequest.newBuilder()
                                .setContainerId(ctr)
                                .build());
        assertThat(stopped).singleElement().satisfies(c -> assertThat(c.getId()).isEqualTo(ctr));
    }

    @Test
    void hooksSeeAPodAsItsLastUpdateLeftItAndTheStoreFollowsEventsNoHookIsSubscribedTo()
            throws Exception {
        List<PodSandbox> created = new CopyOnWriteArrayList<>();
        List<Container> stopped = new CopyOnWriteArrayList<>();
        AsyncHook onCreate =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "on-create";
                    }

                    @Override
                    public Set<HookEvent> events() {
                        return Set.of(HookEvent.CREATE_CONTAINER);
                    }

                    @Override
                    public CompletionStage<HookResult> createContainer(
                            PodSandbox pod, Container c) {
                        created.add(pod);
                        return CompletableFuture.completedFuture(HookResult.none());
                    }
                };
        AsyncHook onStop = recordingStops(stopped);
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addHook(onCreate).addHook(onStop));
        RunPodSandboxRequest p = pod("web");
        String podId = stub.runPodSandbox(p).getPodSandboxId();
        stub.createContainer(container(podId, p));
        stub.updatePodSandboxResources(
                io.cri4j.cri.v1.UpdatePodSandboxResourcesRequest.newBuilder()
                        .setPodSandboxId(podId)
                        .setResources(
                                io.cri4j.cri.v1.LinuxContainerResources.newBuilder()
                                        .setCpuShares(2048))
                        .build());
        String ctr = stub.createContainer(container(podId, p)).getContainerId();
        assertThat(created).hasSize(2);
        assertThat(created.get(0).getLinux().hasPodResources()).isFalse();
        assertThat(created.get(1).getLinux().getPodResources().getCpu().getShares().getValue())
                .isEqualTo(2048);

        // no hook is subscribed to StartContainer or UpdateContainerResources: the proxy still
        // records what they did, as the hook subscribed to StopContainer sees
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        stub.updateContainerResources(
                io.cri4j.cri.v1.UpdateContainerResourcesRequest.newBuilder()
                        .setContainerId(ctr)
                        .setLinux(
                                io.cri4j.cri.v1.LinuxContainerResources.newBuilder()
                                        .setCpuShares(1024))
                        .build());
        stub.stopContainer(
                io.cri4j.cri.v1.StopContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(stopped)
                .singleElement()
                .satisfies(
                        c -> {
                            assertThat(c.getId()).isEqualTo(ctr);
                            assertThat(c.getState())
                                    .isEqualTo(
                                            io.cri4j.hook.nri.v1alpha1.ContainerState
                                                    .CONTAINER_STOPPED);
                            assertThat(c.getLinux().getResources().getCpu().getShares().getValue())
                                    .isEqualTo(1024);
                        });
    }

    @Test
    void checkpointStoreIsRebuiltFromTheBackendAtStart() throws Exception {
        // create a pod and a container directly on the backend, before the proxy exists
        ManagedChannel direct = CriChannels.newChannel(CriEndpoint.unix(backend.socket));
        try {
            RuntimeServiceGrpc.RuntimeServiceBlockingStub d =
                    RuntimeServiceGrpc.newBlockingStub(direct);
            RunPodSandboxRequest p = pod("old", "app", "old");
            String podId = d.runPodSandbox(p).getPodSandboxId();
            d.createContainer(container(podId, p));
        } finally {
            direct.shutdownNow();
        }
        TestHook hook = new TestHook("h", 0, FailurePolicy.IGNORE, HookEvent.START_CONTAINER);
        List<PodSandbox> pods = new CopyOnWriteArrayList<>();
        AsyncHook podSeer =
                new AsyncHook() {
                    @Override
                    public String name() {
                        return "pods";
                    }

                    @Override
                    public CompletionStage<Void> startContainer(PodSandbox pod, Container c) {
                        pods.add(pod);
                        return CompletableFuture.completedFuture(null);
                    }
                };
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(with(hook).addHook(podSeer));
        assertThat(proxy.checkpointCounts()).containsExactly(1, 1);
        String ctr = backend.containers.keySet().iterator().next();
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        Container r = (Container) hook.seen.get(0);
        assertThat(pods)
                .singleElement()
                .satisfies(
                        pod -> {
                            assertThat(pod.getName()).isEqualTo("old");
                            assertThat(pod.getLabelsMap()).containsEntry("app", "old");
                        });
        assertThat(r.getName()).isEqualTo("app");
        assertThat(r.getLinux().getResources().getCpu().getShares().getValue()).isEqualTo(512);
    }

    @Test
    void backendRestartIsSurvivedAndCallsFailFastMeanwhile() throws Exception {
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder());
        assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("test-backend");
        backend.close();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> stub.version(VersionRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.UNAVAILABLE));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
        backend = new TestBackend(backend.socket, false).start();
        // the channel reconnects with backoff; wait for a successful call within a bound
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        VersionResponse v = null;
        while (v == null && System.nanoTime() < deadline) {
            try {
                v =
                        RuntimeServiceGrpc.newBlockingStub(client)
                                .withWaitForReady()
                                .withDeadlineAfter(2, TimeUnit.SECONDS)
                                .version(VersionRequest.getDefaultInstance());
            } catch (StatusRuntimeException e) {
                assertThat(e.getStatus().getCode())
                        .isIn(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED);
            }
        }
        assertThat(v).isNotNull();
        assertThat(v.getRuntimeName()).isEqualTo("test-backend");
    }

    @Test
    void v1alpha2CallsAreHookedWhenTheBackendServesV1alpha2() throws Exception {
        backend.close();
        backend = new TestBackend(dir.resolve("backend.sock"), true).start();
        TestHook hook = new TestHook("h", 0, FailurePolicy.FAIL, HookEvent.ADJUST_POD_SANDBOX);
        hook.podAnswer = PodSandboxAdjustment.builder().putLabel("hooked", "v1alpha2").build();
        startProxy(with(hook));
        // the first v1alpha2 call, within a second of the start, asks the backend itself
        io.cri4j.cri.v1alpha2.RunPodSandboxResponse r =
                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client)
                        .runPodSandbox(
                                io.cri4j.cri.v1alpha2.RunPodSandboxRequest.newBuilder()
                                        .setConfig(
                                                io.cri4j.cri.v1alpha2.PodSandboxConfig.newBuilder()
                                                        .setMetadata(
                                                                io.cri4j.cri.v1alpha2
                                                                        .PodSandboxMetadata
                                                                        .newBuilder()
                                                                        .setName("old-kubelet")
                                                                        .setNamespace("ns"))
                                                        .putLabels("app", "x"))
                                        .build());
        assertThat(r.getPodSandboxId()).startsWith("alpha-pod-");
        assertThat(proxy.backendServesV1alpha2()).isTrue();
        io.cri4j.cri.v1alpha2.RunPodSandboxRequest got =
                backend.received(io.cri4j.cri.v1alpha2.RunPodSandboxRequest.class).get(0);
        assertThat(got.getConfig().getLabelsMap())
                .containsEntry("hooked", "v1alpha2")
                .containsEntry("app", "x");
        assertThat(hook.seen).containsExactly("AdjustPodSandbox:old-kubelet");
    }

    @Test
    void theFirstProbeComesASecondAfterTheProxyServes() throws Exception {
        backend.close();
        backend = new TestBackend(dir.resolve("backend.sock"), true).start();
        long before = System.nanoTime();
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder());
        // the first calls do not wait for the gRPC client the probe brings up
        assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("test-backend");
        assertThat(proxy.firstProbe().toCompletableFuture().get(30, TimeUnit.SECONDS))
                .as("the backend serves v1alpha2")
                .isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before))
                .as("the probe's answer, in ms after the proxy was started")
                .isGreaterThanOrEqualTo(CriProxy.FIRST_PROBE_DELAY_MILLIS);
        assertThat(proxy.backendServesV1alpha2()).isTrue();
        assertThat(backend.received(io.cri4j.cri.v1alpha2.VersionRequest.class))
                .as("one v1alpha2 Version: the probe's")
                .hasSize(1);
    }

    @Test
    void v1alpha2IsProbedAgainWhenTheBackendWasDownAtStart() throws Exception {
        backend.close();
        TestHook hook = new TestHook("h", 0, FailurePolicy.FAIL, HookEvent.ADJUST_POD_SANDBOX);
        hook.podAnswer = PodSandboxAdjustment.builder().putLabel("late", "probe").build();
        startProxy(with(hook).probeTimeoutMillis(500));
        assertThat(proxy.backendServesV1alpha2()).isFalse();
        backend = new TestBackend(dir.resolve("backend.sock"), true).start();
        var alpha = io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client);
        io.cri4j.cri.v1alpha2.RunPodSandboxRequest req =
                io.cri4j.cri.v1alpha2.RunPodSandboxRequest.newBuilder()
                        .setConfig(
                                io.cri4j.cri.v1alpha2.PodSandboxConfig.newBuilder()
                                        .setMetadata(
                                                io.cri4j.cri.v1alpha2.PodSandboxMetadata
                                                        .newBuilder()
                                                        .setName("late")))
                        .build();
        // the channel reconnects with backoff: wait (bounded) for the backend to be reachable
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        io.cri4j.cri.v1alpha2.RunPodSandboxResponse r = null;
        while (r == null && System.nanoTime() < deadline) {
            try {
                r =
                        alpha.withWaitForReady()
                                .withDeadlineAfter(2, TimeUnit.SECONDS)
                                .runPodSandbox(req);
            } catch (StatusRuntimeException e) {
                assertThat(e.getStatus().getCode())
                        .isIn(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED);
            }
        }
        assertThat(r).isNotNull();
        assertThat(proxy.backendServesV1alpha2()).isTrue();
        List<io.cri4j.cri.v1alpha2.RunPodSandboxRequest> got =
                backend.received(io.cri4j.cri.v1alpha2.RunPodSandboxRequest.class);
        assertThat(got.get(got.size() - 1).getConfig().getLabelsMap())
                .containsEntry("late", "probe");
    }
}
