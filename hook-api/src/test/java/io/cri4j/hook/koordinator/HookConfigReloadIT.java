package io.cri4j.hook.koordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reloads of the hook config directory while events are in flight, with hook servers on real
 * unix sockets and the directory's hooks in a {@link HookChain}: an event finishes with the hooks
 * (and channels) it started with.
 */
class HookConfigReloadIT {
    @TempDir Path dir;
    private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
            new LinkedBlockingQueue<>();
    private final CountDownLatch entered = new CountDownLatch(2);
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void releaseHooks() {
        release.countDown();
    }

    /** Answers at CreateContainer; "slow" first waits for the test (each call). */
    private Hook served(String name, ContainerAdjustment answer, boolean slow) {
        return new Hook() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public HookPolicy policy() {
                return HookPolicy.DEFAULT.withTimeout(Duration.ofSeconds(30));
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container c) throws Exception {
                if (slow) {
                    entered.countDown();
                    assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
                }
                return HookResult.adjust(answer);
            }
        };
    }

    private static LinuxResources resources(HookResult r) {
        return r.adjustment().getLinux().getResources();
    }

    private static String config(Path socket, String policy, int index, String timeout) {
        return "{\"remote-endpoint\": \""
                + socket
                + "\", \"failure-policy\": \""
                + policy
                + "\", \"runtime-hooks\": [\"PreCreateContainer\"], \"index\": "
                + index
                + ", \"timeout\": \""
                + timeout
                + "\"}";
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
    void eventsInFlightFinishOnTheChannelsTheyStartedWithAndOldChannelsCloseWhenIdle()
            throws Exception {
        Path a = dir.resolve("a.sock");
        Path b = dir.resolve("b.sock");
        Path conf = dir.resolve("conf");
        Files.createDirectories(conf);
        ContainerAdjustment cpus = Adjustments.create().setLinuxCpuSetCpus("1").build();
        ContainerAdjustment shares = Adjustments.create().setLinuxCpuShares(64).build();
        try (HookServer sa = HookServer.start(a, List.of(served("slow", cpus, true)));
                HookServer sb = HookServer.start(b, List.of(served("quick", shares, false)))) {
            Files.writeString(
                    conf.resolve("fa.json"), config(a, "Fail", 0, "20s"), StandardCharsets.UTF_8);
            Files.writeString(
                    conf.resolve("fb.json"), config(b, "Ignore", 1, "20s"), StandardCharsets.UTF_8);
            try (HookConfigDirectory d = HookConfigDirectory.watch(conf);
                    HookChain chain = HookChain.builder().source(d::hold, d::release).build()) {
                d.addListener(snapshots::add);
                List<RemoteRuntimeHook> before = d.get();
                PodSandbox pod = PodSandbox.newBuilder().setId("p").setName("web").build();
                Container ctr = Container.newBuilder().setId("c").setName("app").build();
                CompletableFuture<HookResult> first =
                        chain.createContainer(pod, ctr).toCompletableFuture();
                CompletableFuture<HookResult> second =
                        CompletableFuture.supplyAsync(
                                () -> chain.createContainer(pod, ctr).toCompletableFuture().join());
                assertThat(entered.await(20, TimeUnit.SECONDS))
                        .as("both calls reached hook fa")
                        .isTrue();
                // both files change while the calls wait in fa (fb still to come)
                Files.writeString(
                        conf.resolve("fa.json"),
                        config(a, "Fail", 0, "21s"),
                        StandardCharsets.UTF_8);
                Files.writeString(
                        conf.resolve("fb.json"),
                        config(b, "Ignore", 1, "21s"),
                        StandardCharsets.UTF_8);
                await(
                        s ->
                                s.errors().isEmpty()
                                        && s.configs()
                                                .get("fa")
                                                .timeout()
                                                .equals(java.time.Duration.ofSeconds(21))
                                        && s.configs()
                                                .get("fb")
                                                .timeout()
                                                .equals(java.time.Duration.ofSeconds(21)));
                assertThat(d.get()).doesNotContainAnyElementsOf(before);
                assertThat(before)
                        .as("old channels stay open while calls use them")
                        .noneMatch(RemoteRuntimeHook::isShutdown);
                release.countDown();
                for (CompletableFuture<HookResult> f : List.of(first, second)) {
                    LinuxResources r = resources(f.get(20, TimeUnit.SECONDS));
                    assertThat(r.getCpu().getCpus())
                            .as("fa's answer, from the channel the call started on")
                            .isEqualTo("1");
                    assertThat(r.getCpu().getShares().getValue())
                            .as("fb (Ignore) called, not skipped")
                            .isEqualTo(64);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!before.stream().allMatch(RemoteRuntimeHook::isShutdown)
                        && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertThat(before)
                        .as("old channels closed once idle")
                        .allMatch(RemoteRuntimeHook::isShutdown);
                assertThat(d.get()).noneMatch(RemoteRuntimeHook::isShutdown);
                LinuxResources r =
                        resources(
                                chain.createContainer(pod, ctr)
                                        .toCompletableFuture()
                                        .get(20, TimeUnit.SECONDS));
                assertThat(r.getCpu().getCpus()).isEqualTo("1");
                assertThat(r.getCpu().getShares().getValue()).isEqualTo(64);
            }
        }
    }

    @Test
    void aBadFileIsWarnedOncePerVersionNotPerRescan() throws Exception {
        Files.writeString(
                dir.resolve("bad.json"), "{\"remote-endpoint\": ", StandardCharsets.UTF_8);
        try (HookConfigDirectory d = HookConfigDirectory.watch(dir)) {
            d.addListener(snapshots::add);
            assertThat(d.warnings("bad")).isEqualTo(1);
            for (int i = 0; i < 20; i++) {
                Files.writeString(
                        dir.resolve("other.json"),
                        config(dir.resolve("o.sock"), "Ignore", i, "2s"),
                        StandardCharsets.UTF_8);
                int index = i;
                await(
                        s ->
                                s.configs().containsKey("other")
                                        && s.configs().get("other").index() == index);
            }
            assertThat(d.warnings("bad")).as("one warning for one bad version").isEqualTo(1);
            Files.writeString(dir.resolve("bad.json"), "[]", StandardCharsets.UTF_8);
            await(s -> s.errors().getOrDefault("bad", "").contains("not a JSON object"));
            assertThat(d.warnings("bad")).as("a new bad version is warned").isEqualTo(2);
        }
    }
}
