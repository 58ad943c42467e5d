package io.cri4j.hook;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A hook server reached over a unix socket speaking Koordinator's
 * {@code runtime.v1alpha1.RuntimeHookService} (so koordlet works as a hook server), and cri4j's
 * {@code ExtendedRuntimeHookService} for the extra points. Each call has the config's timeout
 * as its deadline. Owns a channel: close it.
 */
public final class RemoteRuntimeHook implements RuntimeHook, AutoCloseable {
  private final HookConfig config;
  private final ManagedChannel channel;

  /** Connects lazily to {@code config.remoteEndpoint()}. */
  public RemoteRuntimeHook(HookConfig config) {
    this.config = config;
    this.channel = CriChannels.newChannel(CriEndpoint.parse(config.remoteEndpoint()));
  }

  /** The config this hook was made from. */
  public HookConfig config() {
    return config;
  }

  @Override public String name() { return config.name(); }

  @Override public Set<HookPoint> points() { return config.points(); }

  @Override public int index() { return config.index(); }

  @Override public FailurePolicy failurePolicy() { return config.failurePolicy(); }

  @Override public Duration timeout() { return config.timeout(); }

  @Override
  public PodSandboxHookResponse onPodSandbox(HookPoint point, PodSandboxHookRequest request) {
    return ClientCalls.blockingUnaryCall(channel, method(point), options(), request);
  }

  @Override
  public ContainerHookResult onContainer(HookPoint point, ContainerResourceHookRequest request) {
    ContainerResourceHookResponse r =
        ClientCalls.blockingUnaryCall(channel, method(point), options(), request);
    return ContainerHookResult.of(r);
  }

  private CallOptions options() {
    return CallOptions.DEFAULT.withDeadlineAfter(config.timeout().toNanos(), TimeUnit.NANOSECONDS);
  }

  @SuppressWarnings("unchecked")
  static <Q, R> MethodDescriptor<Q, R> method(HookPoint point) {
    ServiceDescriptor svc = point.isKoordinator()
        ? RuntimeHookServiceGrpc.getServiceDescriptor()
        : ExtendedRuntimeHookServiceGrpc.getServiceDescriptor();
    for (MethodDescriptor<?, ?> m : svc.getMethods()) {
      if (m.getBareMethodName().equals(point.rpcName())) {
        return (MethodDescriptor<Q, R>) m;
      }
    }
    throw new IllegalStateException("no RPC for hook point " + point);
  }

  /** Closes the channel; idempotent. */
  @Override
  public void close() {
    channel.shutdownNow();
  }
}
