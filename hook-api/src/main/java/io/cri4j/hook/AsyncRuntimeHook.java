package io.cri4j.hook;

import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link RuntimeHook} that answers asynchronously: it starts its work and returns a stage at
 * once, without blocking the calling thread (typically it sends a request with an asynchronous
 * client, as {@link RemoteRuntimeHook} does). The dispatcher then needs no hook thread for it:
 * it calls the hook on the thread that dispatches (which may be a proxy's I/O thread), keeps the
 * hook's {@link #timeout()} with a timer, and goes on from the thread that completes the stage.
 * When the timeout passes first, the stage is cancelled and the hook's failure policy applies.
 *
 * <p>The synchronous methods default to starting the asynchronous call and waiting for it
 * (bounded by the timeout), for dispatches that run on a worker anyway.
 */
public interface AsyncRuntimeHook extends RuntimeHook {

  /** Starts the call of a pod point; must not block. */
  CompletionStage<PodSandboxHookResponse> onPodSandboxAsync(HookPoint point,
      PodSandboxHookRequest request);

  /** Starts the call of a container point; must not block. */
  CompletionStage<ContainerHookResult> onContainerAsync(HookPoint point,
      ContainerResourceHookRequest request);

  @Override
  default PodSandboxHookResponse onPodSandbox(HookPoint point, PodSandboxHookRequest request)
      throws Exception {
    return await(onPodSandboxAsync(point, request), this);
  }

  @Override
  default ContainerHookResult onContainer(HookPoint point, ContainerResourceHookRequest request)
      throws Exception {
    return await(onContainerAsync(point, request), this);
  }

  /**
   * Waits for {@code stage} at most the hook's timeout; the failure it ends with is thrown as
   * it is, and a stage still running at the timeout is cancelled.
   */
  private static <T> T await(CompletionStage<T> stage, RuntimeHook hook) throws Exception {
    java.util.concurrent.CompletableFuture<T> f = stage.toCompletableFuture();
    try {
      return f.get(HookDispatcher.timeoutNanos(hook), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception ex ? ex : e;
    } catch (TimeoutException | InterruptedException e) {
      f.cancel(true);
      throw e;
    }
  }
}
