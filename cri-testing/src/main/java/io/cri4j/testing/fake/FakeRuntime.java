package io.cri4j.testing.fake;

import io.cri4j.testing.fake.internal.FakeContent;
import io.cri4j.testing.fake.internal.FakeState;
import java.util.List;

/**
 * Direct access to the fake's in-memory state, for arranging a test and simulating what a real runtime does on
 * its own (a container's process exiting). Everything else is observed through the CRI calls themselves.
 * Changes made here send the same container events as the equivalent CRI calls, but do not call the fake's
 * hooks ({@link FakeCriServer.Builder#addHook}).
 */
public final class FakeRuntime {

    private final FakeState state;
    private final FakeContent content;

    FakeRuntime(FakeState state, FakeContent content) {
        this.state = state;
        this.content = content;
    }

    /**
     * Adds an image as if it had been pulled, with a size chosen from its digest.
     *
     * @param reference e.g. {@code busybox:1.36} (normalised like containerd: {@code docker.io/library/busybox:1.36})
     * @return the digest-pinned reference, {@code repository@sha256:...}
     * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT when the reference is not valid
     */
    public String addImage(String reference) {
        return state.pullImage(reference);
    }

    /**
     * Adds an image with the given size in bytes.
     *
     * @return the digest-pinned reference
     */
    public String addImage(String reference, long sizeBytes) {
        if (sizeBytes <= 0) {
            throw new IllegalArgumentException("image size must be positive, was " + sizeBytes);
        }
        return state.addImage(reference, sizeBytes);
    }

    /** Marks an image pinned (kubelet's image GC leaves pinned images alone) or unpinned. */
    public void pinImage(String reference, boolean pinned) {
        state.pinImage(reference, pinned);
    }

    /**
     * Makes a running container exit as if its process ended with this code: state EXITED, finished timestamp,
     * reason {@code Completed} (code 0) or {@code Error}, and a CONTAINER_STOPPED event.
     *
     * @throws io.grpc.StatusRuntimeException NOT_FOUND for an unknown id, FAILED_PRECONDITION when not running
     */
    public void exitContainer(String containerId, int exitCode) {
        state.exitContainer(containerId, exitCode);
    }

    /**
     * Arranges a ready pod sandbox without a CRI call (so it is not in the {@link CallLog}), sending the same
     * events as {@code RunPodSandbox}.
     *
     * @return the sandbox id
     * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT without metadata, ALREADY_EXISTS for a used name
     */
    public String runPodSandbox(io.cri4j.cri.v1.PodSandboxConfig config) {
        return state.runPodSandbox(config, "");
    }

    /**
     * Arranges a running container without CRI calls: adds its image when missing, creates and starts it, with
     * the same events as the CRI calls.
     *
     * @return the container id
     * @throws io.grpc.StatusRuntimeException as {@code CreateContainer} and {@code StartContainer} would
     */
    public String runContainer(String podSandboxId, io.cri4j.cri.v1.ContainerConfig config) {
        if (state.resolveImage(config.getImage().getImage()).isEmpty()) {
            state.pullImage(config.getImage().getImage());
        }
        String id =
                state.createContainer(
                        podSandboxId,
                        config,
                        io.cri4j.cri.v1.PodSandboxConfig.getDefaultInstance());
        state.startContainer(id);
        return id;
    }

    /**
     * The config the fake keeps for a container: the {@code CreateContainer} config with its hooks' adjustments
     * applied (env, mounts, devices, resources, ...), where the recorded call shows the request as sent.
     *
     * @throws io.grpc.StatusRuntimeException NOT_FOUND for an unknown id
     */
    public io.cri4j.cri.v1.ContainerConfig containerConfig(String containerId) {
        return state.container(containerId).config();
    }

    /**
     * The config the fake keeps for a pod sandbox, with its hooks' {@code AdjustPodSandbox} changes applied.
     *
     * @throws io.grpc.StatusRuntimeException NOT_FOUND for an unknown id
     */
    public io.cri4j.cri.v1.PodSandboxConfig sandboxConfig(String podSandboxId) {
        return state.sandbox(podSandboxId).config();
    }

    /** The ids of all pod sandboxes, oldest first. */
    public List<String> sandboxIds() {
        return state.sandboxes().stream().map(FakeState.SandboxRecord::id).toList();
    }

    /** The ids of all containers, oldest first. */
    public List<String> containerIds() {
        return state.containers().stream().map(FakeState.ContainerRecord::id).toList();
    }

    /** The pod CIDR last set by {@code UpdateRuntimeConfig}, empty when never set. */
    public String podCidr() {
        return state.podCidr();
    }

    /**
     * Waits until {@code subscribers} {@code GetContainerEvents} streams are open, e.g. until the agent under
     * test has subscribed, so no event is sent before anyone listens.
     *
     * @throws AssertionError when they are not open within the timeout
     */
    public void awaitEventSubscribers(int subscribers, java.time.Duration timeout)
            throws InterruptedException {
        if (!state.awaitSubscribers(subscribers, timeout)) {
            throw new AssertionError(
                    "expected " + subscribers + " GetContainerEvents stream(s) within " + timeout);
        }
    }

    /** Forgets every sandbox, container and image. */
    public void reset() {
        state.reset();
        content.clear();
    }
}
