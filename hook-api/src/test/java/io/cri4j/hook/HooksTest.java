package io.cri4j.hook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class HooksTest {

    static final class EnvHook implements Hook {
        @Override
        public HookResult createContainer(PodSandbox pod, Container container) {
            return HookResult.adjust(
                    ContainerAdjustment.newBuilder()
                            .addEnv(
                                    KeyValue.newBuilder()
                                            .setKey("TEAM")
                                            .setValue(pod.getLabelsOrDefault("team", "none")))
                            .build());
        }

        @Override
        public void stopPodSandbox(PodSandbox pod) {}
    }

    static final class AsyncObserver implements AsyncHook {
        @Override
        public CompletionStage<Void> postStartContainer(PodSandbox pod, Container container) {
            return CompletableFuture.completedFuture(null);
        }
    }

    @Test
    void subscriptionFollowsTheOverriddenEventMethods() {
        assertThat(new EnvHook().events())
                .containsExactlyInAnyOrder(HookEvent.CREATE_CONTAINER, HookEvent.STOP_POD_SANDBOX);
        assertThat(new AsyncObserver().events()).containsExactly(HookEvent.POST_START_CONTAINER);
        assertThat(new Hook() {}.events()).isEmpty();
        assertThat(HookEvent.nriMask(new EnvHook().events())).isEqualTo((1 << 3) | (1 << 1));
    }

    @Test
    void blockingHookRunsOnTheWorkerAndAnswersThroughTheStage() throws Exception {
        ExecutorService worker = Executors.newSingleThreadExecutor(r -> new Thread(r, "worker-1"));
        try {
            AsyncHook hook = Hooks.async(new EnvHook(), worker);
            assertThat(hook.name()).isEqualTo("EnvHook");
            assertThat(hook.events()).contains(HookEvent.CREATE_CONTAINER);
            HookResult r =
                    hook.createContainer(
                                    PodSandbox.newBuilder().putLabels("team", "a").build(),
                                    Container.getDefaultInstance())
                            .toCompletableFuture()
                            .get(5, TimeUnit.SECONDS);
            assertThat(r.adjustment().getEnv(0).getValue()).isEqualTo("a");
        } finally {
            worker.shutdownNow();
        }
    }

    @Test
    void cancellingTheStageInterruptsTheBlockedWorker() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        Hook slow =
                new Hook() {
                    @Override
                    public void runPodSandbox(PodSandbox pod) throws Exception {
                        started.countDown();
                        try {
                            new CountDownLatch(1).await();
                        } catch (InterruptedException e) {
                            interrupted.countDown();
                            throw e;
                        }
                    }
                };
        ExecutorService worker = Executors.newSingleThreadExecutor();
        try {
            CompletableFuture<Void> f =
                    Hooks.async(slow, worker)
                            .runPodSandbox(PodSandbox.getDefaultInstance())
                            .toCompletableFuture();
            assertThat(started.await(5, TimeUnit.SECONDS)).isTrue();
            f.cancel(true);
            assertThat(interrupted.await(5, TimeUnit.SECONDS)).isTrue();
        } finally {
            worker.shutdownNow();
        }
    }

    @Test
    void aThrowingHookFailsItsStageWithItsException() {
        Hook failing =
                new Hook() {
                    @Override
                    public void startContainer(PodSandbox pod, Container c) throws Exception {
                        throw new IllegalStateException("no cpus left");
                    }
                };
        ExecutorService worker = Executors.newSingleThreadExecutor();
        try {
            CompletableFuture<Void> f =
                    Hooks.async(failing, worker)
                            .startContainer(
                                    PodSandbox.getDefaultInstance(), Container.getDefaultInstance())
                            .toCompletableFuture();
            assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(IllegalStateException.class)
                    .hasRootCauseMessage("no cpus left");
        } finally {
            worker.shutdownNow();
        }
    }

    @Test
    void policyValuesAreRangeChecked() {
        assertThatThrownBy(() -> HookPolicy.DEFAULT.withIndex(100)).hasMessageContaining("0..99");
        assertThatThrownBy(() -> HookPolicy.DEFAULT.withTimeout(Duration.ofDays(1)))
                .hasMessageContaining("<= 1h");
        assertThatThrownBy(() -> HookPolicy.DEFAULT.withTimeout(Duration.ZERO))
                .hasMessageContaining("> 0");
    }
}
