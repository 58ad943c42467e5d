package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class HookDispatcherTest {

  record Hook(String name, int index, FailurePolicy failurePolicy, Set<HookPoint> points,
      ContainerResourceHookResponse answer, List<String> calls, CountDownLatch hang)
      implements RuntimeHook {
    @Override public Duration timeout() { return Duration.ofMillis(200); }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
        throws Exception {
      calls.add(name);
      if (hang != null) {
        hang.await();
      }
      return ContainerHookResult.of(answer);
    }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint p, PodSandboxHookRequest r) {
      calls.add(name);
      throw new IllegalStateException("post failure of " + name);
    }
  }

  static ContainerResourceHookResponse res(String cpuset, long shares) {
    return ContainerResourceHookResponse.newBuilder().setContainerResources(
        LinuxContainerResources.newBuilder().setCpusetCpus(cpuset).setCpuShares(shares)).build();
  }

  @Test
  void callsInIndexThenNameOrderAndMergesFieldByField() throws StatusException {
    List<String> calls = new CopyOnWriteArrayList<>();
    Set<HookPoint> pts = Set.of(HookPoint.PRE_UPDATE_CONTAINER_RESOURCES);
    List<HookConflict> conflicts = new CopyOnWriteArrayList<>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
            new Hook("z", 1, FailurePolicy.IGNORE, pts, res("", 2048), calls, null),
            new Hook("b", 0, FailurePolicy.IGNORE, pts, res("0-3", 0), calls, null),
            new Hook("a", 1, FailurePolicy.IGNORE, pts, res("4-7", 0), calls, null)))
        .onConflict(conflicts::add).build()) {
      ContainerHookResult r = d.dispatchContainer(HookPoint.PRE_UPDATE_CONTAINER_RESOURCES,
          ContainerResourceHookRequest.getDefaultInstance());
      assertThat(calls).containsExactly("b", "a", "z");
      assertThat(r.response().getContainerResources().getCpusetCpus()).isEqualTo("0-3");
      assertThat(r.response().getContainerResources().getCpuShares()).isEqualTo(2048);
      assertThat(conflicts).singleElement().satisfies(c -> {
        assertThat(c.field()).isEqualTo("resources.cpuset_cpus");
        assertThat(c.keptHook()).isEqualTo("b");
        assertThat(c.droppedHook()).isEqualTo("a");
        assertThat(c.droppedValue()).isEqualTo("4-7");
      });
    }
  }

  @Test
  void aConflictingHookWithPolicyFailFailsTheDispatch() {
    Set<HookPoint> pts = Set.of(HookPoint.PRE_CREATE_CONTAINER);
    List<String> calls = new CopyOnWriteArrayList<>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new Hook("first", 0, FailurePolicy.IGNORE, pts, res("0", 0), calls, null),
        new Hook("second", 1, FailurePolicy.FAIL, pts, res("1", 0), calls, null))).build()) {
      assertThatThrownBy(() -> d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER,
          ContainerResourceHookRequest.getDefaultInstance()))
          .isInstanceOfSatisfying(StatusException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(e.getStatus().getDescription()).contains("first").contains("second")
                .contains("cpuset_cpus");
          });
    }
  }

  @Test
  void timeoutsAreBoundedAndPostErrorsNeverFail() throws StatusException {
    Set<HookPoint> pts = Set.of(HookPoint.PRE_START_CONTAINER, HookPoint.POST_STOP_POD_SANDBOX);
    List<String> calls = new CopyOnWriteArrayList<>();
    CountDownLatch never = new CountDownLatch(1);
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new Hook("slow", 0, FailurePolicy.FAIL, pts, res("", 0), calls, never))).build()) {
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> d.dispatchContainer(HookPoint.PRE_START_CONTAINER,
          ContainerResourceHookRequest.getDefaultInstance()))
          .hasMessageContaining("hook slow failed at PreStartContainer: timed out after 200 ms");
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(2));
      // a post point with a throwing Fail hook: logged, not thrown
      assertThat(d.dispatchPod(HookPoint.POST_STOP_POD_SANDBOX,
          PodSandboxHookRequest.getDefaultInstance()))
          .isEqualTo(PodSandboxHookResponse.getDefaultInstance());
      assertThat(calls).containsExactly("slow", "slow");
    } finally {
      never.countDown();
    }
  }

  /** A hook called inline that records its thread and can be made slow or failing. */
  record InlineHook(String name, FailurePolicy failurePolicy, long sleepMillis, boolean fail,
      List<Thread> threads) implements RuntimeHook {
    @Override public Set<HookPoint> points() { return Set.of(HookPoint.PRE_CREATE_CONTAINER); }

    @Override public Duration timeout() { return Duration.ofMillis(50); }

    @Override public boolean callInline() { return true; }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
        throws Exception {
      threads.add(Thread.currentThread());
      if (sleepMillis > 0) {
        Thread.sleep(sleepMillis); // the hook's own work taking too long, not synchronisation
      }
      if (fail) {
        throw new IllegalStateException("broken " + name);
      }
      return ContainerHookResult.of(res("1", 0));
    }
  }

  @Test
  void inlineHooksRunOnTheCallersThreadAndAnOverrunOrErrorIsAFailureUnderTheirPolicy()
      throws StatusException {
    List<Thread> threads = new CopyOnWriteArrayList<>();
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new InlineHook("fast", FailurePolicy.FAIL, 0, false, threads))).build()) {
      ContainerHookResult r = d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req);
      assertThat(r.response().getContainerResources().getCpusetCpus()).isEqualTo("1");
      assertThat(threads).containsExactly(Thread.currentThread());
    }
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new InlineHook("slow", FailurePolicy.IGNORE, 120, false, threads))).build()) {
      ContainerHookResult r = d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req);
      assertThat(r.response().getContainerResources().getCpusetCpus())
          .as("an overrun hook's changes are left out").isEmpty();
    }
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new InlineHook("slow", FailurePolicy.FAIL, 120, false, threads))).build()) {
      assertThatThrownBy(() -> d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req))
          .isInstanceOfSatisfying(StatusException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
            assertThat(e.getStatus().getDescription()).contains("hook slow")
                .contains("more than its timeout of 50 ms");
          });
    }
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new InlineHook("broken", FailurePolicy.FAIL, 0, true, threads))).build()) {
      assertThatThrownBy(() -> d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req))
          .isInstanceOfSatisfying(StatusException.class, e ->
              assertThat(e.getStatus().getDescription()).contains("broken broken"));
    }
  }
  /** A hook that records the thread it ran on and whether it was interrupted. */
  record ThreadHook(String name, int index, FailurePolicy failurePolicy, boolean callInline,
      ContainerResourceHookResponse answer, List<String> where, CountDownLatch hang,
      CountDownLatch interrupted) implements RuntimeHook {
    @Override public Set<HookPoint> points() {
      return Set.of(HookPoint.PRE_CREATE_CONTAINER, HookPoint.POST_CREATE_CONTAINER);
    }

    @Override public Duration timeout() { return Duration.ofMillis(150); }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
        throws Exception {
      where.add(name + "@" + Thread.currentThread().getName());
      if (hang != null) {
        try {
          hang.await();
        } catch (InterruptedException e) {
          interrupted.countDown();
          throw e;
        }
      }
      if (answer == null) {
        throw new IllegalStateException("broken " + name);
      }
      return ContainerHookResult.of(answer);
    }
  }

  private static java.util.concurrent.ScheduledExecutorService timer() {
    return java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "test-timer");
      t.setDaemon(true);
      return t;
    });
  }

  @Test
  void asyncDispatchKeepsTheOrderRunsBlockingHooksOffTheCallerAndMerges() throws Exception {
    List<String> where = new CopyOnWriteArrayList<>();
    var timer = timer();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new ThreadHook("a", 0, FailurePolicy.FAIL, true, res("0-3", 0), where, null, null),
        new ThreadHook("b", 1, FailurePolicy.FAIL, false, res("", 512), where, null, null),
        new ThreadHook("c", 2, FailurePolicy.FAIL, true,
            ContainerResourceHookResponse.newBuilder().putContainerAnnotations("k", "v").build(),
            where, null, null))).build()) {
      ContainerHookResult r = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER,
          ContainerResourceHookRequest.getDefaultInstance(), timer)
          .get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.response().getContainerResources().getCpusetCpus()).isEqualTo("0-3");
      assertThat(r.response().getContainerResources().getCpuShares()).isEqualTo(512);
      assertThat(r.response().getContainerAnnotationsMap()).containsEntry("k", "v");
      String caller = Thread.currentThread().getName();
      assertThat(where).hasSize(3);
      assertThat(where.get(0)).isEqualTo("a@" + caller);
      assertThat(where.get(1)).startsWith("b@cri4j-hook-");
      // the inline hook after a blocking one runs where the blocking one finished
      assertThat(where.get(2)).isEqualTo("c@" + where.get(1).substring(2));
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void asyncDispatchTimesOutAHungHookUnderItsPolicyAndInterruptsIt() throws Exception {
    List<String> where = new CopyOnWriteArrayList<>();
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch interrupted = new CountDownLatch(1);
    var timer = timer();
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new ThreadHook("hung", 0, FailurePolicy.IGNORE, false, res("9", 0), where, never,
            interrupted),
        new ThreadHook("next", 1, FailurePolicy.FAIL, false, res("", 64), where, null, null)))
        .build()) {
      ContainerHookResult r = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req,
          timer).get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.response().getContainerResources().getCpusetCpus())
          .as("the hung hook's answer is left out").isEmpty();
      assertThat(r.response().getContainerResources().getCpuShares())
          .as("the next hook still ran").isEqualTo(64);
      assertThat(interrupted.await(5, java.util.concurrent.TimeUnit.SECONDS))
          .as("the hung hook was interrupted").isTrue();
    }
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new ThreadHook("hung", 0, FailurePolicy.FAIL, false, res("9", 0), where, never,
            new CountDownLatch(1)))).build()) {
      var f = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer);
      assertThatThrownBy(() -> f.get(5, java.util.concurrent.TimeUnit.SECONDS))
          .hasCauseInstanceOf(StatusException.class)
          .cause().satisfies(e -> {
            Status st = ((StatusException) e).getStatus();
            assertThat(st.getCode()).isEqualTo(Status.Code.INTERNAL);
            assertThat(st.getDescription())
                .isEqualTo("hook hung failed at PreCreateContainer: timed out after 150 ms");
          });
    } finally {
      never.countDown();
      timer.shutdownNow();
    }
  }

  @Test
  void asyncDispatchReportsFailuresConflictsAndNeverFailsAPostPoint() throws Exception {
    List<String> where = new CopyOnWriteArrayList<>();
    var timer = timer();
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new ThreadHook("broken", 0, FailurePolicy.FAIL, false, null, where, null, null)))
        .build()) {
      var f = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer);
      assertThatThrownBy(() -> f.get(5, java.util.concurrent.TimeUnit.SECONDS))
          .cause().hasMessageContaining("hook broken failed at PreCreateContainer")
          .hasMessageContaining("broken broken");
      // the same hook at a post point: logged only
      assertThat(d.dispatchContainerAsync(HookPoint.POST_CREATE_CONTAINER, req, timer)
          .get(5, java.util.concurrent.TimeUnit.SECONDS).response())
          .isEqualTo(ContainerResourceHookResponse.getDefaultInstance());
    }
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new ThreadHook("x", 0, FailurePolicy.IGNORE, false, res("0", 0), where, null, null),
        new ThreadHook("y", 1, FailurePolicy.FAIL, false, res("1", 0), where, null, null)))
        .build()) {
      var f = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer);
      assertThatThrownBy(() -> f.get(5, java.util.concurrent.TimeUnit.SECONDS))
          .cause().isInstanceOfSatisfying(StatusException.class, e ->
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION));
    } finally {
      timer.shutdownNow();
    }
  }

  /** An asynchronous hook: records the thread that starts it; its stage is {@code answer}. */
  record StageHook(String name, FailurePolicy failurePolicy,
      java.util.concurrent.CompletableFuture<ContainerHookResult> answer, List<String> where)
      implements AsyncRuntimeHook {
    @Override public Set<HookPoint> points() { return Set.of(HookPoint.PRE_CREATE_CONTAINER); }

    @Override public Duration timeout() { return Duration.ofMillis(150); }

    @Override
    public java.util.concurrent.CompletionStage<PodSandboxHookResponse> onPodSandboxAsync(
        HookPoint p, io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest r) {
      throw new UnsupportedOperationException();
    }

    @Override
    public java.util.concurrent.CompletionStage<ContainerHookResult> onContainerAsync(
        HookPoint p, ContainerResourceHookRequest r) {
      where.add(name + "@" + Thread.currentThread().getName());
      return answer;
    }
  }

  @Test
  void anAsyncHookNeedsNoHookThreadAndTheDispatchGoesOnWhereItsAnswerCompletes()
      throws Exception {
    List<String> where = new CopyOnWriteArrayList<>();
    var timer = timer();
    var answer = new java.util.concurrent.CompletableFuture<ContainerHookResult>();
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new StageHook("remote", FailurePolicy.FAIL, answer, where),
        new ThreadHook("after", 1, FailurePolicy.FAIL, true, res("", 64), where, null, null)))
        .build()) {
      var f = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer);
      assertThat(where).containsExactly("remote@" + Thread.currentThread().getName());
      assertThat(f).isNotDone();
      Thread completer = new Thread(() -> answer.complete(ContainerHookResult.of(
          res("0-1", 0))), "answer-thread");
      completer.start();
      ContainerHookResult r = f.get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.response().getContainerResources().getCpusetCpus()).isEqualTo("0-1");
      assertThat(r.response().getContainerResources().getCpuShares()).isEqualTo(64);
      assertThat(where).as("the next hook runs on the thread that answered")
          .containsExactly("remote@" + Thread.currentThread().getName(), "after@answer-thread");
      // the synchronous dispatch waits for the same kind of hook
      var ready = java.util.concurrent.CompletableFuture.completedFuture(
          ContainerHookResult.of(res("2", 0)));
      try (HookDispatcher s = HookDispatcher.builder()
          .hooks(List.of(new StageHook("sync", FailurePolicy.FAIL, ready, where))).build()) {
        assertThat(s.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req).response()
            .getContainerResources().getCpusetCpus()).isEqualTo("2");
      }
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void anAsyncHookPastItsTimeoutIsCancelledAndItsPolicyApplies() throws Exception {
    List<String> where = new CopyOnWriteArrayList<>();
    var timer = timer();
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    var never = new java.util.concurrent.CompletableFuture<ContainerHookResult>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new StageHook("slow", FailurePolicy.IGNORE, never, where),
        new ThreadHook("next", 1, FailurePolicy.FAIL, true, res("", 64), where, null, null)))
        .build()) {
      ContainerHookResult r = d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req,
          timer).get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.response().getContainerResources().getCpuShares())
          .as("the next hook still ran").isEqualTo(64);
      assertThat(never).as("the overrun stage is cancelled").isCancelled();
    }
    var failing = java.util.concurrent.CompletableFuture.<ContainerHookResult>failedFuture(
        new IllegalStateException("koordlet said no"));
    var stuck = new java.util.concurrent.CompletableFuture<ContainerHookResult>();
    try (HookDispatcher d = HookDispatcher.builder().hooks(List.of(
        new StageHook("failing", FailurePolicy.FAIL, failing, where))).build();
        HookDispatcher e = HookDispatcher.builder().hooks(List.of(
        new StageHook("stuck", FailurePolicy.FAIL, stuck, where))).build()) {
      assertThatThrownBy(() -> d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req,
          timer).get(5, java.util.concurrent.TimeUnit.SECONDS)).cause()
          .hasMessage("INTERNAL: hook failing failed at PreCreateContainer: "
              + "java.lang.IllegalStateException: koordlet said no");
      assertThatThrownBy(() -> e.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req,
          timer).get(5, java.util.concurrent.TimeUnit.SECONDS)).cause()
          .hasMessage("INTERNAL: hook stuck failed at PreCreateContainer: timed out after 150 ms");
    } finally {
      timer.shutdownNow();
    }
  }

  /** A hook that answers at once but claims a timeout far beyond any bound. */
  record Boundless(String name, boolean callInline, Duration timeout) implements RuntimeHook {
    @Override public Set<HookPoint> points() { return Set.of(HookPoint.PRE_CREATE_CONTAINER); }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r) {
      return ContainerHookResult.of(res("", 7));
    }
  }

  @Test
  void aHookTimeoutBeyondTheBoundIsHeldToAnHourNotAnOverflow() throws Exception {
    ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
    var timer = timer();
    for (boolean inline : new boolean[] {false, true}) {
      for (Duration t : new Duration[] {Duration.ofSeconds(Long.MAX_VALUE),
          Duration.ofSeconds(9_223_372_036L), Duration.ofDays(400)}) {
        try (HookDispatcher d = HookDispatcher.builder()
            .hooks(List.of(new Boundless("far", inline, t))).build()) {
          assertThat(d.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req).response()
              .getContainerResources().getCpuShares()).as("blocking, inline=" + inline + ", " + t)
              .isEqualTo(7);
          assertThat(d.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer)
              .get(5, java.util.concurrent.TimeUnit.SECONDS).response().getContainerResources()
              .getCpuShares()).as("async, inline=" + inline + ", " + t).isEqualTo(7);
        }
      }
    }
    timer.shutdownNow();
  }
}
