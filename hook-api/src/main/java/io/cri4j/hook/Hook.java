package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.util.List;
import java.util.Set;

/**
 * A pod and container lifecycle hook in NRI's model, in its blocking form: implement the events
 * you want; the host subscribes the hook to exactly those ({@link #events()}). The same class runs
 * as an NRI plugin (containerd 2.x, CRI-O), inside the cri4j CRI proxy, behind Koordinator's
 * protocol and on the fake runtime.
 *
 * <p>Methods may block: a host calls them on a worker thread, never on an I/O thread, and bounds
 * each call with {@link HookPolicy#timeout()}. A hook that never blocks implements {@link
 * AsyncHook} instead. Throwing fails the event under {@link HookPolicy#failurePolicy()}.
 *
 * <p>In-process hooks are found with {@link java.util.ServiceLoader}: list the class in {@code
 * META-INF/services/io.cri4j.hook.Hook}; it needs a public no-argument constructor.
 *
 * <p>The pod and container arguments are NRI's messages ({@code io.cri4j.hook.nri.v1alpha1}), immutable;
 * answers are {@link HookResult}s and {@link PodSandboxAdjustment}s.
 */
public interface Hook {

    /**
     * A name for logs and error messages, unique among the hooks of one host. Defaults to the
     * class's simple name ({@link Hooks#defaultName}).
     */
    default String name() {
        return Hooks.defaultName(this);
    }

    /** Index, timeout and failure policy; read once, when the host first sees the hook. */
    default HookPolicy policy() {
        return HookPolicy.DEFAULT;
    }

    /**
     * The events this hook is called for. Defaults to the event methods this class overrides;
     * read once, when the host first sees the hook.
     */
    default Set<HookEvent> events() {
        return Hooks.overriddenEvents(this);
    }

    /** Called once when the hook is registered with a host, before any event. */
    default void configure(HookConfiguration configuration) throws Exception {}

    /**
     * Called after {@link #configure} with every pod and container the host knows, so that the
     * hook can catch up; may answer with updates of those containers.
     */
    default List<ContainerUpdate> synchronize(List<PodSandbox> pods, List<Container> containers)
            throws Exception {
        return List.of();
    }

    /** Called when the host shuts down or unregisters the hook. */
    default void shutdown() {}

    /** cri4j only: may change a pod before it is created (not served under NRI). */
    default PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) throws Exception {
        return PodSandboxAdjustment.NONE;
    }

    /** A pod sandbox is being created; throwing fails its creation under the failure policy. */
    default void runPodSandbox(PodSandbox pod) throws Exception {}

    /** A pod sandbox's resources are being updated. */
    default void updatePodSandbox(PodSandbox pod, LinuxResources overhead, LinuxResources resources)
            throws Exception {}

    /** A pod sandbox's resources were updated. */
    default void postUpdatePodSandbox(PodSandbox pod) throws Exception {}

    /** A pod sandbox is being stopped. */
    default void stopPodSandbox(PodSandbox pod) throws Exception {}

    /** A pod sandbox is being removed. */
    default void removePodSandbox(PodSandbox pod) throws Exception {}

    /**
     * A container is being created: may adjust it ({@link HookResult#adjust}), update other
     * containers and evict containers.
     */
    default HookResult createContainer(PodSandbox pod, Container container) throws Exception {
        return HookResult.none();
    }

    /** A container was created. */
    default void postCreateContainer(PodSandbox pod, Container container) throws Exception {}

    /** A container is being started. */
    default void startContainer(PodSandbox pod, Container container) throws Exception {}

    /** A container was started. */
    default void postStartContainer(PodSandbox pod, Container container) throws Exception {}

    /**
     * A container's resources are being updated to {@code resources}: may answer with updates (one
     * for this container replaces the requested update) and evictions.
     */
    default HookResult updateContainer(
            PodSandbox pod, Container container, LinuxResources resources) throws Exception {
        return HookResult.none();
    }

    /** A container's resources were updated. */
    default void postUpdateContainer(PodSandbox pod, Container container) throws Exception {}

    /** A container is being stopped: may answer with updates of other containers. */
    default HookResult stopContainer(PodSandbox pod, Container container) throws Exception {
        return HookResult.none();
    }

    /** A container is being removed. */
    default void removeContainer(PodSandbox pod, Container container) throws Exception {}

    /**
     * The merged adjustment of a container, before it is applied: throw to reject it (NRI's
     * validating plugins).
     */
    default void validateContainerAdjustment(ValidateContainerAdjustmentRequest request)
            throws Exception {}
}
