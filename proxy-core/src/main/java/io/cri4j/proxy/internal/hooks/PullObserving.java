package io.cri4j.proxy.internal.hooks;

import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.PullImageResponse;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgressService;
import io.cri4j.imagepull.v1.ListRequest;
import io.cri4j.imagepull.v1.PullProgressGrpc;
import io.cri4j.imagepull.v1.WatchRequest;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * The proxy's link for observed pulls: tells the {@link PullObserver} when a {@code PullImage} (v1 or
 * v1alpha2) starts and how it ended, and proceeds with the request as it came, on the I/O thread, waiting
 * for nothing; and answers {@code cri4j.imagepull.v1.PullProgress} itself (never proceeding: the runtime
 * does not serve it).
 */
public final class PullObserving implements AsyncCriInterceptor {
    private final PullObserver observer;
    private final PullProgressService service;

    public PullObserving(PullObserver observer) {
        this.observer = observer;
        this.service = new PullProgressService(observer);
    }

    /** The methods the proxy answers itself for this link. */
    public static List<MethodDescriptor<?, ?>> localMethods() {
        return List.copyOf(PullProgressGrpc.getServiceDescriptor().getMethods());
    }

    private static boolean pullImage(MethodDescriptor<?, ?> m) {
        String svc = m.getServiceName();
        return "PullImage".equals(m.getBareMethodName())
                && ("runtime.v1.ImageService".equals(svc)
                        || "runtime.v1alpha2.ImageService".equals(svc));
    }

    private static boolean local(MethodDescriptor<?, ?> m) {
        return PullProgressGrpc.SERVICE_NAME.equals(m.getServiceName());
    }

    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        return pullImage(method) || local(method);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
        MethodDescriptor<Q, R> m = chain.method();
        if (local(m)) {
            if (chain.request() instanceof ListRequest) {
                return CompletableFuture.completedFuture((R) service.list());
            }
            return CompletableFuture.failedFuture(
                    Status.UNIMPLEMENTED
                            .withDescription("the proxy does not serve " + m.getFullMethodName())
                            .asException());
        }
        if (!pullImage(m)
                || !(chain.request() instanceof PullImageRequest req)
                || req.getImage().getImage().isEmpty()) {
            return chain.proceed(chain.request());
        }
        PullObserver.ObservedPull seen = observer.pullStarted(req.getImage().getImage());
        CompletionStage<R> answer;
        try {
            answer = chain.proceed(chain.request());
        } catch (RuntimeException e) {
            seen.failed(describe(e));
            throw e;
        }
        answer.whenComplete(
                (r, e) -> {
                    if (e == null) {
                        seen.succeeded(r instanceof PullImageResponse p ? p.getImageRef() : "");
                    } else {
                        seen.failed(describe(e));
                    }
                });
        return answer;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> void interceptServerStreaming(StreamingChain<Q, R> chain) {
        if (local(chain.method()) && chain.request() instanceof WatchRequest req) {
            service.watch(
                    req,
                    (StreamObserver<io.cri4j.imagepull.v1.ImagePullProgress>) chain.responses());
            return;
        }
        chain.proceed(chain.request(), chain.responses());
    }

    /** The runtime's (or the client's) words for why the pull failed. */
    private static String describe(Throwable e) {
        Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        Status s = Status.fromThrowable(t);
        String why = s.getDescription();
        return s.getCode() + (why == null || why.isEmpty() ? "" : ": " + why);
    }
}
