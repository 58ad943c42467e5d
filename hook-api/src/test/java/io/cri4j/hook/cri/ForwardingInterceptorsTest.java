package io.cri4j.hook.cri;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.stub.StreamObserver;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The typed bases: {@link ForwardingCriInterceptor} and {@link ForwardingAsyncCriInterceptor}
 * dispatch each CRI method to its typed method, proceed where it is not overridden, and want
 * only the methods whose typed method is overridden.
 */
class ForwardingInterceptorsTest {
    private static final Metadata.Key<String> WHO =
            Metadata.Key.of("x-who", Metadata.ASCII_STRING_MARSHALLER);
    private static final MethodDescriptor<CreateContainerRequest, CreateContainerResponse> CREATE =
            RuntimeServiceGrpc.getCreateContainerMethod();

    /** As a proxy presents a v1alpha2 call: the v1 classes under the v1alpha2 name. */
    private static final MethodDescriptor<CreateContainerRequest, CreateContainerResponse>
            CREATE_ALPHA =
                    CREATE.toBuilder()
                            .setFullMethodName("runtime.v1alpha2.RuntimeService/CreateContainer")
                            .setSchemaDescriptor(null)
                            .build();

    private static final MethodDescriptor<CreateContainerRequest, CreateContainerResponse> NOT_CRI =
            CREATE.toBuilder()
                    .setFullMethodName("example.Other/CreateContainer")
                    .setSchemaDescriptor(null)
                    .build();

    /** Blocking: annotates created containers, answers Version itself, reads a header. */
    static final class Annotate extends ForwardingCriInterceptor {
        final List<String> seen = new CopyOnWriteArrayList<>();

        @Override
        public CreateContainerResponse createContainer(
                CreateContainerRequest request,
                UnaryChain<CreateContainerRequest, CreateContainerResponse> chain)
                throws StatusException {
            seen.add(
                    chain.method().getFullMethodName()
                            + " "
                            + chain.metadata().get(WHO)
                            + " "
                            + request.getConfig().getMetadata().getName());
            CreateContainerResponse r =
                    chain.proceed(
                            request.toBuilder()
                                    .setConfig(
                                            request.getConfig().toBuilder()
                                                    .putAnnotations("seen", "yes"))
                                    .build());
            return r.toBuilder().setContainerId(r.getContainerId() + "-seen").build();
        }

        @Override
        public VersionResponse version(
                VersionRequest request, UnaryChain<VersionRequest, VersionResponse> chain) {
            return VersionResponse.newBuilder()
                    .setRuntimeName("answered-" + request.getVersion())
                    .build();
        }
    }

    /** The same, never blocking; and renames container events. */
    static final class AnnotateAsync extends ForwardingAsyncCriInterceptor {
        final List<String> seen = new CopyOnWriteArrayList<>();

        @Override
        public CompletionStage<CreateContainerResponse> createContainer(
                CreateContainerRequest request,
                AsyncUnaryChain<CreateContainerRequest, CreateContainerResponse> chain) {
            seen.add(
                    chain.method().getFullMethodName()
                            + " "
                            + chain.metadata().get(WHO)
                            + " "
                            + request.getConfig().getMetadata().getName());
            return chain.proceed(
                            request.toBuilder()
                                    .setConfig(
                                            request.getConfig().toBuilder()
                                                    .putAnnotations("seen", "yes"))
                                    .build())
                    .thenApply(
                            r ->
                                    r.toBuilder()
                                            .setContainerId(r.getContainerId() + "-seen")
                                            .build());
        }

        @Override
        public CompletionStage<VersionResponse> version(
                VersionRequest request, AsyncUnaryChain<VersionRequest, VersionResponse> chain) {
            return CompletableFuture.failedFuture(
                    Status.PERMISSION_DENIED.withDescription("no versions for you").asException());
        }

