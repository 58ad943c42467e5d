package io.cri4j.hook;

import io.cri4j.hook.internal.ResponseMerger;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the hooks registered for a point, in order (ascending {@link RuntimeHook#index()}, then
 * name, like NRI plugins), each with the unchanged request and bounded by its timeout; merges
 * their responses field by field, reporting {@link HookConflict}s; applies failure policies.
 * Pre points: a failing hook with {@link FailurePolicy#FAIL} fails the dispatch with a status
 * naming the hook; with {@link FailurePolicy#IGNORE} its response is left out. Post points:
 * errors are logged only. Owns a thread pool; close it when done.
 */
public final class HookDispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HookDispatcher.class);

  private final Supplier<? extends List<? extends RuntimeHook>> hooks;
  private final Consumer<HookConflict> conflictListener;
  private final ExecutorService executor;

  private HookDispatcher(Builder b) {
    this.hooks = b.hooks;
    this.conflictListener = b.conflictListener;
    AtomicInteger n = new AtomicInteger();
    this.executor = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "cri4j-hook-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** A builder; {@link Builder#hooks} is required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The hooks currently registered for {@code point}, in call order. */
  public List<RuntimeHook> hooksFor(HookPoint point) {
    List<RuntimeHook> out = new ArrayList<>();
    for (RuntimeHook h : hooks.get()) {
      if (h.points().contains(point)) {
        out.add(h);
      }
    }
    out.sort(Comparator.comparingInt(RuntimeHook::index).thenComparing(RuntimeHook::name));
    return out;
  }

  /**
   * True if every hook now registered for any of {@code points} never blocks
   * ({@link RuntimeHook#callInline()}); true when there is none.
   */
  public boolean allInline(java.util.Collection<HookPoint> points) {
    for (RuntimeHook h : hooks.get()) {
      if (!h.callInline()) {
        for (HookPoint p : points) {
          if (h.points().contains(p)) {
            return false;
          }
        }
      }
    }
    return true;
  }

  /** True if any hook is registered for {@code point} (cheaper than {@link #hooksFor}). */
  public boolean hasHooks(HookPoint point) {
    for (RuntimeHook h : hooks.get()) {
      if (h.points().contains(point)) {
        return true;
      }
    }
    return false;
  }

  /** True if any hook is registered for a point of this CRI method (bare name). */
  public boolean hasHooksFor(String criMethod) {
    for (RuntimeHook h : hooks.get()) {
      for (HookPoint p : h.points()) {
        if (p.criMethod().equals(criMethod)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Dispatches a pod point.
   *
   * @return the merged response (empty when no hook answered)
   * @throws StatusException when a pre hook with policy Fail failed or conflicted
   */
  public PodSandboxHookResponse dispatchPod(HookPoint point, PodSandboxHookRequest request)
      throws StatusException {
    ResponseMerger merger = new ResponseMerger(point, conflictListener);
    for (RuntimeHook hook : hooksFor(point)) {
      PodSandboxHookResponse r = call(point, hook, () -> hook.onPodSandbox(point, request));
      if (r != null && point.isPre()) {
        merger.mergePod(hook, r);
      }
    }
    return merger.podResult();
  }

  /**
   * Dispatches a container point.
   *
   * @return the merged result (empty when no hook answered)
   * @throws StatusException when a pre hook with policy Fail failed or conflicted
   */
  public ContainerHookResult dispatchContainer(HookPoint point,
      ContainerResourceHookRequest request) throws StatusException {
    ResponseMerger merger = new ResponseMerger(point, conflictListener);
    for (RuntimeHook hook : hooksFor(point)) {
      ContainerHookResult r = call(point, hook, () -> hook.onContainer(point, request));
      if (r != null && point.isPre()) {
        merger.mergeContainer(hook, r);
      }
    }
    return merger.containerResult();
  }

  private <T> T call(HookPoint point, RuntimeHook hook, Callable<T> body)
      throws StatusException {
    if (hook.callInline()) {
      return callInline(point, hook, body);
    }
    Future<T> f = executor.submit(body);
    String problem;
    try {
      return f.get(hook.timeout().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      problem = "timed out after " + hook.timeout().toMillis() + " ms";
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      problem = c instanceof StatusException || c instanceof io.grpc.StatusRuntimeException
          ? c.getMessage() : c.toString();
    } catch (InterruptedException e) {
      f.cancel(true);
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted while calling hook " + hook.name())
          .asException();
    }
    return failed(point, hook, problem);
  }

  /** A hook called on this thread ({@link RuntimeHook#callInline()}); an overrun is a failure. */
  private <T> T callInline(HookPoint point, RuntimeHook hook, Callable<T> body)
      throws StatusException {
    long t0 = System.nanoTime();
    String problem;
    try {
      T result = body.call();
      long took = System.nanoTime() - t0;
      if (took <= hook.timeout().toNanos()) {
        return result;
      }
      problem = "took " + TimeUnit.NANOSECONDS.toMillis(took) + " ms, more than its timeout of "
          + hook.timeout().toMillis() + " ms (called inline)";
    } catch (StatusException | io.grpc.StatusRuntimeException e) {
      problem = e.getMessage();
    } catch (Exception e) {
      problem = e.toString();
    }
    return failed(point, hook, problem);
  }

  private <T> T failed(HookPoint point, RuntimeHook hook, String problem) throws StatusException {
    String message = "hook " + hook.name() + " failed at " + point.configName() + ": " + problem;
    if (point.isPre() && hook.failurePolicy() == FailurePolicy.FAIL) {
      LOG.warn("{} (failure-policy Fail: failing the CRI call)", message);
      throw Status.INTERNAL.withDescription(message).asException();
    }
    LOG.warn("{} ({})", message, point.isPre()
        ? "failure-policy Ignore: its changes are left out" : "post hook: call not affected");
    return null;
  }

  /** Stops the hook threads; idempotent. */
  @Override
  public void close() {
    executor.shutdownNow();
  }

  /** Builds a {@link HookDispatcher}. */
  public static final class Builder {
    private Supplier<? extends List<? extends RuntimeHook>> hooks;
    private Consumer<HookConflict> conflictListener =
        c -> LOG.warn("hook conflict: {}", c.describe());

    private Builder() {}

    /** A fixed list of hooks. */
    public Builder hooks(List<? extends RuntimeHook> fixed) {
      List<? extends RuntimeHook> copy = List.copyOf(fixed);
      this.hooks = () -> copy;
      return this;
    }

    /** A live source of hooks, asked on every dispatch (e.g. a {@link HookConfigDirectory}). */
    public Builder hooks(Supplier<? extends List<? extends RuntimeHook>> source) {
      this.hooks = Objects.requireNonNull(source, "source");
      return this;
    }

    /** Told about every conflict (default: logged as a warning). */
    public Builder onConflict(Consumer<HookConflict> listener) {
      this.conflictListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Creates the dispatcher. */
    public HookDispatcher build() {
      Objects.requireNonNull(hooks, "hooks");
      return new HookDispatcher(this);
    }
  }
}
