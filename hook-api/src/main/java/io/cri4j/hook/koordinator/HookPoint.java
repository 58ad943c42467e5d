package io.cri4j.hook.koordinator;

import io.cri4j.hook.HookEvent;
import java.util.Arrays;
import java.util.Optional;

/**
 * The hook points of Koordinator's protocol: the names a hook config file lists
 * ({@code runtime-hooks}) and the RPCs of a Koordinator hook server. The first seven are
 * Koordinator's ({@code runtime.v1alpha1.RuntimeHookService}); the others are served by cri4j's
 * own {@code cri4j.hook.v1alpha1.ExtendedRuntimeHookService}. In cri4j's hook model each point is
 * called at one {@link HookEvent} ({@link #event()}): a remote hook server configured for a point
 * is called when a host runs that event, and {@link HookServer} runs that event of its hooks when
 * Koordinator's proxy calls the point.
 */
public enum HookPoint {
    /** Before a pod is created: may change its labels, annotations, cgroup parent, resources. */
    PRE_RUN_POD_SANDBOX("PreRunPodSandbox", HookEvent.ADJUST_POD_SANDBOX, true, Kind.POD, true),
    /** A pod was stopped. */
    POST_STOP_POD_SANDBOX("PostStopPodSandbox", HookEvent.STOP_POD_SANDBOX, false, Kind.POD, true),
    /** Before a container is created: may change its annotations, environment, resources. */
    PRE_CREATE_CONTAINER(
            "PreCreateContainer", HookEvent.CREATE_CONTAINER, true, Kind.CONTAINER, true),
    /** Before a container is started. */
    PRE_START_CONTAINER("PreStartContainer", HookEvent.START_CONTAINER, true, Kind.CONTAINER, true),
    /** A container was started. */
    POST_START_CONTAINER(
            "PostStartContainer", HookEvent.POST_START_CONTAINER, false, Kind.CONTAINER, true),
    /** Before a container's resources change: may change the resources. */
    PRE_UPDATE_CONTAINER_RESOURCES(
            "PreUpdateContainerResources", HookEvent.UPDATE_CONTAINER, true, Kind.CONTAINER, true),
    /** A container was stopped. */
    POST_STOP_CONTAINER("PostStopContainer", HookEvent.STOP_CONTAINER, false, Kind.CONTAINER, true),
    /** A container was created (cri4j's extended service). */
    POST_CREATE_CONTAINER(
            "PostCreateContainer", HookEvent.POST_CREATE_CONTAINER, false, Kind.CONTAINER, false),
    /**
     * cri4j's extended service: called at NRI's {@link HookEvent#STOP_CONTAINER}, which comes
     * after the stop (NRI has no event before it); {@link HookServer} serves it with an empty
     * answer and runs its hooks' stop at {@link #POST_STOP_CONTAINER}.
     */
    PRE_STOP_CONTAINER("PreStopContainer", HookEvent.STOP_CONTAINER, true, Kind.CONTAINER, false),
    /** A container is being removed (cri4j's extended service; NRI's event, after removal). */
    PRE_REMOVE_CONTAINER(
            "PreRemoveContainer", HookEvent.REMOVE_CONTAINER, true, Kind.CONTAINER, false),
    /** A container's resources were updated (cri4j's extended service). */
    POST_UPDATE_CONTAINER_RESOURCES(
            "PostUpdateContainerResources",
            HookEvent.POST_UPDATE_CONTAINER,
            false,
            Kind.CONTAINER,
            false),
    /** As {@link #PRE_STOP_CONTAINER}, for pods. */
    PRE_STOP_POD_SANDBOX("PreStopPodSandbox", HookEvent.STOP_POD_SANDBOX, true, Kind.POD, false),
    /** A pod is being removed (cri4j's extended service; NRI's event, after removal). */
    PRE_REMOVE_POD_SANDBOX(
            "PreRemovePodSandbox", HookEvent.REMOVE_POD_SANDBOX, true, Kind.POD, false);

    /** Whether a point concerns a pod sandbox or a container. */
    public enum Kind {
        POD,
        CONTAINER
    }

    private final String configName;
    private final HookEvent event;
    private final boolean pre;
    private final Kind kind;
    private final boolean koordinator;

    HookPoint(String configName, HookEvent event, boolean pre, Kind kind, boolean koordinator) {
        this.configName = configName;
        this.event = event;
        this.pre = pre;
        this.kind = kind;
        this.koordinator = koordinator;
    }

    /** The name in config files and logs, e.g. {@code PreCreateContainer}. */
    public String configName() {
        return configName;
    }

    /** The event of cri4j's hook model at which this point is called. */
    public HookEvent event() {
        return event;
    }

    /** True for points Koordinator calls before the runtime acts (by name: {@code Pre...}). */
    public boolean isPre() {
        return pre;
    }

    /** Pod or container point. */
    public Kind kind() {
        return kind;
    }

    /** True if Koordinator's RuntimeHookService has this point. */
    public boolean isKoordinator() {
        return koordinator;
    }

    /** The gRPC method name of this point on a hook server, e.g. {@code PreCreateContainerHook}. */
    public String rpcName() {
        return configName + "Hook";
    }

    /** Looks a point up by its config name (exact spelling). */
    public static Optional<HookPoint> fromConfigName(String name) {
        return Arrays.stream(values()).filter(p -> p.configName.equals(name)).findFirst();
    }
}
