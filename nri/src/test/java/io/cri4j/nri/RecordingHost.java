package io.cri4j.nri;

import io.cri4j.hook.RuntimeHandle;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.RuntimeSnapshot;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;

/** A {@link HookHost} for tests: a settable snapshot, and a runtime that records what it is asked. */
final class RecordingHost implements HookHost {

    /** One {@code updateContainers} call. */
    record Request(List<ContainerUpdate> updates, List<ContainerEviction> evictions) {}

    final BlockingQueue<Request> requests = new LinkedBlockingQueue<>();
    volatile RuntimeSnapshot snapshot = RuntimeSnapshot.empty();

    /** Container ids whose updates the runtime reports as failed. */
    volatile List<String> failing = List.of();

    /** When set, the runtime cannot be asked at all. */
    volatile RuntimeException broken;

    @Override
    public String runtimeName() {
        return "cri4j-test";
    }

    @Override
    public String runtimeVersion() {
        return "1.2.3";
    }

    @Override
    public CompletionStage<RuntimeSnapshot> snapshot() {
        return CompletableFuture.completedFuture(snapshot);
    }

    @Override
    public RuntimeHandle runtime() {
        return (updates, evictions) -> {
            requests.add(new Request(List.copyOf(updates), List.copyOf(evictions)));
            if (broken != null) {
                return CompletableFuture.failedFuture(broken);
            }
            return CompletableFuture.completedFuture(
                    updates.stream().filter(u -> failing.contains(u.getContainerId())).toList());
        };
    }
}
