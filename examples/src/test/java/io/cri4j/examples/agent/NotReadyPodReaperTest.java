package io.cri4j.examples.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc.RuntimeServiceBlockingStub;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.testing.fake.FakeCriExtension;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A user's unit test: the agent against the fake CRI runtime on a real unix socket, in a few lines. */
class NotReadyPodReaperTest {

    @RegisterExtension static FakeCriExtension cri = FakeCriExtension.unixSocket();

    @Test
    void removesOnlyStoppedPodsOlderThanTheGracePeriod(RuntimeServiceBlockingStub runtime) {
        String stopped = run(runtime, "old");
        runtime.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(stopped).build());
        String running = run(runtime, "busy");
        cri.calls().clear();

        Clock inAnHour = Clock.fixed(Instant.now().plus(Duration.ofHours(1)), ZoneOffset.UTC);
        assertThat(new NotReadyPodReaper(runtime, Duration.ofMinutes(10), inAnHour).reapOnce())
                .containsExactly(stopped);

        cri.calls().assertExactly("ListPodSandbox", "RemovePodSandbox");
        assertThat(
                        runtime.listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                                .getItemsList())
                .extracting(p -> p.getId())
                .containsExactly(running);
    }

    @Test
    void keepsStoppedPodsWithinTheGracePeriod(RuntimeServiceBlockingStub runtime) {
        String stopped = run(runtime, "fresh");
        runtime.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(stopped).build());
        assertThat(
                        new NotReadyPodReaper(runtime, Duration.ofMinutes(10), Clock.systemUTC())
                                .reapOnce())
                .isEmpty();
        cri.calls().assertNotCalled("RemovePodSandbox");
    }

    private static String run(RuntimeServiceBlockingStub runtime, String name) {
        return runtime.runPodSandbox(
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(
                                        PodSandboxConfig.newBuilder()
                                                .setMetadata(
                                                        PodSandboxMetadata.newBuilder()
                                                                .setName(name)
                                                                .setNamespace("default")
                                                                .setUid(name)))
                                .build())
                .getPodSandboxId();
    }
}
