package io.cri4j.hook;

import io.cri4j.hook.internal.ResponseMerger;
import io.cri4j.hook.internal.Statuses;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the hooks registered for a point, in order (ascending {@link RuntimeHook#index()}, then
 * name, like NRI plugins), each with the unchanged request and bounded by its timeout (at most
 * {@link HookPolicy#MAX_TIMEOUT}, whatever the hook says); merges
 * their responses field by field, reporting {@link HookConflict}s; applies failure policies.
 * Pre points: a failing hook with {@link FailurePolicy#FAIL} fails the dispatch with a status
 * naming the hook; with {@link FailurePolicy#IGNORE} its response is left out. Post points:
 * errors are logged only. Owns a thread pool; close it when done.
 */
public final class HookDispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HookDispatcher.class);

  private final Supplier<? extends List<? extends RuntimeHook>> hooks;
  /** A watched directory's hooks, called in addition to {@link #hooks}; null: none. */
  private final HookConfigDirectory directory;
  private final Consumer<HookConflict> conflictListener;
  private final ExecutorService executor;

  private HookDispatcher(Builder b) {
    this.hooks = b.hooks;
    this.directory = b.directory;
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

  /** The hooks currently registered for {@code point}, in call order (an immutable list). */
  public List<RuntimeHook> hooksFor(HookPoint point) {
    return byPoint(directory == null ? null : directory.peek()).byPoint.get(point);
  }

  /** True if any hook is registered for {@code point} (cheaper than {@link #hooksFor}). */
  public boolean hasHooks(HookPoint point) {
    return !hooksFor(point).isEmpty();
  }

  /** True if any hook is registered for a point of this CRI method (bare name). */
  public boolean hasHooksFor(String criMethod) {
    ByPoint b = byPoint(directory == null ? null : directory.peek());
    for (Map.Entry<HookPoint, List<RuntimeHook>> e : b.byPoint.entrySet()) {
      if (!e.getValue().isEmpty() && e.getKey().criMethod().equals(criMethod)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The hooks of each point, in call order; worked out again only when the supplier hands out a
   * different list or the directory a different generation.
   */
  private record ByPoint(List<? extends RuntimeHook> source,
      HookConfigDirectory.Generation generation, Map<HookPoint, List<RuntimeHook>> byPoint) {
    static ByPoint of(List<? extends RuntimeHook> source,
        HookConfigDirectory.Generation generation) {
      List<RuntimeHook> all = new ArrayList<>(source);
      if (generation != null) {
        all.addAll(generation.hooks);
      }
      Map<HookPoint, List<RuntimeHook>> byPoint = new EnumMap<>(HookPoint.class);
      for (HookPoint p : HookPoint.values()) {
        List<RuntimeHook> out = new ArrayList<>();
        for (RuntimeHook h : all) {
          if (h.points().contains(p)) {
            out.add(h);
          }
        }
        out.sort(Comparator.comparingInt(RuntimeHook::index).thenComparing(RuntimeHook::name));
        byPoint.put(p, List.copyOf(out));
      }
      return new ByPoint(source, generation, byPoint);
    }
  }

  private volatile ByPoint byPoint;

  private ByPoint byPoint(HookConfigDirectory.Generation generation) {
    List<? extends RuntimeHook> now = hooks.get();
    ByPoint b = byPoint;
    if (b == null || b.source != now || b.generation != generation) {
      b = ByPoint.of(now, generation);
      byPoint = b;
    }
    return b;
  }

  /**
   * The hooks one dispatch calls: those in force when it starts, held (with their channels)
   * until {@link #release()} even if the config directory changes meanwhile.
   */
  private final class Held {
    final HookConfigDirectory.Generation generation;
    final ByPoint hooks;

    Held() {
      generation = directory == null ? null : directory.acquire();
      hooks = byPoint(generation);
    }

    List<RuntimeHook> of(HookPoint point) {
      return hooks.byPoint.get(point);
    }

    void release() {
      if (generation != null) {
        generation.release();
      }
    }
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
    Held held = new Held();
    try {
      for (RuntimeHook hook : held.of(point)) {
        PodSandboxHookResponse r = call(point, hook, () -> hook.onPodSandbox(point, request));
        if (r != null && point.isPre()) {
          merger.mergePod(hook, r);
        }
      }
    } finally {
      held.release();
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
    Held held = new Held();
    try {
      for (RuntimeHook hook : held.of(point)) {
        ContainerHookResult r = call(point, hook, () -> hook.onContainer(point, request));
        if (r != null && point.isPre()) {
          merger.mergeContainer(hook, r);
        }
      }
    } finally {
      held.release();
    }
    return merger.containerResult();
  }

  /**
   * {@link #dispatchPod} without blocking the caller: hooks that never block
   * ({@link RuntimeHook#callInline()}) run on the calling thread, the others on hook threads,
   * each bounded by its timeout, which {@code timer} keeps. Completes on the thread that finished
   * the last hook, or the timer's; fails with the {@link StatusException} {@link #dispatchPod}
   * throws.
   */
  public CompletableFuture<PodSandboxHookResponse> dispatchPodAsync(HookPoint point,
      PodSandboxHookRequest request, ScheduledExecutorService timer) {
    ResponseMerger merger = new ResponseMerger(point, conflictListener);
    return new AsyncDispatch<PodSandboxHookResponse, PodSandboxHookResponse>(point, timer,
        hook -> () -> hook.onPodSandbox(point, request),
        hook -> hook.onPodSandboxAsync(point, request), merger::mergePod, merger::podResult)
        .start();
  }

  /** {@link #dispatchContainer} without blocking the caller, as {@link #dispatchPodAsync}. */
  public CompletableFuture<ContainerHookResult> dispatchContainerAsync(HookPoint point,
      ContainerResourceHookRequest request, ScheduledExecutorService timer) {
    ResponseMerger merger = new ResponseMerger(point, conflictListener);
    return new AsyncDispatch<ContainerHookResult, ContainerHookResult>(point, timer,
        hook -> () -> hook.onContainer(point, request),
        hook -> hook.onContainerAsync(point, request), merger::mergeContainer,
        merger::containerResult).start();
  }

  /** One asynchronous dispatch: the hooks of a point in order, each on its thread. */
  private final class AsyncDispatch<R, M> {
    private final HookPoint point;
    private final ScheduledExecutorService timer;
    private final Function<RuntimeHook, Callable<R>> body;
    private final Function<AsyncRuntimeHook, CompletionStage<R>> asyncBody;
    private final Merge<R> merge;
    private final Supplier<M> result;
    private final Held held = new Held();
    private final List<RuntimeHook> order;
    private final CompletableFuture<M> done = new CompletableFuture<>();

    AsyncDispatch(HookPoint point, ScheduledExecutorService timer,
        Function<RuntimeHook, Callable<R>> body,
        Function<AsyncRuntimeHook, CompletionStage<R>> asyncBody, Merge<R> merge,
        Supplier<M> result) {
      this.point = point;
      this.timer = timer;
      this.body = body;
      this.asyncBody = asyncBody;
      this.merge = merge;
      this.result = result;
      this.order = held.of(point);
    }

    CompletableFuture<M> start() {
      done.whenComplete((r, e) -> held.release());
      next(0);
      return done;
    }

    /** Calls hooks from {@code i} on: those that never block here, until one that may. */
    private void next(int i) {
      try {
        for (; i < order.size(); i++) {
          RuntimeHook hook = order.get(i);
          if (!hook.callInline()) {
            if (hook instanceof AsyncRuntimeHook async) {
              callAsync(i, async);
            } else {
              callOff(i, hook);
            }
            return;
          }
          took(hook, callInline(point, hook, body.apply(hook)));
        }
        done.complete(result.get());
      } catch (StatusException | RuntimeException e) {
        done.completeExceptionally(e);
      }
    }

    private void took(RuntimeHook hook, R r) throws StatusException {
      if (r != null && point.isPre()) {
        merge.accept(hook, r);
      }
    }

    /**
     * Runs a hook that may block on a hook thread; an overrun hook is interrupted
     * ({@link #race}).
     */
    private void callOff(int i, RuntimeHook hook) {
      CompletableFuture<R> answer = new CompletableFuture<>();
      FutureTask<R> task = new FutureTask<>(body.apply(hook)) {
        @Override
        protected void done() {
          if (isCancelled()) {
            return; // the timeout decided
          }
          try {
            answer.complete(get());
          } catch (ExecutionException e) {
            answer.completeExceptionally(e.getCause());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            answer.completeExceptionally(e);
          }
        }
      };
      // the race is set up first, so that the dispatch goes on from the hook thread
      java.util.function.BooleanSupplier abandon = race(i, hook, answer, () -> task.cancel(true));
      try {
        executor.execute(task);
      } catch (RejectedExecutionException e) {
        if (abandon.getAsBoolean()) {
          done.completeExceptionally(Status.UNAVAILABLE
              .withDescription("hooks are shut down; cannot call " + hook.name()).asException());
        }
      }
    }

    /** Starts an asynchronous hook here; an overrun hook's stage is cancelled ({@link #race}). */
    private void callAsync(int i, AsyncRuntimeHook hook) {
      CompletableFuture<R> answer;
      try {
        CompletionStage<R> stage = asyncBody.apply(hook);
        answer = stage == null ? CompletableFuture.failedFuture(
            new IllegalStateException("the hook returned no stage")) : stage.toCompletableFuture();
      } catch (RuntimeException e) {
        answer = CompletableFuture.failedFuture(e);
      }
      CompletableFuture<R> started = answer;
      race(i, hook, started, () -> started.cancel(true));
    }

    /**
     * Whichever comes first, the hook's {@code answer} or its timeout (on the timer), decides,
     * and the dispatch goes on from that thread; at the timeout, {@code giveUp} stops the hook.
     *
     * @return claims the decision for the caller (true if neither side had decided yet)
     */
    private java.util.function.BooleanSupplier race(int i, RuntimeHook hook,
        CompletableFuture<R> answer, Runnable giveUp) {
      AtomicBoolean decided = new AtomicBoolean();
      ScheduledFuture<?> timeout = answer.isDone() ? null : timer.schedule(() -> {
        if (decided.compareAndSet(false, true)) {
          giveUp.run();
          decide(i, hook, null, "timed out after " + timeoutMillis(hook) + " ms");
        }
      }, timeoutNanos(hook), TimeUnit.NANOSECONDS);
      java.util.function.BooleanSupplier claim = () -> {
        if (!decided.compareAndSet(false, true)) {
          return false;
        }
        if (timeout != null) {
          timeout.cancel(false);
        }
        return true;
      };
      answer.whenComplete((r, e) -> {
        if (claim.getAsBoolean()) {
          decide(i, hook, r, e == null ? null : problem(Statuses.unwrap(e)));
        }
      });
      return claim;
    }

    private void decide(int i, RuntimeHook hook, R r, String problem) {
      try {
        took(hook, problem == null ? r : failed(point, hook, problem));
      } catch (StatusException e) {
        done.completeExceptionally(e);
        return;
      }
      next(i + 1);
    }
  }

  /**
   * The hook's timeout in nanoseconds, held to {@link HookPolicy#MAX_TIMEOUT} (a longer one would
   * overflow the arithmetic of every call).
   */
  static long timeoutNanos(RuntimeHook hook) {
    Duration t = hook.timeout();
    return t == null || t.compareTo(HookPolicy.MAX_TIMEOUT) > 0
        ? HookPolicy.MAX_TIMEOUT.toNanos() : Math.max(0, t.toNanos());
  }

  private static long timeoutMillis(RuntimeHook hook) {
    return TimeUnit.NANOSECONDS.toMillis(timeoutNanos(hook));
  }

  /** Takes a pre hook's answer into the merged one (a conflict may fail the call). */
  @FunctionalInterface
  private interface Merge<R> {
    void accept(RuntimeHook hook, R answer) throws StatusException;
  }

  /** How a hook's failure is worded in logs and statuses. */
  private static String problem(Throwable c) {
    return c instanceof StatusException || c instanceof io.grpc.StatusRuntimeException
        ? c.getMessage() : c.toString();
  }

  private <T> T call(HookPoint point, RuntimeHook hook, Callable<T> body)
      throws StatusException {
    if (hook.callInline()) {
      return callInline(point, hook, body);
    }
    Future<T> f = executor.submit(body);
    String problem;
    try {
      return f.get(timeoutNanos(hook), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      problem = "timed out after " + timeoutMillis(hook) + " ms";
    } catch (ExecutionException e) {
      problem = problem(e.getCause());
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
      if (took <= timeoutNanos(hook)) {
        return result;
      }
      problem = "took " + TimeUnit.NANOSECONDS.toMillis(took) + " ms, more than its timeout of "
          + timeoutMillis(hook) + " ms (called inline)";
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
    private HookConfigDirectory directory;
    private Consumer<HookConflict> conflictListener =
        c -> LOG.warn("hook conflict: {}", c.describe());

    private Builder() {}

    /** A fixed list of hooks. */
    public Builder hooks(List<? extends RuntimeHook> fixed) {
      List<? extends RuntimeHook> copy = List.copyOf(fixed);
      this.hooks = () -> copy;
      return this;
    }

    /**
     * A live source of hooks, asked on every dispatch. It should hand out the same list object
     * until the hooks change: the dispatcher orders the hooks by point again whenever the list
     * is a different one. A {@link HookConfigDirectory} is taken as
     * {@link #configDirectory(HookConfigDirectory)} with no other hooks.
     */
    public Builder hooks(Supplier<? extends List<? extends RuntimeHook>> source) {
      Objects.requireNonNull(source, "source");
      if (source instanceof HookConfigDirectory dir) {
        this.hooks = List::of;
        this.directory = dir;
      } else {
        this.hooks = source;
      }
      return this;
    }

    /**
     * Also calls the hooks of a watched config directory, ordered with the others. A dispatch
     * calls the directory's hooks in force when it started, on the channels it started with,
     * even when the directory changes before it is done; the channels of replaced hooks close
     * once no dispatch uses them.
     */
    public Builder configDirectory(HookConfigDirectory dir) {
      this.directory = Objects.requireNonNull(dir, "dir");
      return this;
    }

    /** Told about every conflict (default: logged as a warning). */
    public Builder onConflict(Consumer<HookConflict> listener) {
      this.conflictListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Creates the dispatcher. */
    public HookDispatcher build() {
      if (hooks == null && directory != null) {
        hooks = List::of;
      }
      Objects.requireNonNull(hooks, "hooks");
      return new HookDispatcher(this);
    }
  }
}
