package io.cri4j.proxy.internal;

import io.cri4j.hook.AsyncCriInterceptor;
import io.cri4j.hook.internal.CriHookInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;

/**
 * The runtime hooks' link of the chain: the pre point, the rest of the chain with the changed
 * request, then the post point. Hooks that never block run on the thread at hand (the I/O
 * thread), the others on hook threads (remote ones asynchronously), their timeouts kept by the
 * I/O thread's timer. On {@code runtime.v1alpha2} calls the hooks run only when the backend
 * serves v1alpha2; while no probe told, one runs on a worker first, and the call fails with
 * {@code UNAVAILABLE} rather than pass unhooked when the backend cannot be reached.
 */
public final class HookLink implements AsyncCriInterceptor {
  private final CriHookInterceptor hooks;
  private final Supplier<Boolean> served;
  private final Supplier<CompletableFuture<Boolean>> probe;
  private final String backend;

  /**
   * @param served whether the backend serves v1alpha2 as far as known (null: unknown)
   * @param probe probes the backend for v1alpha2 (on a worker), completing with the answer
   *     (null: unreachable)
   * @param backend the backend, as named in statuses
   */
  public HookLink(CriHookInterceptor hooks, Supplier<Boolean> served,
      Supplier<CompletableFuture<Boolean>> probe, String backend) {
    this.hooks = hooks;
    this.served = served;
    this.probe = probe;
    this.backend = backend;
  }

  @Override
  public boolean intercepts(MethodDescriptor<?, ?> method) {
    return hooks.intercepts(method);
  }

  @Override
  @SuppressWarnings("unchecked")
  public <Q, R> CompletionStage<R> interceptUnaryAsync(AsyncUnaryChain<Q, R> chain) {
    ScheduledExecutorService loop = ((InterceptedService.OnLoop) chain).loop();
    String svc = chain.method().getServiceName();
    if (svc == null || !svc.startsWith("runtime.v1alpha2.")) {
      return hooked(chain, loop);
    }
    Boolean known = served.get();
    if (known != null) {
      return known ? hooked(chain, loop) : chain.proceed(chain.request());
    }
    CompletableFuture<Boolean> probed;
    try {
      probed = probe.get();
    } catch (RuntimeException e) { // no worker free
      return CompletableFuture.failedFuture(Status.UNAVAILABLE.withDescription("cannot tell"
          + " whether backend " + backend + " serves runtime.v1alpha2: " + e).asException());
    }
    Executor onLoop = loop;
    return probed.thenComposeAsync(now -> {
      if (now == null) {
        // never let a call pass unhooked because the probe raced a reconnecting backend
        return CompletableFuture.failedFuture(Status.UNAVAILABLE.withDescription("backend "
            + backend + " is unreachable (cannot tell whether it serves runtime.v1alpha2)")
            .asException());
      }
      return now ? hooked(chain, loop) : chain.proceed(chain.request());
    }, onLoop);
  }

  @SuppressWarnings("unchecked")
  private <Q, R> CompletionStage<R> hooked(AsyncUnaryChain<Q, R> chain,
      ScheduledExecutorService loop) {
    Q req = chain.request();
    return hooks.beginAsync(chain.method(), req, loop).thenCompose(phase -> phase == null
        ? chain.proceed(req)
        : chain.proceed((Q) phase.request())
            .thenCompose(response -> (CompletionStage<R>) (CompletionStage<?>)
                phase.completeAsync(response, loop)));
  }
}
