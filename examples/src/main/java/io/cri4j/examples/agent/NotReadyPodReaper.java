package io.cri4j.examples.agent;

import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxFilter;
import io.cri4j.cri.v1.PodSandboxState;
import io.cri4j.cri.v1.PodSandboxStateValue;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc.RuntimeServiceBlockingStub;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A small example of a user's node agent logic: removes pod sandboxes that have been NOTREADY
 * (stopped) for longer than a grace period, and reports which it removed. Its unit test
 * ({@code NotReadyPodReaperTest}) runs it against the fake CRI runtime.
 */
public final class NotReadyPodReaper {

    private final RuntimeServiceBlockingStub runtime;
    private final Duration grace;
    private final Clock clock;

    /**
     * @param runtime CRI runtime service
     * @param grace how long a pod may stay NOTREADY
     * @param clock time source
     */
    public NotReadyPodReaper(RuntimeServiceBlockingStub runtime, Duration grace, Clock clock) {
        this.runtime = Objects.requireNonNull(runtime, "runtime");
        this.grace = Objects.requireNonNull(grace, "grace");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** @return ids of the pods removed in this pass */
    public List<String> reapOnce() {
        Instant cutoff = clock.instant().minus(grace);
        List<String> removed = new ArrayList<>();
        var request =
                ListPodSandboxRequest.newBuilder()
                        .setFilter(
                                PodSandboxFilter.newBuilder()
                                        .setState(
                                                PodSandboxStateValue.newBuilder()
                                                        .setState(
                                                                PodSandboxState.SANDBOX_NOTREADY)))
                        .build();
        for (PodSandbox pod : runtime.listPodSandbox(request).getItemsList()) {
            Instant created = Instant.ofEpochSecond(0, pod.getCreatedAt());
            if (created.isBefore(cutoff)) {
                runtime.removePodSandbox(
                        RemovePodSandboxRequest.newBuilder().setPodSandboxId(pod.getId()).build());
                removed.add(pod.getId());
            }
        }
        return removed;
    }
}
