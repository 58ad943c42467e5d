package io.cri4j.proxy;

import static io.cri4j.proxy.CriProxyIT.container;
import static io.cri4j.proxy.CriProxyIT.pod;
import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StartContainerResponse;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.hook.cri.CriInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link AsyncCriInterceptor}s in the proxy: their chain runs on the proxy's I/O thread, with the
 * backend call on the relay's connection, over real unix sockets; a blocking interceptor in the
 * same chain runs on a worker and leaves the others on the I/O thread.
 */
class AsyncInterceptorIT extends ProxyTestBase {
    private static final String IO_THREAD = "cri4j-proxy-io";

    /** An asynchronous interceptor for tests: one method, the link's behaviour a function. */
    static final class Async implements AsyncCriInterceptor {
        final String method;
        final Function<AsyncUnaryChain<Object, Object>, CompletionStage<Object>> body;
        final List<String> threads = new CopyOnWriteArrayList<>();

        Async(
                String method,
                Function<AsyncUnaryChain<Object, Object>, CompletionStage<Object>> body) {
            this.method = method;
            this.body = body;
        }

        @Override
        public boolean intercepts(MethodDescriptor<?, ?> m) {
            return m.getBareMethodName().equals(method);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
            threads.add(Thread.currentThread().getName());
            return (CompletionStage<R>) body.apply((AsyncUnaryChain<Object, Object>) chain);
        }
    }

    @Test
    void chainRunsOnTheIoThreadChangesRequestAndResponseAndAnswersItself() throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        List<String> after = new CopyOnWriteArrayList<>();
        Async first =
                new Async(
                        "RunPodSandbox",
                        chain -> {
                            order.add("first");
                            return chain.proceed(chain.request())
                                    .thenApply(
                                            r -> {
                                                after.add(Thread.currentThread().getName());
                                                RunPodSandboxResponse p = (RunPodSandboxResponse) r;
                                                return p.toBuilder()
                                                        .setPodSandboxId(
                                                                p.getPodSandboxId() + "-seen")
                                                        .build();
                                            });
                        });
        Async second =
                new Async(
                        "RunPodSandbox",
                        chain -> {
                            order.add("second");
                            RunPodSandboxRequest r = (RunPodSandboxRequest) chain.request();
                            return chain.proceed(
                                    r.toBuilder()
                                            .setConfig(
                                                    r.getConfig().toBuilder()
                                                            .putLabels("added-by", "second"))
                                            .build());
                        });
        Async self =
                new Async(
                        "Version",
                        chain ->
                                CompletableFuture.completedFuture(
                                        VersionResponse.newBuilder()
                                                .setRuntimeName("interceptor")
                                                .build()));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(
                        CriProxy.builder()
                                .addInterceptor(first)
                                .addInterceptor(second)
                                .addInterceptor(self));

        RunPodSandboxResponse r = stub.runPodSandbox(pod("p1"));
        assertThat(r.getPodSandboxId()).startsWith("pod-").endsWith("-seen");
        assertThat(backend.received(RunPodSandboxRequest.class))
                .singleElement()
                .satisfies(
                        q ->
                                assertThat(q.getConfig().getLabelsMap())
                                        .containsEntry("added-by", "second"));
        assertThat(order).containsExactly("first", "second");
        assertThat(first.threads).singleElement().asString().startsWith(IO_THREAD);
        assertThat(second.threads).singleElement().asString().startsWith(IO_THREAD);
        assertThat(after)
                .as("the rest of the chain runs where the answer came in")
                .singleElement()
                .asString()
                .startsWith(IO_THREAD);

        assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("interceptor");
        assertThat(backend.versionCalls.get()).as("answered without proceeding").isZero();
        assertThat(self.threads).singleElement().asString().startsWith(IO_THREAD);
    }

    @ParameterizedTest(name = "with a blocking interceptor after it (on a worker): {0}")
    @ValueSource(booleans = {false, true})
    void theRuntimesErrorReachesTheChainAndTheClientAsItCameUnlessTheChainRecovers(boolean onWorker)
            throws Exception {
        List<Status> seen = new CopyOnWriteArrayList<>();
        Async recover =
                new Async(
                        "StartContainer",
                        chain ->
                                chain.proceed(chain.request())
                                        .exceptionally(
                                                failure -> {
                                                    Status s = Status.fromThrowable(failure);
                                                    seen.add(s);
                                                    if (((StartContainerRequest) chain.request())
                                                            .getContainerId()
                                                            .equals("recover-me")) {
                                                        return StartContainerResponse
                                                                .getDefaultInstance();
                                                    }
                                                    throw new java.util.concurrent
                                                            .CompletionException(failure);
                                                }));
        CriProxy.Builder b = CriProxy.builder().addInterceptor(recover);
        if (onWorker) {
            b.addInterceptor(blocking("StartContainer", chain -> chain.proceed(chain.request())));
        }
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(b);
        ManagedChannel direct =
                CriChannels.newChannel(io.cri4j.cri.CriEndpoint.unix(backend.socket));
        try {
            StatusRuntimeException viaProxy =
                    catchStatus(
                            () ->
                                    stub.startContainer(
                                            StartContainerRequest.newBuilder()
                                                    .setContainerId("no-such")
                                                    .build()));
            StatusRuntimeException directly =
                    catchStatus(
                            () ->
                                    RuntimeServiceGrpc.newBlockingStub(direct)
                                            .startContainer(
                                                    StartContainerRequest.newBuilder()
                                                            .setContainerId("no-such")
                                                            .build()));
            assertThat(viaProxy.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
            assertThat(viaProxy.getStatus().getDescription())
                    .isEqualTo(directly.getStatus().getDescription())
                    .isEqualTo("container no-such not found (100% gone, ü)");
            assertThat(viaProxy.getTrailers().get(TestBackend.TEST_HEADER))
                    .isEqualTo("missing no-such");
            assertThat(seen)
                    .singleElement()
                    .satisfies(
                            s -> {
                                assertThat(s.getCode()).isEqualTo(Status.Code.NOT_FOUND);
                                assertThat(s.getDescription())
                                        .isEqualTo("container no-such not found (100% gone, ü)");
                            });

            stub.startContainer(
                    StartContainerRequest.newBuilder().setContainerId("recover-me").build());
            assertThat(seen).hasSize(2);
            assertThat(recover.threads)
                    .hasSize(2)
                    .allSatisfy(t -> assertThat(t).as("chain thread").startsWith(IO_THREAD));
        } finally {
            direct.shutdownNow();
        }
    }

    @Test
    void failuresBecomeStatusesThatNameTheProblem() throws Exception {
        ExecutorService elsewhere =
                Executors.newSingleThreadExecutor(r -> new Thread(r, "elsewhere"));
        List<String> completedOn = new CopyOnWriteArrayList<>();
        Async odd =
                new Async(
                        "Version",
                        chain -> {
                            switch (((VersionRequest) chain.request()).getVersion()) {
                                case "status":
                                    return CompletableFuture.failedFuture(
                                            Status.PERMISSION_DENIED
                                                    .withDescription("not you")
                                                    .asException());
                                case "throw":
                                    throw new IllegalStateException("boom");
                                case "null":
                                    return null;
                                case "elsewhere":
                                    // work that waits goes to a thread of the interceptor's own,
                                    // then proceeds from there
                                    return CompletableFuture.supplyAsync(
                                                    () ->
                                                            VersionRequest.newBuilder()
                                                                    .setVersion("from-elsewhere")
                                                                    .build(),
                                                    elsewhere)
                                            .thenCompose(chain::proceed)
                                            .thenApplyAsync(
                                                    v -> {
                                                        completedOn.add(
                                                                Thread.currentThread().getName());
                                                        return ((VersionResponse) v)
                                                                .toBuilder()
                                                                        .setRuntimeVersion(
                                                                                "changed")
                                                                        .build();
                                                    },
                                                    elsewhere);
                                default:
                                    return chain.proceed(chain.request());
                            }
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(odd));
        try {
            assertThat(catchStatus(() -> stub.version(version("status"))).getStatus())
                    .satisfies(
                            s -> {
                                assertThat(s.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                                assertThat(s.getDescription()).isEqualTo("not you");
                            });
            assertThat(catchStatus(() -> stub.version(version("throw"))).getStatus())
                    .satisfies(
                            s -> {
                                assertThat(s.getCode()).isEqualTo(Status.Code.INTERNAL);
                                assertThat(s.getDescription())
                                        .contains("runtime.v1.RuntimeService/Version")
                                        .contains("boom");
                            });
            assertThat(catchStatus(() -> stub.version(version("null"))).getStatus())
                    .satisfies(
                            s -> {
                                assertThat(s.getCode()).isEqualTo(Status.Code.INTERNAL);
                                assertThat(s.getDescription())
                                        .contains("returned no stage")
                                        .contains("runtime.v1.RuntimeService/Version");
                            });
            assertThat(backend.versionCalls.get()).isZero();

            VersionResponse v = stub.version(version("elsewhere"));
            assertThat(v.getRuntimeVersion()).isEqualTo("changed");
            assertThat(completedOn).containsExactly("elsewhere");
            assertThat(backend.received(VersionRequest.class))
                    .singleElement()
                    .satisfies(q -> assertThat(q.getVersion()).isEqualTo("from-elsewhere"));
            // the proxy still serves on the same connection
            assertThat(stub.version(version("plain")).getRuntimeName()).isEqualTo("test-backend");
        } finally {
            elsewhere.shutdownNow();
        }
    }

    @Test
    void aSecondProceedSendsTheRequestAgainWithTheClientsHeaders() throws Exception {
        Async retry =
                new Async(
                        "StartContainer",
                        chain ->
                                chain.proceed(chain.request())
                                        .exceptionallyCompose(
                                                failure -> {
                                                    if (Status.fromThrowable(failure).getCode()
                                                            != Status.Code.NOT_FOUND) {
                                                        return CompletableFuture.failedFuture(
                                                                failure);
                                                    }
                                                    // the first attempt named a container the
                                                    // runtime does not have: try the fallback
                                                    return chain.proceed(
                                                            StartContainerRequest.newBuilder()
                                                                    .setContainerId(
                                                                            chain.metadata()
                                                                                    .get(FALLBACK))
                                                                    .build());
                                                }));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(retry));
        String ctr = stub.createContainer(container("pod-x", pod("x"))).getContainerId();
        Metadata h = new Metadata();
        h.put(TestBackend.TEST_HEADER, "from-client");
        h.put(FALLBACK, ctr);
        stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h))
                .startContainer(
                        StartContainerRequest.newBuilder().setContainerId("no-such").build());
        assertThat(backend.received(StartContainerRequest.class))
                .extracting(StartContainerRequest::getContainerId)
                .containsExactly("no-such", ctr);
        assertThat(backend.headerValues)
                .as("both attempts carry the client's headers")
                .containsExactly("from-client", "from-client");
    }

    private static final Metadata.Key<String> FALLBACK =
            Metadata.Key.of("x-fallback", Metadata.ASCII_STRING_MARSHALLER);

    @Test
    void aBlockingInterceptorOnTheSameMethodRunsOnAWorkerAndTheOthersStayOnTheIoThread()
            throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        List<String> afterAsync = new CopyOnWriteArrayList<>();
        Async async =
                new Async(
                        "RunPodSandbox",
                        chain -> {
                            order.add("async");
                            return chain.proceed(chain.request())
                                    .thenApply(
                                            r -> {
                                                afterAsync.add(Thread.currentThread().getName());
                                                return r;
                                            });
                        });
        Async version = new Async("Version", chain -> chain.proceed(chain.request()));
        List<String> blockingOn = new CopyOnWriteArrayList<>();
        CriInterceptor blocking =
                blocking(
                        "RunPodSandbox",
                        chain -> {
                            order.add("blocking");
                            blockingOn.add(Thread.currentThread().getName());
                            RunPodSandboxResponse r =
                                    (RunPodSandboxResponse) chain.proceed(chain.request());
                            return r.toBuilder()
                                    .setPodSandboxId(r.getPodSandboxId() + "-blocking")
                                    .build();
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(
                        CriProxy.builder()
                                .addInterceptor(async)
                                .addInterceptor(blocking)
                                .addInterceptor(version));
        assertThat(stub.runPodSandbox(pod("w")).getPodSandboxId()).endsWith("-blocking");
        assertThat(order).containsExactly("async", "blocking");
        assertThat(async.threads).singleElement().asString().startsWith(IO_THREAD);
        assertThat(afterAsync)
                .as("the blocking link's answer is handed back to the I/O thread")
                .singleElement()
                .asString()
                .startsWith(IO_THREAD);
        assertThat(blockingOn).singleElement().asString().startsWith(CriProxy.WORKER_THREAD_PREFIX);
        stub.version(VersionRequest.getDefaultInstance());
        assertThat(version.threads).singleElement().asString().startsWith(IO_THREAD);
    }

    @Test
    void theWorkerPoolIsBoundedAndACallBeyondItFailsNamingTheMethod() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> ranOn = new CopyOnWriteArrayList<>();
        CriInterceptor holding =
                blocking(
                        "Version",
                        chain -> {
                            ranOn.add(Thread.currentThread().getName());
                            entered.countDown();
                            try {
                                release.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return chain.proceed(chain.request());
                        });
        startProxy(CriProxy.builder().addInterceptor(holding).workerThreads(1, 1));
        RuntimeServiceGrpc.RuntimeServiceFutureStub stub =
                RuntimeServiceGrpc.newFutureStub(client).withDeadlineAfter(10, TimeUnit.SECONDS);
        try {
            var first = stub.version(VersionRequest.getDefaultInstance());
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
            var queued = stub.version(VersionRequest.getDefaultInstance());
            var beyond = stub.version(VersionRequest.getDefaultInstance());
            StatusRuntimeException e =
                    catchStatus(
                            () -> {
                                try {
                                    beyond.get(10, TimeUnit.SECONDS);
                                } catch (java.util.concurrent.ExecutionException x) {
                                    throw (StatusRuntimeException) x.getCause();
                                } catch (Exception x) {
                                    throw new AssertionError(x);
                                }
                            });
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription())
                    .contains("runtime.v1.RuntimeService/Version");
            release.countDown();
            assertThat(first.get(10, TimeUnit.SECONDS).getRuntimeName()).isEqualTo("test-backend");
            assertThat(queued.get(10, TimeUnit.SECONDS).getRuntimeName()).isEqualTo("test-backend");
            assertThat(ranOn)
                    .hasSize(2)
                    .allSatisfy(t -> assertThat(t).isEqualTo(CriProxy.WORKER_THREAD_PREFIX + "1"));
        } finally {
            release.countDown();
        }
    }

    @ParameterizedTest(name = "hook never blocks: {0}")
    @ValueSource(booleans = {false, true})
    void runsBeforeTheHooksWhichSeeItsChange(boolean inline) throws Exception {
        CriProxyIT.TestHook hook =
                new CriProxyIT.TestHook("h", 0, FailurePolicy.FAIL, HookEvent.CREATE_CONTAINER);
        hook.inline = inline;
        hook.containerAnswer =
                HookResult.adjust(Adjustments.create().addAnnotation("hook", "yes").build());
        Async annotate =
                new Async(
                        "CreateContainer",
                        chain -> {
                            CreateContainerRequest r = (CreateContainerRequest) chain.request();
                            return chain.proceed(
                                    r.toBuilder()
                                            .setConfig(
                                                    r.getConfig().toBuilder()
                                                            .putAnnotations("interceptor", "yes"))
                                            .build());
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxyIT.with(hook).addInterceptor(annotate));
        stub.createContainer(container("pod-x", pod("x")));
        assertThat(backend.received(CreateContainerRequest.class))
                .singleElement()
                .satisfies(
                        q ->
                                assertThat(q.getConfig().getAnnotationsMap())
                                        .containsEntry("interceptor", "yes")
                                        .containsEntry("hook", "yes"));
        assertThat(hook.seen)
                .as("the hook sees the interceptor's change")
                .singleElement()
                .isInstanceOfSatisfying(
                        io.cri4j.hook.nri.v1alpha1.Container.class,
                        q -> assertThat(q.getAnnotationsMap()).containsEntry("interceptor", "yes"));
        assertThat(annotate.threads).singleElement().asString().startsWith(IO_THREAD);
        assertThat(hook.threads)
                .singleElement()
                .asString()
                .startsWith(inline ? IO_THREAD : CriProxyIT.WORKER);
    }

    @Test
    void theClientsDeadlineFailsAPendingProceedWithCancelled() throws Exception {
        CompletableFuture<Status> proceedFailed = new CompletableFuture<>();
        Async watch =
                new Async(
                        "Version",
                        chain ->
                                chain.proceed(chain.request())
                                        .whenComplete(
                                                (v, e) -> {
                                                    if (e != null) {
                                                        proceedFailed.complete(
                                                                Status.fromThrowable(e));
                                                    }
                                                }));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(watch));
        whileVersionIsHeld(
                stub,
                () -> {
                    assertThat(
                                    catchStatus(
                                                    () ->
                                                            stub.withDeadlineAfter(
                                                                            300,
                                                                            TimeUnit.MILLISECONDS)
                                                                    .version(
                                                                            VersionRequest
                                                                                    .getDefaultInstance()))
                                            .getStatus()
                                            .getCode())
                            .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                    assertThat(proceedFailed.get(10, TimeUnit.SECONDS).getCode())
                            .isIn(Status.Code.CANCELLED, Status.Code.DEADLINE_EXCEEDED);
                });
    }

    /** What a test does while the runtime holds every Version call. */
    @FunctionalInterface
    private interface WhileHeld {
        void run() throws Exception;
    }

    /** Runs {@code body} while the runtime holds Version calls; then the proxy must serve on. */
    private void whileVersionIsHeld(
            RuntimeServiceGrpc.RuntimeServiceBlockingStub stub, WhileHeld body) throws Exception {
        CountDownLatch hold = new CountDownLatch(1);
        backend.holdVersion = hold;
        try {
            body.run();
        } finally {
            hold.countDown();
            backend.holdVersion = null;
        }
        assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
                .isEqualTo("test-backend");
    }

    @Test
    void aChainThatNeverAnswersEndsWithTheClientsDeadline() throws Exception {
        CompletableFuture<Object> answered = new CompletableFuture<>();
        Async stuck =
                new Async(
                        "Version",
                        chain ->
                                chain.proceed(chain.request())
                                        .thenCompose(
                                                r -> {
                                                    answered.complete(r);
                                                    return new CompletableFuture<>(); // the runtime
                                                    // answered;
                                                    // the chain
                                                    // never does
                                                }));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(stuck));
        assertThat(
                        catchStatus(
                                        () ->
                                                stub.withDeadlineAfter(300, TimeUnit.MILLISECONDS)
                                                        .version(
                                                                VersionRequest
                                                                        .getDefaultInstance()))
                                .getStatus()
                                .getCode())
                .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(answered.get(10, TimeUnit.SECONDS)).isInstanceOf(VersionResponse.class);
        // the connection serves on (the kept answer was released when the client reset the call)
        assertThat(
                        RuntimeServiceGrpc.newBlockingStub(client)
                                .withDeadlineAfter(10, TimeUnit.SECONDS)
                                .getContainerEvents(
                                        io.cri4j.cri.v1.GetEventsRequest.getDefaultInstance())
                                .hasNext())
                .isTrue();
    }

    @Test
    void theClientsCancellationFailsEveryPendingProceed() throws Exception {
        List<CompletableFuture<Status>> proceeds = new CopyOnWriteArrayList<>();
        Async twice =
                new Async(
                        "Version",
                        chain -> {
                            // the first proceed goes over the relay, the second through grpc-java
                            CompletionStage<Object> a = chain.proceed(chain.request());
                            CompletionStage<Object> b = chain.proceed(chain.request());
                            for (CompletionStage<Object> s : List.of(a, b)) {
                                CompletableFuture<Status> failed = new CompletableFuture<>();
                                s.whenComplete(
                                        (v, e) ->
                                                failed.complete(
                                                        e == null
                                                                ? Status.OK
                                                                : Status.fromThrowable(e)));
                                proceeds.add(failed);
                            }
                            return a;
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(twice));
        whileVersionIsHeld(
                stub,
                () -> {
                    com.google.common.util.concurrent.ListenableFuture<VersionResponse> call =
                            RuntimeServiceGrpc.newFutureStub(client)
                                    .version(VersionRequest.getDefaultInstance());
                    assertThat(backend.versionEntered.tryAcquire(2, 10, TimeUnit.SECONDS))
                            .as("both backend calls arrived")
                            .isTrue();
                    call.cancel(true);
                    for (CompletableFuture<Status> f : proceeds) {
                        assertThat(f.get(10, TimeUnit.SECONDS).getCode())
                                .isEqualTo(Status.Code.CANCELLED);
                    }
                });
    }

    @Test
    void aRuntimeThatIsDownFailsProceedWithUnavailableAndTheChainMayStillAnswer() throws Exception {
        List<Status> seen = new CopyOnWriteArrayList<>();
        Async fallback =
                new Async(
                        "Version",
                        chain ->
                                chain.proceed(chain.request())
                                        .exceptionally(
                                                failure -> {
                                                    seen.add(Status.fromThrowable(failure));
                                                    if (((VersionRequest) chain.request())
                                                            .getVersion()
                                                            .equals("fallback")) {
                                                        return VersionResponse.newBuilder()
                                                                .setRuntimeName("fallback")
                                                                .build();
                                                    }
                                                    throw new java.util.concurrent
                                                            .CompletionException(failure);
                                                }));
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(fallback));
        backend.close();
        assertThat(stub.version(version("fallback")).getRuntimeName()).isEqualTo("fallback");
        StatusRuntimeException e = catchStatus(() -> stub.version(version("plain")));
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(e.getStatus().getDescription()).contains(backend.socket.toString());
        assertThat(seen)
                .hasSize(2)
                .allSatisfy(
                        s -> {
                            assertThat(s.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                            assertThat(s.getDescription()).contains(backend.socket.toString());
                        });
    }

    @Test
    void everyCallsHeadersReachTheChainAlsoWhenThePathIsAlreadyKnown() throws Exception {
        // after a connection's first call of a method its requests are routed by the encoded path,
        // and their headers are decoded only when a link asks for them
        List<String> asyncSaw = new CopyOnWriteArrayList<>();
        Async version =
                new Async(
                        "Version",
                        chain -> {
                            asyncSaw.add(chain.metadata().get(TestBackend.TEST_HEADER));
                            return chain.proceed(chain.request());
                        });
        List<String> blockingSaw = new CopyOnWriteArrayList<>();
        CriInterceptor pods =
                blocking(
                        "RunPodSandbox",
                        chain -> {
                            io.grpc.Deadline d = io.grpc.Context.current().getDeadline();
                            blockingSaw.add(
                                    chain.metadata().get(TestBackend.TEST_HEADER)
                                            + " "
                                            + (d != null
                                                    && d.timeRemaining(TimeUnit.SECONDS) > 100));
                            return chain.proceed(chain.request());
                        });
        RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
                startProxy(CriProxy.builder().addInterceptor(version).addInterceptor(pods));
        for (String v : List.of("a", "b", "c")) {
            Metadata h = new Metadata();
            h.put(TestBackend.TEST_HEADER, v);
            RuntimeServiceGrpc.RuntimeServiceBlockingStub withHeader =
                    stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h))
                            .withDeadlineAfter(1000, TimeUnit.SECONDS);
            withHeader.version(VersionRequest.getDefaultInstance());
            withHeader.runPodSandbox(pod("p-" + v));
        }
        assertThat(asyncSaw).containsExactly("a", "b", "c");
        assertThat(blockingSaw).containsExactly("a true", "b true", "c true");
        assertThat(backend.headerValues)
                .as("and the runtime gets them")
                .containsExactly("a", "a", "b", "b", "c", "c");
    }

    private static VersionRequest version(String v) {
        return VersionRequest.newBuilder().setVersion(v).build();
    }

    private static StatusRuntimeException catchStatus(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }
}
