package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reloads of the hook config directory while calls are in flight, with hook servers on real unix
 * sockets: a call finishes with the hooks (and channels) it started with.
 */
class HookConfigReloadIT {
  @TempDir Path dir;
  private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
      new LinkedBlockingQueue<>();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
  private final CountDownLatch entered = new CountDownLatch(2);
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void stopTimer() {
    release.countDown();
    timer.shutdownNow();
  }

  /** Answers at PreCreateContainer; "slow" first waits for the test (each call). */
  private RuntimeHook served(String name, ContainerResourceHookResponse answer, boolean slow) {
    return new RuntimeHook() {
      @Override public String name() { return name; }

      @Override public Set<HookPoint> points() { return Set.of(HookPoint.PRE_CREATE_CONTAINER); }

      @Override public java.time.Duration timeout() { return java.time.Duration.ofSeconds(30); }

      @Override
      public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
          throws Exception {
        if (slow) {
          entered.countDown();
          assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
        }
        return ContainerHookResult.of(answer);
      }
    };
  }

  private static String config(Path socket, String policy, int index, String timeout) {
    return "{\"remote-endpoint\": \"" + socket + "\", \"failure-policy\": \"" + policy
        + "\", \"runtime-hooks\": [\"PreCreateContainer\"], \"index\": " + index
        + ", \"timeout\": \"" + timeout + "\"}";
  }

  private void await(Predicate<HookConfigDirectory.Snapshot> p) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      HookConfigDirectory.Snapshot s = snapshots.poll(100, TimeUnit.MILLISECONDS);
      if (s != null && p.test(s)) {
        return;
      }
    }
    throw new AssertionError("no snapshot matched within 10 s");
  }

  @Test
  void callsInFlightFinishOnTheChannelsTheyStartedWithAndOldChannelsCloseWhenIdle()
      throws Exception {
    Path a = dir.resolve("a.sock");
    Path b = dir.resolve("b.sock");
    Path conf = dir.resolve("conf");
    Files.createDirectories(conf);
    ContainerResourceHookResponse cpus = ContainerResourceHookResponse.newBuilder()
        .setContainerResources(LinuxContainerResources.newBuilder().setCpusetCpus("1")).build();
    ContainerResourceHookResponse shares = ContainerResourceHookResponse.newBuilder()
        .setContainerResources(LinuxContainerResources.newBuilder().setCpuShares(64)).build();
    try (HookServer sa = HookServer.start(a, List.of(served("slow", cpus, true)));
         HookServer sb = HookServer.start(b, List.of(served("quick", shares, false)))) {
      Files.writeString(conf.resolve("fa.json"), config(a, "Fail", 0, "20s"),
          StandardCharsets.UTF_8);
      Files.writeString(conf.resolve("fb.json"), config(b, "Ignore", 1, "20s"),
          StandardCharsets.UTF_8);
      try (HookConfigDirectory d = HookConfigDirectory.watch(conf);
           HookDispatcher dispatcher = HookDispatcher.builder().hooks(d).build()) {
        d.addListener(snapshots::add);
        List<RemoteRuntimeHook> before = d.get();
        ContainerResourceHookRequest req = ContainerResourceHookRequest.getDefaultInstance();
        CompletableFuture<ContainerHookResult> async =
            dispatcher.dispatchContainerAsync(HookPoint.PRE_CREATE_CONTAINER, req, timer);
        CompletableFuture<ContainerHookResult> blocking = CompletableFuture.supplyAsync(() -> {
          try {
            return dispatcher.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER, req);
          } catch (io.grpc.StatusException e) {
            throw new java.util.concurrent.CompletionException(e);
          }
        });
        assertThat(entered.await(20, TimeUnit.SECONDS)).as("both calls reached hook fa").isTrue();
        // both files change while the calls wait in fa (fb still to come)
        Files.writeString(conf.resolve("fa.json"), config(a, "Fail", 0, "21s"),
            StandardCharsets.UTF_8);
        Files.writeString(conf.resolve("fb.json"), config(b, "Ignore", 1, "21s"),
            StandardCharsets.UTF_8);
        await(s -> s.errors().isEmpty()
            && s.configs().get("fa").timeout().equals(java.time.Duration.ofSeconds(21))
            && s.configs().get("fb").timeout().equals(java.time.Duration.ofSeconds(21)));
        assertThat(d.get()).doesNotContainAnyElementsOf(before);
        assertThat(before).as("old channels stay open while calls use them")
            .noneMatch(RemoteRuntimeHook::isShutdown);
        release.countDown();
        for (CompletableFuture<ContainerHookResult> f : List.of(async, blocking)) {
          LinuxContainerResources r = f.get(20, TimeUnit.SECONDS).response()
              .getContainerResources();
          assertThat(r.getCpusetCpus()).as("fa's answer, from the channel the call started on")
              .isEqualTo("1");
          assertThat(r.getCpuShares()).as("fb (Ignore) called, not skipped").isEqualTo(64);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!before.stream().allMatch(RemoteRuntimeHook::isShutdown)
            && System.nanoTime() < deadline) {
          Thread.onSpinWait();
        }
        assertThat(before).as("old channels closed once idle")
            .allMatch(RemoteRuntimeHook::isShutdown);
        assertThat(d.get()).noneMatch(RemoteRuntimeHook::isShutdown);
        LinuxContainerResources r = dispatcher.dispatchContainer(HookPoint.PRE_CREATE_CONTAINER,
            req).response().getContainerResources();
        assertThat(r.getCpusetCpus()).isEqualTo("1");
        assertThat(r.getCpuShares()).isEqualTo(64);
      }
    }
  }

  @Test
  void aBadFileIsWarnedOncePerVersionNotPerRescan() throws Exception {
    Files.writeString(dir.resolve("bad.json"), "{\"remote-endpoint\": ", StandardCharsets.UTF_8);
    try (HookConfigDirectory d = HookConfigDirectory.watch(dir)) {
      d.addListener(snapshots::add);
      assertThat(d.warnings("bad")).isEqualTo(1);
      for (int i = 0; i < 20; i++) {
        Files.writeString(dir.resolve("other.json"), config(dir.resolve("o.sock"), "Ignore", i,
            "2s"), StandardCharsets.UTF_8);
        int index = i;
        await(s -> s.configs().containsKey("other") && s.configs().get("other").index() == index);
      }
      assertThat(d.warnings("bad")).as("one warning for one bad version").isEqualTo(1);
      Files.writeString(dir.resolve("bad.json"), "[]", StandardCharsets.UTF_8);
      await(s -> s.errors().getOrDefault("bad", "").contains("not a JSON object"));
      assertThat(d.warnings("bad")).as("a new bad version is warned").isEqualTo(2);
    }
  }
}
