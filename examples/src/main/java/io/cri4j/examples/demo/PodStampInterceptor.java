package io.cri4j.examples.demo;

import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.hook.AsyncCriInterceptor;
import io.grpc.MethodDescriptor;
import java.util.concurrent.CompletionStage;

/**
 * The demo's interceptor: labels every pod sandbox created through the proxy with
 * {@value #LABEL}{@code =}{@value #VALUE}. It only computes from the request, so it is an
 * {@link AsyncCriInterceptor}: the proxy runs it on its I/O thread, with no thread hand-off.
 */
public final class PodStampInterceptor implements AsyncCriInterceptor {

    /** The label set on every pod. */
    public static final String LABEL = "cri4j.io/created-through";
    /** Its value. */
    public static final String VALUE = "cri4j-proxy";

    @Override
    public boolean intercepts(MethodDescriptor<?, ?> method) {
        return method.getBareMethodName().equals("RunPodSandbox");
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
        RunPodSandboxRequest r = (RunPodSandboxRequest) chain.request();
        return chain.proceed((Q) r.toBuilder()
                .setConfig(r.getConfig().toBuilder().putLabels(LABEL, VALUE)).build());
    }
}