        @Override
        public void getContainerEvents(
                GetEventsRequest request,
                StreamingChain<GetEventsRequest, ContainerEventResponse> chain) {
            StreamObserver<ContainerEventResponse> out = chain.responses();
            chain.proceed(
                    request,
                    new StreamObserver<>() {
                        @Override
                        public void onNext(ContainerEventResponse e) {
                            out.onNext(
                                    e.toBuilder()
                                            .setContainerId("x-" + e.getContainerId())
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
    }

    /** A chain's end: what a proxy's next link would see. */
    static final class Next {
        final List<Object> sent = new ArrayList<>();

        Object answer(Object request) {
            sent.add(request);
            if (request instanceof CreateContainerRequest r) {
                return CreateContainerResponse.newBuilder()
                        .setContainerId("ctr-" + r.getConfig().getMetadata().getName())
                        .build();
            }
            return responsePrototype(request);
        }
    }

    private static Object responsePrototype(Object request) {
        for (MethodDescriptor<?, ?> m : criMethods()) {
            if (prototype(m.getRequestMarshaller()).getClass() == request.getClass()) {
                return prototype(m.getResponseMarshaller());
            }
        }
        throw new AssertionError("no CRI method takes " + request.getClass());
    }

    private static Message prototype(MethodDescriptor.Marshaller<?> m) {
        return (Message) ((MethodDescriptor.PrototypeMarshaller<?>) m).getMessagePrototype();
    }

    private static List<MethodDescriptor<?, ?>> criMethods() {
        List<MethodDescriptor<?, ?>> out = new ArrayList<>();
        out.addAll(RuntimeServiceGrpc.getServiceDescriptor().getMethods());
        out.addAll(ImageServiceGrpc.getServiceDescriptor().getMethods());
        return out;
    }

    private static Metadata headers() {
        Metadata h = new Metadata();
        h.put(WHO, "kubelet");
        return h;
    }

    private static <Q, R> CriInterceptor.UnaryChain<Q, R> blockingChain(
            MethodDescriptor<Q, R> m, Q request, Next next) {
        return new CriInterceptor.UnaryChain<>() {
            @Override
            public MethodDescriptor<Q, R> method() {
                return m;
            }

            @Override
            public Q request() {
                return request;
            }

            @Override
            public Metadata metadata() {
                return headers();
            }

            @Override
            @SuppressWarnings("unchecked")
            public R proceed(Q r) {
                return (R) next.answer(r);
            }
        };
    }

    private static <Q, R> AsyncCriInterceptor.AsyncUnaryChain<Q, R> asyncChain(
            MethodDescriptor<Q, R> m, Q request, Next next) {
        return new AsyncCriInterceptor.AsyncUnaryChain<>() {
            @Override
            public MethodDescriptor<Q, R> method() {
                return m;
            }

            @Override
            public Q request() {
                return request;
            }

            @Override
            public Metadata metadata() {
                return headers();
            }

            @Override
            @SuppressWarnings("unchecked")
            public CompletionStage<R> proceed(Q r) {
                return CompletableFuture.completedFuture((R) next.answer(r));
            }
        };
    }

    private static CreateContainerRequest create(String name) {
        return CreateContainerRequest.newBuilder()
                .setPodSandboxId("pod-1")
                .setConfig(
                        ContainerConfig.newBuilder()
                                .setMetadata(
                                        io.cri4j.cri.v1.ContainerMetadata.newBuilder()
                                                .setName(name)))
                .build();
    }

    @Test
    void wantsOnlyTheOverriddenMethodsOfBothVersionsOfCri() {
        for (Object i : List.of(new Annotate(), new AnnotateAsync())) {
            java.util.function.Predicate<MethodDescriptor<?, ?>> wants =
                    i instanceof CriInterceptor c
                            ? c::intercepts
                            : ((AsyncCriInterceptor) i)::intercepts;
            assertThat(wants.test(CREATE)).isTrue();
            assertThat(wants.test(CREATE_ALPHA)).isTrue();
            assertThat(wants.test(io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getVersionMethod()))
                    .isTrue();
            assertThat(wants.test(NOT_CRI))
                    .as("another service's method of the same name")
                    .isFalse();
            assertThat(wants.test(RuntimeServiceGrpc.getStartContainerMethod())).isFalse();
            assertThat(wants.test(ImageServiceGrpc.getPullImageMethod())).isFalse();
        }
        assertThat(new AnnotateAsync().intercepts(RuntimeServiceGrpc.getGetContainerEventsMethod()))
                .isTrue();
        assertThat(new Annotate().intercepts(RuntimeServiceGrpc.getGetContainerEventsMethod()))
                .isFalse();
        assertThat(new ForwardingCriInterceptor() {}.intercepts(CREATE))
                .as("nothing overridden, nothing wanted")
                .isFalse();
    }

    @Test
    void theBlockingTypedMethodChangesRequestAndResponseAndSeesTheHeaders() throws Exception {
        Annotate a = new Annotate();
        for (MethodDescriptor<CreateContainerRequest, CreateContainerResponse> m :
                List.of(CREATE, CREATE_ALPHA)) {
            Next next = new Next();
            CreateContainerResponse r = a.interceptUnary(blockingChain(m, create("web"), next));
            assertThat(r.getContainerId()).isEqualTo("ctr-web-seen");
            assertThat(next.sent)
                    .singleElement()
                    .isInstanceOfSatisfying(
                            CreateContainerRequest.class,
                            q ->
                                    assertThat(q.getConfig().getAnnotationsMap())
                                            .containsEntry("seen", "yes"));
        }
        assertThat(a.seen)
                .containsExactly(
                        "runtime.v1.RuntimeService/CreateContainer kubelet web",
                        "runtime.v1alpha2.RuntimeService/CreateContainer kubelet web");

        Next next = new Next();
        assertThat(
                        a.interceptUnary(
                                        blockingChain(
                                                RuntimeServiceGrpc.getVersionMethod(),
                                                VersionRequest.newBuilder()
                                                        .setVersion("0.1")
                                                        .build(),
                                                next))
                                .getRuntimeName())
                .isEqualTo("answered-0.1");
        assertThat(next.sent).as("answered without proceeding").isEmpty();

        Next other = new Next();
        CreateContainerResponse passed =
                a.interceptUnary(blockingChain(NOT_CRI, create("x"), other));
        assertThat(passed.getContainerId()).as("not CRI: proceeds unchanged").isEqualTo("ctr-x");
        assertThat(other.sent).containsExactly(create("x"));
    }

    @Test
    void theAsyncTypedMethodChangesRequestAndResponseOrFailsTheCall() throws Exception {
        AnnotateAsync a = new AnnotateAsync();
        Next next = new Next();
        CreateContainerResponse r =
                a.interceptUnaryAsync(asyncChain(CREATE_ALPHA, create("db"), next))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
        assertThat(r.getContainerId()).isEqualTo("ctr-db-seen");
        assertThat(next.sent)
                .singleElement()
                .isInstanceOfSatisfying(
                        CreateContainerRequest.class,
                        q ->
                                assertThat(q.getConfig().getAnnotationsMap())
                                        .containsEntry("seen", "yes"));
        assertThat(a.seen)
                .containsExactly("runtime.v1alpha2.RuntimeService/CreateContainer kubelet db");

        Next none = new Next();
        CompletableFuture<VersionResponse> denied =
                a.interceptUnaryAsync(
                                asyncChain(
                                        RuntimeServiceGrpc.getVersionMethod(),
                                        VersionRequest.getDefaultInstance(),
                                        none))
                        .toCompletableFuture();
        assertThat(denied).isCompletedExceptionally();
        assertThat(Status.fromThrowable(denied.handle((v, e) -> e).join()).getCode())
                .isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(none.sent).isEmpty();
    }

    @Test
    void theTypedStreamingMethodRewritesEvents() {
        List<String> got = new ArrayList<>();
        new AnnotateAsync()
                .interceptServerStreaming(
                        new AsyncCriInterceptor.StreamingChain<
                                GetEventsRequest, ContainerEventResponse>() {
                            @Override
                            public MethodDescriptor<GetEventsRequest, ContainerEventResponse>
                                    method() {
                                return RuntimeServiceGrpc.getGetContainerEventsMethod();
                            }

                            @Override
                            public GetEventsRequest request() {
                                return GetEventsRequest.getDefaultInstance();
                            }

                            @Override
                            public Metadata metadata() {
                                return headers();
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
                                        got.add("error " + t);
                                    }

                                    @Override
                                    public void onCompleted() {
                                        got.add("end");
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
                                responses.onNext(
                                        ContainerEventResponse.newBuilder()
                                                .setContainerId("c2")
                                                .build());
                                responses.onCompleted();
                            }
                        });
        assertThat(got).containsExactly("x-c1", "x-c2", "end");
    }

    /**
     * Every RuntimeService and ImageService method has its typed method in both bases, and a base
     * with nothing overridden hands each request on as it came: each dispatch casts to the right
     * request class.
     */
    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void everyCriMethodHasATypedMethodThatProceedsUnchanged() throws Exception {
        ForwardingCriInterceptor blocking = new ForwardingCriInterceptor() {};
        ForwardingAsyncCriInterceptor async = new ForwardingAsyncCriInterceptor() {};
        int unary = 0;
        int streaming = 0;
        for (MethodDescriptor m : criMethods()) {
            String name =
                    Character.toLowerCase(m.getBareMethodName().charAt(0))
                            + m.getBareMethodName().substring(1);
            Message request = prototype(m.getRequestMarshaller());
            boolean isUnary = m.getType() == MethodDescriptor.MethodType.UNARY;
            assertThat(m.getType())
                    .isIn(
                            MethodDescriptor.MethodType.UNARY,
                            MethodDescriptor.MethodType.SERVER_STREAMING);
            Method b =
                    ForwardingCriInterceptor.class.getMethod(
                            name,
                            request.getClass(),
                            isUnary
                                    ? CriInterceptor.UnaryChain.class
                                    : CriInterceptor.StreamingChain.class);
            Method a =
                    ForwardingAsyncCriInterceptor.class.getMethod(
                            name,
                            request.getClass(),
                            isUnary
                                    ? AsyncCriInterceptor.AsyncUnaryChain.class
                                    : AsyncCriInterceptor.StreamingChain.class);
            if (isUnary) {
                unary++;
                assertThat(b.getReturnType())
                        .isEqualTo(prototype(m.getResponseMarshaller()).getClass());
                assertThat(a.getReturnType()).isEqualTo(CompletionStage.class);
                Next next = new Next();
                Object answer = new Next().answer(request);
                assertThat(answer).isInstanceOf(prototype(m.getResponseMarshaller()).getClass());
                assertThat(blocking.interceptUnary(blockingChain(m, request, next)))
                        .isEqualTo(answer);
                assertThat(
                                async.interceptUnaryAsync(asyncChain(m, request, next))
                                        .toCompletableFuture()
                                        .get(10, TimeUnit.SECONDS))
                        .isEqualTo(answer);
                assertThat(next.sent).as(m.getFullMethodName()).containsExactly(request, request);
            } else {
                streaming++;
                List<Object> proceeded = new ArrayList<>();
                CriInterceptor.StreamingChain bc =
                        new CriInterceptor.StreamingChain() {
                            @Override
                            public MethodDescriptor method() {
                                return m;
                            }

                            @Override
                            public Object request() {
                                return request;
                            }

                            @Override
                            public Metadata metadata() {
                                return headers();
                            }

                            @Override
                            public StreamObserver responses() {
                                return null;
                            }

                            @Override
                            public void proceed(Object r, StreamObserver responses) {
                                proceeded.add(r);
                            }
                        };
                blocking.interceptServerStreaming(bc);
                async.interceptServerStreaming(
                        new AsyncCriInterceptor.StreamingChain() {
                            @Override
                            public MethodDescriptor method() {
                                return m;
                            }

                            @Override
                            public Object request() {
                                return request;
                            }

                            @Override
                            public Metadata metadata() {
                                return headers();
                            }

                            @Override
                            public StreamObserver responses() {
                                return null;
                            }

                            @Override
                            public void proceed(Object r, StreamObserver responses) {
                                proceeded.add(r);
                            }
                        });
                assertThat(proceeded).as(m.getFullMethodName()).containsExactly(request, request);
            }
        }
        assertThat(unary).as("unary CRI methods").isGreaterThanOrEqualTo(30);
        assertThat(streaming).as("server-streaming CRI methods").isGreaterThanOrEqualTo(1);
    }
}
