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
}
