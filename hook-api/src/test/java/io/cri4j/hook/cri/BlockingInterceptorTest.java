package io.cri4j.hook.cri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CriInterceptor#async}: the blocking form adapted to the one a proxy runs. Its code runs on
 * the worker, never on the thread that called the adapter, in that thread's gRPC context.
 */
class BlockingInterceptorTest {
    private static final MethodDescriptor<VersionRequest, VersionResponse> VERSION =
            RuntimeServiceGrpc.getVersionMethod();
    private static final String CALLER = "test-io-thread";

    private final AtomicInteger n = new AtomicInteger();
    private final ExecutorService worker =
            Executors.newFixedThreadPool(
                    2, r -> new Thread(r, "test-worker-" + n.incrementAndGet()));
    private final ExecutorService caller =
            Executors.newSingleThreadExecutor(r -> new Thread(r, CALLER));
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        worker.shutdownNow();
        caller.shutdownNow();
        timer.shutdownNow();
    }

    /** The rest of an asynchronous chain; {@code next} answers each request it gets. */
    private static AsyncCriInterceptor.AsyncUnaryChain<VersionRequest, VersionResponse> chain(
            VersionRequest request,
            List<String> proceededOn,
            Function<VersionRequest, CompletionStage<VersionResponse>> next) {
        return new AsyncCriInterceptor.AsyncUnaryChain<>() {
            @Override
            public MethodDescriptor<VersionRequest, VersionResponse> method() {
                return VERSION;
            }

            @Override
            public VersionRequest request() {
                return request;
            }

            @Override
            public Metadata metadata() {
                Metadata m = new Metadata();
                m.put(Metadata.Key.of("x-who", Metadata.ASCII_STRING_MARSHALLER), "client");
                return m;
            }

            @Override
            public CompletionStage<VersionResponse> proceed(VersionRequest r) {
                proceededOn.add(Thread.currentThread().getName());
                return next.apply(r);
            }
        };
    }

    /** A blocking interceptor of Version calls whose body is {@code body}. */
    @FunctionalInterface
    private interface Body {
        VersionResponse intercept(CriInterceptor.UnaryChain<VersionRequest, VersionResponse> chain)
                throws StatusException;
    }

    private static CriInterceptor blocking(Body body) {
        return new CriInterceptor() {
            @Override
            @SuppressWarnings("unchecked")
            public <Q, R> R interceptUnary(UnaryChain<Q, R> chain) throws StatusException {
                return (R) body.intercept((UnaryChain<VersionRequest, VersionResponse>) chain);
            }
        };
    }

    /** Calls the adapter from the test's "I/O thread" and waits for the stage it returns. */
    private VersionResponse call(
            AsyncCriInterceptor adapted,
            AsyncCriInterceptor.AsyncUnaryChain<VersionRequest, VersionResponse> chain)
            throws Exception {
        CompletionStage<VersionResponse> stage =
                caller.submit(() -> adapted.interceptUnaryAsync(chain)).get(10, TimeUnit.SECONDS);
        return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static Status failure(ExecutionException e) {
        return Status.fromThrowable(e.getCause());
    }

    private static VersionRequest version(String v) {
        return VersionRequest.newBuilder().setVersion(v).build();
    }

    @Test
    void runsTheBlockingCodeOnTheWorkerAndReturnsAtOnce() throws Exception {
        List<String> ranOn = new CopyOnWriteArrayList<>();
        List<String> proceededOn = new CopyOnWriteArrayList<>();
        CountDownLatch release = new CountDownLatch(1);
        AsyncCriInterceptor adapted =
                CriInterceptor.async(
                        blocking(
                                c -> {
                                    ranOn.add(Thread.currentThread().getName());
                                    assertThat(
                                                    c.metadata()
                                                            .get(
                                                                    Metadata.Key.of(
                                                                            "x-who",
                                                                            Metadata
                                                                                    .ASCII_STRING_MARSHALLER)))
                                            .isEqualTo("client");
                                    try {
                                        release.await(); // blocks, as it may
                                    } catch (InterruptedException e) {
                                        throw Status.CANCELLED.asException();
                                    }
                                    VersionResponse r =
                                            c.proceed(version(c.request().getVersion() + "+"));
                                    return r.toBuilder()
                                            .setRuntimeName(r.getRuntimeName() + "!")
                                            .build();
                                }),
                        worker);

        CompletionStage<VersionResponse> stage =
                caller.submit(
                                () ->
                                        adapted.interceptUnaryAsync(
                                                chain(
                                                        version("v"),
                                                        proceededOn,
                                                        q ->
                                                                CompletableFuture.completedFuture(
                                                                        VersionResponse.newBuilder()
                                                                                .setRuntimeName(
                                                                                        "rt-"
                                                                                                + q
                                                                                                        .getVersion())
                                                                                .build()))))
                        .get(10, TimeUnit.SECONDS);
        assertThat(stage.toCompletableFuture().isDone())
                .as("the caller got the stage while the blocking code still waits")
                .isFalse();
        release.countDown();
        assertThat(stage.toCompletableFuture().get(10, TimeUnit.SECONDS).getRuntimeName())
                .isEqualTo("rt-v+!");
        assertThat(ranOn).singleElement().asString().startsWith("test-worker-");
        assertThat(proceededOn).singleElement().asString().startsWith("test-worker-");
    }

    @Test
    void theRestOfTheChainsStatusReachesTheBlockingCodeAndThenTheCaller() throws Exception {
        List<Status> seen = new CopyOnWriteArrayList<>();
        AsyncCriInterceptor adapted =
                CriInterceptor.async(
                        blocking(
                                c -> {
                                    try {
                                        return c.proceed(c.request());
                                    } catch (StatusException e) {
                                        seen.add(e.getStatus());
                                        throw e;
                                    }
                                }),
                        worker);
        Metadata trailers = new Metadata();
        trailers.put(Metadata.Key.of("x-why", Metadata.ASCII_STRING_MARSHALLER), "gone");
        StatusException notFound =
                Status.NOT_FOUND.withDescription("no such thing").asException(trailers);
        try {
            call(
                    adapted,
                    chain(
                            version("v"),
                            new CopyOnWriteArrayList<>(),
                            q -> CompletableFuture.failedFuture(notFound)));
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(e.getCause())
                    .as("the rest of the chain's failure, as it came")
                    .isSameAs(notFound);
        }
        assertThat(seen)
                .singleElement()
                .satisfies(
                        s -> {
                            assertThat(s.getCode()).isEqualTo(Status.Code.NOT_FOUND);
                            assertThat(s.getDescription()).isEqualTo("no such thing");
                        });
    }

    @Test
    void exceptionsBecomeStatusesNamingTheMethodAndTheInterceptor() throws Exception {
        CriInterceptor boom =
                blocking(
                        c -> {
                            throw new IllegalStateException("boom");
                        });
        try {
            call(
                    CriInterceptor.async(boom, worker),
                    chain(
                            version("v"),
                            new CopyOnWriteArrayList<>(),
                            q ->
                                    CompletableFuture.completedFuture(
                                            VersionResponse.getDefaultInstance())));
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.INTERNAL);
            assertThat(failure(e).getDescription())
                    .contains("runtime.v1.RuntimeService/Version")
                    .contains(boom.getClass().getName())
                    .contains("boom");
        }

        CriInterceptor denied =
                blocking(
                        c -> {
                            throw Status.PERMISSION_DENIED.withDescription("not you").asException();
                        });
        try {
            call(
                    CriInterceptor.async(denied, worker),
                    chain(version("v"), new CopyOnWriteArrayList<>(), q -> null));
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
            assertThat(failure(e).getDescription()).isEqualTo("not you");
        }

        CriInterceptor proceedsIntoNothing = blocking(c -> c.proceed(c.request()));
        try {
            call(
                    CriInterceptor.async(proceedsIntoNothing, worker),
                    chain(version("v"), new CopyOnWriteArrayList<>(), q -> null));
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.INTERNAL);
            assertThat(failure(e).getDescription())
                    .contains("returned no stage")
                    .contains("runtime.v1.RuntimeService/Version");
        }
    }

    @Test
    void aFullOrShutDownWorkerFailsTheCallNamingTheMethod() throws Exception {
        ThreadPoolExecutor one =
                new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new SynchronousQueue<>());
        CountDownLatch release = new CountDownLatch(1);
        try {
            AsyncCriInterceptor adapted =
                    CriInterceptor.async(
                            blocking(
                                    c -> {
                                        try {
                                            release.await();
                                        } catch (InterruptedException e) {
                                            Thread.currentThread().interrupt();
                                        }
                                        return VersionResponse.getDefaultInstance();
                                    }),
                            one);
            CompletionStage<VersionResponse> busy =
                    adapted.interceptUnaryAsync(
                            chain(version("v"), new CopyOnWriteArrayList<>(), q -> null));
            try {
                adapted.interceptUnaryAsync(
                                chain(version("v"), new CopyOnWriteArrayList<>(), q -> null))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
                throw new AssertionError("the call succeeded");
            } catch (ExecutionException e) {
                assertThat(failure(e).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(failure(e).getDescription())
                        .contains("runtime.v1.RuntimeService/Version");
            }
            release.countDown();
            assertThat(busy.toCompletableFuture().get(10, TimeUnit.SECONDS)).isNotNull();
            one.shutdown();
            try {
                adapted.interceptUnaryAsync(
                                chain(version("v"), new CopyOnWriteArrayList<>(), q -> null))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
                throw new AssertionError("the call succeeded");
            } catch (ExecutionException e) {
                assertThat(failure(e).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(failure(e).getDescription())
                        .contains("shut down")
                        .contains("runtime.v1.RuntimeService/Version");
            }
        } finally {
            release.countDown();
            one.shutdownNow();
        }
    }

    @Test
    void aWorkerThatRunsOnTheCallersThreadFailsTheCallInsteadOfWaitingForItself() throws Exception {
        AsyncCriInterceptor direct =
                CriInterceptor.async(blocking(c -> c.proceed(c.request())), Runnable::run);
        try {
            call(
                    direct,
                    chain(
                            version("v"),
                            new CopyOnWriteArrayList<>(),
                            q -> new CompletableFuture<>()));
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.INTERNAL);
            assertThat(failure(e).getDescription())
                    .contains("runs on the thread that called it")
                    .contains("runtime.v1.RuntimeService/Version");
        }
    }

    @Test
    void theWorkerRunsInTheCallersContextAndSeesItsCancellation() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<Throwable> sawCancel = new CompletableFuture<>();
        List<Long> secondsLeft = new CopyOnWriteArrayList<>();
        AsyncCriInterceptor adapted =
                CriInterceptor.async(
                        blocking(
                                c -> {
                                    Context ctx = Context.current();
                                    secondsLeft.add(
                                            ctx.getDeadline().timeRemaining(TimeUnit.SECONDS));
                                    ctx.addListener(
                                            x -> sawCancel.complete(x.cancellationCause()),
                                            Runnable::run);
                                    entered.countDown();
                                    return c.proceed(c.request()); // waits for a chain that answers
                                    // only when cancelled
                                }),
                        worker);
        CompletableFuture<VersionResponse> next = new CompletableFuture<>();
        Context.CancellableContext call =
                Context.ROOT.withDeadline(Deadline.after(100, TimeUnit.SECONDS), timer);
        CompletionStage<VersionResponse> stage =
                caller.submit(
                                () ->
                                        call.call(
                                                () ->
                                                        adapted.interceptUnaryAsync(
                                                                chain(
                                                                        version("v"),
                                                                        new CopyOnWriteArrayList<>(),
                                                                        q -> next))))
                        .get(10, TimeUnit.SECONDS);
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        StatusException cancelled =
                Status.CANCELLED.withDescription("the client went away").asException();
        call.cancel(cancelled);
        next.completeExceptionally(cancelled); // as a proxy fails a pending proceed
        assertThat(sawCancel.get(10, TimeUnit.SECONDS)).isSameAs(cancelled);
        assertThat(secondsLeft).singleElement().satisfies(s -> assertThat(s).isBetween(90L, 100L));
        try {
            stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.CANCELLED);
        }
    }

    @Test
    void anInterruptedWaitEndsTheCallCancelledAndKeepsTheInterrupt() throws Exception {
        CountDownLatch waiting = new CountDownLatch(1);
        CompletableFuture<Boolean> stillInterrupted = new CompletableFuture<>();
        Thread[] ranOn = new Thread[1];
        AsyncCriInterceptor adapted =
                CriInterceptor.async(
                        blocking(
                                c -> {
                                    ranOn[0] = Thread.currentThread();
                                    waiting.countDown();
                                    try {
                                        return c.proceed(c.request());
                                    } finally {
                                        stillInterrupted.complete(
                                                Thread.currentThread().isInterrupted());
                                    }
                                }),
                        worker);
        CompletionStage<VersionResponse> stage =
                adapted.interceptUnaryAsync(
                        chain(
                                version("v"),
                                new CopyOnWriteArrayList<>(),
                                q -> new CompletableFuture<>()));
        assertThat(waiting.await(10, TimeUnit.SECONDS)).isTrue();
        ranOn[0].interrupt();
        try {
            stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            assertThat(failure(e).getCode()).isEqualTo(Status.Code.CANCELLED);
            assertThat(failure(e).getDescription()).contains("runtime.v1.RuntimeService/Version");
        }
        assertThat(stillInterrupted.get(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aStreamingCallRunsOnTheWorkerAndItsFailureReachesTheResponses() throws Exception {
        MethodDescriptor<GetEventsRequest, ContainerEventResponse> events =
                RuntimeServiceGrpc.getGetContainerEventsMethod();
        List<String> ranOn = new CopyOnWriteArrayList<>();
        CriInterceptor rename =
                new CriInterceptor() {
                    @Override
                    @SuppressWarnings("unchecked")
                    public <Q, R> void interceptServerStreaming(StreamingChain<Q, R> chain) {
                        ranOn.add(Thread.currentThread().getName());
                        if (chain.metadata()
                                .containsKey(
                                        Metadata.Key.of(
                                                "x-fail", Metadata.ASCII_STRING_MARSHALLER))) {
                            throw new IllegalArgumentException("refused");
                        }
                        StreamObserver<R> out = chain.responses();
                        chain.proceed(
                                chain.request(),
                                new StreamObserver<R>() {
                                    @Override
                                    public void onNext(R value) {
                                        out.onNext(
                                                (R)
                                                        ((ContainerEventResponse) value)
                                                                .toBuilder()
                                                                        .setContainerId(
                                                                                "x-"
                                                                                        + ((ContainerEventResponse)
                                                                                                        value)
                                                                                                .getContainerId())
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
        AsyncCriInterceptor adapted = CriInterceptor.async(rename, worker);
        for (boolean fail : new boolean[] {false, true}) {
            List<String> got = new CopyOnWriteArrayList<>();
            CompletableFuture<Status> ended = new CompletableFuture<>();
            Metadata md = new Metadata();
            if (fail) {
                md.put(Metadata.Key.of("x-fail", Metadata.ASCII_STRING_MARSHALLER), "yes");
            }
            AsyncCriInterceptor.StreamingChain<GetEventsRequest, ContainerEventResponse> chain =
                    new AsyncCriInterceptor.StreamingChain<>() {
                        @Override
                        public MethodDescriptor<GetEventsRequest, ContainerEventResponse> method() {
                            return events;
                        }

                        @Override
                        public GetEventsRequest request() {
                            return GetEventsRequest.getDefaultInstance();
                        }

                        @Override
                        public Metadata metadata() {
                            return md;
                        }

                        @Override
                        public StreamObserver<ContainerEventResponse> responses() {
                            return new StreamObserver<>() {
                                @Override
                                public void onNext(ContainerEventResponse v) {
                                    got.add(v.getContainerId());
                                }

                                @Override
                                public void onError(Throwable t) {
                                    ended.complete(Status.fromThrowable(t));
                                }

                                @Override
                                public void onCompleted() {
                                    ended.complete(Status.OK);
                                }
                            };
                        }

                        @Override
                        public void proceed(
                                GetEventsRequest request,
                                StreamObserver<ContainerEventResponse> responses) {
                            responses.onNext(
                                    ContainerEventResponse.newBuilder()
                                            .setContainerId("c1")
                                            .build());
                            responses.onCompleted();
                        }
                    };
            caller.submit(() -> adapted.interceptServerStreaming(chain)).get(10, TimeUnit.SECONDS);
            Status end = ended.get(10, TimeUnit.SECONDS);
            if (fail) {
                assertThat(end.getCode()).isEqualTo(Status.Code.INTERNAL);
                assertThat(end.getDescription())
                        .contains("runtime.v1.RuntimeService/GetContainerEvents")
                        .contains("refused");
                assertThat(got).isEmpty();
            } else {
                assertThat(end.getCode()).isEqualTo(Status.Code.OK);
                assertThat(got).containsExactly("x-c1");
            }
        }
        assertThat(ranOn).hasSize(2).allSatisfy(t -> assertThat(t).startsWith("test-worker-"));
    }
}
