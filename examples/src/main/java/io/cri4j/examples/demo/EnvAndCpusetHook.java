package io.cri4j.examples.demo;

import io.cri4j.cri.v1.KeyValue;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import java.util.List;
import java.util.Set;

/**
 * The demo's in-process hook, at PreCreateContainer: injects an environment variable into every
 * container, and pins the container's cpuset to the CPUs named by the pod annotation
 * {@value #CPUSET_ANNOTATION} when the pod has it.
 */
public final class EnvAndCpusetHook implements RuntimeHook {

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

    /** It only computes from the request, so it is called inline, without a hand-off. */
    @Override
    public boolean callInline() {
        return true;
    }

    @Override
    public Set<HookPoint> points() {
        return Set.of(HookPoint.PRE_CREATE_CONTAINER);
    }

    @Override
    public ContainerHookResult onContainer(HookPoint point, ContainerResourceHookRequest request) {
        ContainerResourceHookResponse.Builder response = ContainerResourceHookResponse.newBuilder();
        String cpuset = request.getPodAnnotationsMap().get(CPUSET_ANNOTATION);
        if (cpuset != null && !cpuset.isBlank()) {
            response.setContainerResources(LinuxContainerResources.newBuilder().setCpusetCpus(cpuset.strip()));
        }
        return ContainerHookResult.of(response.build())
                .withEnvs(List.of(KeyValue.newBuilder().setKey(ENV_NAME).setValue(com.google.protobuf.ByteString.copyFromUtf8(envValue)).build()));
    }
}
