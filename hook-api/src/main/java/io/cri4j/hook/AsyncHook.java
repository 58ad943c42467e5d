package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.ValidateContainerAdjustmentRequest;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A lifecycle hook that never blocks: the same events as {@link Hook}, each answered with a
 * stage. This is the form every host runs: a host may call these methods on its I/O thread, so
 * an implementation starts its work and returns at once (for example with an asynchronous client
 * call); a {@link Hook} is adapted to this form by running it on a worker ({@link Hooks#async}).
 * The host bounds each stage with {@link HookPolicy#timeout()} and cancels it when it is late.
 *
 * <p>A failed stage fails the event under {@link HookPolicy#failurePolicy()}. Found with {@link
 * java.util.ServiceLoader} through {@code META-INF/services/io.cri4j.hook.AsyncHook}.
 */
public interface AsyncHook {

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

    /** The events this hook is called for; defaults to the event methods this class overrides. */
    default Set<HookEvent> events() {
        return Hooks.overriddenEvents(this);
    }

    /** See {@link Hook#configure}. */
    default CompletionStage<Void> configure(HookConfiguration configuration) {
        return done();
    }

    /** See {@link Hook#synchronize}. */
    default CompletionStage<List<ContainerUpdate>> synchronize(
            List<PodSandbox> pods, List<Container> containers) {
        return CompletableFuture.completedFuture(List.of());
    }

    /** See {@link Hook#shutdown}; must not block. */
    default void shutdown() {}

    /** See {@link Hook#adjustPodSandbox}. */
    default CompletionStage<PodSandboxAdjustment> adjustPodSandbox(PodSandbox pod) {
        return CompletableFuture.completedFuture(PodSandboxAdjustment.NONE);
    }

    /** See {@link Hook#runPodSandbox}. */
    default CompletionStage<Void> runPodSandbox(PodSandbox pod) {
        return done();
    }

    /** See {@link Hook#updatePodSandbox}. */
    default CompletionStage<Void> updatePodSandbox(
            PodSandbox pod, LinuxResources overhead, LinuxResources resources) {
        return done();
    }

    /** See {@link Hook#postUpdatePodSandbox}. */
    default CompletionStage<Void> postUpdatePodSandbox(PodSandbox pod) {
        return done();
    }

    /** See {@link Hook#stopPodSandbox}. */
    default CompletionStage<Void> stopPodSandbox(PodSandbox pod) {
        return done();
    }

    /** See {@link Hook#removePodSandbox}. */
    default CompletionStage<Void> removePodSandbox(PodSandbox pod) {
        return done();
    }

    /** See {@link Hook#createContainer}. */
    default CompletionStage<HookResult> createContainer(PodSandbox pod, Container container) {
        return CompletableFuture.completedFuture(HookResult.none());
    }

    /** See {@link Hook#postCreateContainer}. */
    default CompletionStage<Void> postCreateContainer(PodSandbox pod, Container container) {
        return done();
    }

    /** See {@link Hook#startContainer}. */
    default CompletionStage<Void> startContainer(PodSandbox pod, Container container) {
        return done();
    }

    /** See {@link Hook#postStartContainer}. */
    default CompletionStage<Void> postStartContainer(PodSandbox pod, Container container) {
        return done();
    }

    /** See {@link Hook#updateContainer}. */
    default CompletionStage<HookResult> updateContainer(
            PodSandbox pod, Container container, LinuxResources resources) {
        return CompletableFuture.completedFuture(HookResult.none());
    }

    /** See {@link Hook#postUpdateContainer}. */
    default CompletionStage<Void> postUpdateContainer(PodSandbox pod, Container container) {
        return done();
    }

    /** See {@link Hook#stopContainer}. */
    default CompletionStage<HookResult> stopContainer(PodSandbox pod, Container container) {
        return CompletableFuture.completedFuture(HookResult.none());
    }

    /** See {@link Hook#removeContainer}. */
    default CompletionStage<Void> removeContainer(PodSandbox pod, Container container) {
        return done();
    }

    /** See {@link Hook#validateContainerAdjustment}. */
    default CompletionStage<Void> validateContainerAdjustment(
            ValidateContainerAdjustmentRequest request) {
        return done();
    }

    private static CompletionStage<Void> done() {
        return CompletableFuture.completedFuture(null);
    }
}
