package io.cri4j.examples.demo;

import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.hook.cri.ForwardingAsyncCriInterceptor;
import java.util.concurrent.CompletionStage;

/**
 * The demo's interceptor: labels every pod sandbox created through the proxy with
 * {@value #LABEL}{@code =}{@value #VALUE}. It only computes from the request, so it is a
 * {@link ForwardingAsyncCriInterceptor}: the proxy runs it on its I/O thread, with no thread
 * hand-off, and relays every other method undecoded.
 */
public final class PodStampInterceptor extends ForwardingAsyncCriInterceptor {

    /** The label set on every pod. */
    public static final String LABEL = "cri4j.io/created-through";

    /** Its value. */
    public static final String VALUE = "cri4j-proxy";

    @Override
    public CompletionStage<RunPodSandboxResponse> runPodSandbox(
            RunPodSandboxRequest request,
            AsyncUnaryChain<RunPodSandboxRequest, RunPodSandboxResponse> chain) {
        return chain.proceed(
                request.toBuilder()
                        .setConfig(request.getConfig().toBuilder().putLabels(LABEL, VALUE))
                        .build());
    }
}
