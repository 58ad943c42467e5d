package io.cri4j.benchmarks;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.cri.ForwardingAsyncCriInterceptor;
import io.cri4j.hook.cri.ForwardingCriInterceptor;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.proxy.CriProxy;
import io.grpc.ManagedChannel;
import io.grpc.StatusException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Calls through {@link CriProxy} against the same calls made directly to the backend, in one run:
 * a pass-through unary call (Version, relayed as raw bytes), a hooked call (CreateContainer with an
 * in-process PreCreateContainer hook adding an annotation), and pass-through throughput with 16
 * concurrent callers. The backend is a small CRI server on a unix socket.
 */
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
@State(Scope.Benchmark)
public class ProxyBenchmark {

    private Path dir;
    private CriServer backend;
    private CriProxy proxy;
    private ManagedChannel directChannel;
    private ManagedChannel proxyChannel;
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub direct;
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub proxied;
    private VersionRequest version;
    private CreateContainerRequest create;

    /** {@link AnnotateHook} written not to block ({@link AsyncHook}): called on the I/O thread. */
    public static final class AsyncAnnotateHook implements AsyncHook {
        @Override
        public String name() {
            return "annotate-async";
        }

        @Override
        public CompletionStage<HookResult> createContainer(PodSandbox pod, Container c) {
            return java.util.concurrent.CompletableFuture.completedFuture(AnnotateHook.answer(c));
        }
    }

    /**
     * An interceptor as a user would write it, blocking ({@link ForwardingCriInterceptor}, run on
     * the proxy's workers): annotates every container it creates.
     */
    public static final class AnnotateInterceptor extends ForwardingCriInterceptor {
        /** The request with the benchmark's annotation. */
        static CreateContainerRequest annotate(CreateContainerRequest r) {
            return r.toBuilder()
                    .setConfig(
                            r.getConfig().toBuilder()
                                    .putAnnotations(
                                            ProxyLatencyRatio.ANNOTATION,
                                            r.getConfig().getMetadata().getName()))
                    .build();
        }

        @Override
        public CreateContainerResponse createContainer(
                CreateContainerRequest request,
                UnaryChain<CreateContainerRequest, CreateContainerResponse> chain)
                throws StatusException {
            return chain.proceed(annotate(request));
        }
    }

    /** The same interceptor, written not to block: it stays on the proxy's I/O thread. */
    public static final class AsyncAnnotateInterceptor extends ForwardingAsyncCriInterceptor {
        @Override
        public CompletionStage<CreateContainerResponse> createContainer(
                CreateContainerRequest request,
                AsyncUnaryChain<CreateContainerRequest, CreateContainerResponse> chain) {
            return chain.proceed(AnnotateInterceptor.annotate(request));
        }
    }

    /** An in-process hook as a user would write it (blocking: it runs on a hook worker). */
    public static final class AnnotateHook implements Hook {
        @Override
        public String name() {
            return "annotate";
        }

        static HookResult answer(Container c) {
            return HookResult.adjust(
                    Adjustments.create()
                            .addAnnotation(ProxyLatencyRatio.ANNOTATION, c.getName())
                            .build());
        }

        @Override
        public HookResult createContainer(PodSandbox pod, Container c) {
            return answer(c);
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("cri4j-proxy-bench");
        backend = ProxyLatencyRatio.startBackend(dir.resolve("backend.sock"));
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(dir.resolve("backend.sock"))
                        .addHook(new AnnotateHook())
                        .ioThreads(Integer.getInteger("ioThreads", 1))
                        .build()
                        .start();
        directChannel =
                KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve("backend.sock")));
        proxyChannel = KubeletLikeChannels.newChannel(CriEndpoint.unix(dir.resolve("proxy.sock")));
        direct = RuntimeServiceGrpc.newBlockingStub(directChannel);
        proxied = RuntimeServiceGrpc.newBlockingStub(proxyChannel);
        version = VersionRequest.newBuilder().setVersion("x".repeat(64)).build();
        ContainerConfig.Builder c =
                ContainerConfig.newBuilder()
                        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
                        .putAnnotations("io.kubernetes.container.hash", "abcdef");
        create = CreateContainerRequest.newBuilder().setPodSandboxId("pod").setConfig(c).build();
        direct.version(version);
        proxied.version(version);
        proxied.createContainer(create);
        if (ProxyLatencyRatio.lastAnnotationCount() != 2) {
            throw new IllegalStateException("the hook did not run");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        proxyChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        directChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        proxy.close();
        backend.close();
        Files.deleteIfExists(dir);
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public VersionResponse versionDirect() {
        return direct.version(version);
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public VersionResponse versionThroughProxy() {
        return proxied.version(version);
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public CreateContainerResponse createDirect() {
        return direct.createContainer(create);
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    public CreateContainerResponse createThroughProxyWithHook() {
        return proxied.createContainer(create);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @Threads(16)
    public VersionResponse versionDirect16() {
        return direct.version(version);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @Threads(16)
    public VersionResponse versionThroughProxy16() {
        return proxied.version(version);
    }
}
