package io.cri4j.examples.demo;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The demo's in-process hook, at CreateContainer: injects an environment variable into every
 * container, and pins the container's cpuset to the CPUs named by the pod annotation
 * {@value #CPUSET_ANNOTATION} when the pod has it. It only computes its answer from the pod and
 * container, so it is an {@link AsyncHook} answering at once: the proxy calls it on its I/O
 * thread, without a hand-off.
 */
public final class EnvAndCpusetHook implements AsyncHook {

    /** Pod annotation naming the CPUs to pin containers to, e.g. {@code 0-1}. */
    public static final String CPUSET_ANNOTATION = "cri4j.io/cpuset";

    /** Environment variable injected into every container. */
    public static final String ENV_NAME = "CRI4J_HOOKED";

    private final String envValue;

    /** @param envValue value of the injected {@value #ENV_NAME} variable */
    public EnvAndCpusetHook(String envValue) {
        this.envValue = envValue;
    }

    @Override
    public String name() {
        return "demo-env-cpuset";
    }

    @Override
    public CompletionStage<HookResult> createContainer(PodSandbox pod, Container container) {
        Adjustments a = Adjustments.create().addEnv(ENV_NAME, envValue);
        String cpuset = pod.getAnnotationsMap().get(CPUSET_ANNOTATION);
        if (cpuset != null && !cpuset.isBlank()) {
            a.setLinuxCpuSetCpus(cpuset.strip());
        }
        return CompletableFuture.completedFuture(HookResult.adjust(a.build()));
    }
}
