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
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A hook server reached over a unix socket speaking Koordinator's
 * {@code runtime.v1alpha1.RuntimeHookService} (so koordlet works as a hook server), and cri4j's
 * {@code ExtendedRuntimeHookService} for the extra points. Each call has the config's timeout
 * as its deadline. The hook server's whole answer is taken, {@code container_envs} included
 * (see {@link ContainerHookResult#environment()}). Asynchronous ({@link AsyncRuntimeHook}): a dispatch that can wait without
 * blocking sends the request and goes on from the channel's transport thread when the answer
 * comes, so no hook thread waits for koordlet. Owns a channel: close it.
 */
public final class RemoteRuntimeHook implements AsyncRuntimeHook, AutoCloseable {
  private final HookConfig config;
  private final ManagedChannel channel;
  /** Holds of a {@link HookConfigDirectory}'s generations; null: owned by the caller. */
  private final java.util.concurrent.atomic.AtomicInteger holds;

  /** Connects lazily to {@code config.remoteEndpoint()}. */
  public RemoteRuntimeHook(HookConfig config) {
    this(config, false);
  }

  /** @param held whether the channel closes when the last hold is released */
  RemoteRuntimeHook(HookConfig config, boolean held) {
    this.config = config;
    this.channel = CriChannels.newChannel(CriEndpoint.parse(config.remoteEndpoint()));
    this.holds = held ? new java.util.concurrent.atomic.AtomicInteger() : null;
  }

  /** One more generation of the config directory has this hook. */
  void retain() {
    if (holds != null) {
      holds.incrementAndGet();
    }
  }

  /**
   * A generation that had this hook is done with it: the last one shuts the channel down
   * (gracefully: a call still on it, given up by its dispatch, may end by itself).
   */
  void release() {
    if (holds != null && holds.decrementAndGet() == 0) {
      channel.shutdown();
    }
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

  @Override
  public CompletionStage<PodSandboxHookResponse> onPodSandboxAsync(HookPoint point,
      PodSandboxHookRequest request) {
    return call(point, request);
  }

  @Override
  public CompletionStage<ContainerHookResult> onContainerAsync(HookPoint point,
      ContainerResourceHookRequest request) {
    CompletableFuture<ContainerResourceHookResponse> sent = call(point, request);
    CompletableFuture<ContainerHookResult> answer = sent.thenApply(ContainerHookResult::of);
    answer.whenComplete((r, e) -> {
      if (answer.isCancelled()) {
        sent.cancel(true); // cancels the call
      }
    });
    return answer;
  }

  /**
   * Sends {@code request}; the answer completes the future on the transport thread (no
   * executor hop). Cancelling the future cancels the call.
   */
  private <Q, R> CompletableFuture<R> call(HookPoint point, Q request) {
    ClientCall<Q, R> call = channel.newCall(method(point),
        options().withExecutor(Runnable::run));
    CompletableFuture<R> answer = new CompletableFuture<>();
    answer.whenComplete((r, e) -> {
      if (answer.isCancelled()) {
        call.cancel("the hook's dispatch gave up on it", null);
      }
    });
    ClientCalls.asyncUnaryCall(call, request, new StreamObserver<R>() {
      @Override public void onNext(R value) { answer.complete(value); }

      @Override public void onError(Throwable t) { answer.completeExceptionally(t); }

      @Override public void onCompleted() {
        answer.completeExceptionally(Status.INTERNAL.withDescription("hook server answered "
            + point.rpcName() + " without a message").asRuntimeException()); // no-op after onNext
      }
    });
    return answer;
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

  /** Whether the channel was shut down (for tests). */
  boolean isShutdown() {
    return channel.isShutdown();
  }

  /** Closes the channel; idempotent. */
  @Override
  public void close() {
    channel.shutdownNow();
  }
}
