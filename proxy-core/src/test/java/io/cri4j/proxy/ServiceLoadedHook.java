package io.cri4j.proxy;

import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import java.util.List;
import java.util.Set;

/** Found through META-INF/services/io.cri4j.hook.RuntimeHook in the test resources. */
public final class ServiceLoadedHook implements RuntimeHook {
  @Override public String name() { return "service-loaded"; }

  @Override public Set<HookPoint> points() { return Set.of(HookPoint.PRE_CREATE_CONTAINER); }

  @Override
  public ContainerHookResult onContainer(HookPoint point, ContainerResourceHookRequest request) {
    return ContainerHookResult.of(ContainerResourceHookResponse.newBuilder()
            .putContainerAnnotations("loaded-by", "ServiceLoader").build())
        .withEnvs(List.of(CriProxyIT.kv("CRI4J_HOOKED", "pod=" + request.getPodMeta().getName())));
  }
}
