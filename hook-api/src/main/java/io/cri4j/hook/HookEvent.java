package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.Event;
import java.util.Collection;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/**
 * The pod and container lifecycle events a {@link Hook} or {@link AsyncHook} can subscribe to:
 * NRI's events (v0.12), plus {@link #ADJUST_POD_SANDBOX}, cri4j's own pod-level adjustment that
 * only hosts which see the CRI request (the proxy, the fake runtime) can serve.
 */
public enum HookEvent {
    /** cri4j only: before a pod sandbox is created, a hook may change its labels, annotations,
     *  cgroup parent and resources ({@link PodSandboxAdjustment}). NRI has no such event. */
    ADJUST_POD_SANDBOX("AdjustPodSandbox", null, Kind.POD),
    RUN_POD_SANDBOX("RunPodSandbox", Event.RUN_POD_SANDBOX, Kind.POD),
    UPDATE_POD_SANDBOX("UpdatePodSandbox", Event.UPDATE_POD_SANDBOX, Kind.POD),
    POST_UPDATE_POD_SANDBOX("PostUpdatePodSandbox", Event.POST_UPDATE_POD_SANDBOX, Kind.POD),
    STOP_POD_SANDBOX("StopPodSandbox", Event.STOP_POD_SANDBOX, Kind.POD),
    REMOVE_POD_SANDBOX("RemovePodSandbox", Event.REMOVE_POD_SANDBOX, Kind.POD),
    CREATE_CONTAINER("CreateContainer", Event.CREATE_CONTAINER, Kind.CONTAINER),
    POST_CREATE_CONTAINER("PostCreateContainer", Event.POST_CREATE_CONTAINER, Kind.CONTAINER),
    START_CONTAINER("StartContainer", Event.START_CONTAINER, Kind.CONTAINER),
    POST_START_CONTAINER("PostStartContainer", Event.POST_START_CONTAINER, Kind.CONTAINER),
    UPDATE_CONTAINER("UpdateContainer", Event.UPDATE_CONTAINER, Kind.CONTAINER),
    POST_UPDATE_CONTAINER("PostUpdateContainer", Event.POST_UPDATE_CONTAINER, Kind.CONTAINER),
    STOP_CONTAINER("StopContainer", Event.STOP_CONTAINER, Kind.CONTAINER),
    REMOVE_CONTAINER("RemoveContainer", Event.REMOVE_CONTAINER, Kind.CONTAINER),
    VALIDATE_CONTAINER_ADJUSTMENT(
            "ValidateContainerAdjustment", Event.VALIDATE_CONTAINER_ADJUSTMENT, Kind.CONTAINER);

    /** Whether an event concerns a pod sandbox or a container. */
    public enum Kind {
        POD,
        CONTAINER
    }

    private final String displayName;
    private final Event nri;
    private final Kind kind;

    HookEvent(String displayName, Event nri, Kind kind) {
        this.displayName = displayName;
        this.nri = nri;
        this.kind = kind;
    }

    /** The name in logs, config files and error messages, e.g. {@code CreateContainer}. */
    public String displayName() {
        return displayName;
    }

    /** NRI's event, or empty for {@link #ADJUST_POD_SANDBOX}, which NRI cannot express. */
    public Optional<Event> nriEvent() {
        return Optional.ofNullable(nri);
    }

    /** Pod or container event. */
    public Kind kind() {
        return kind;
    }

    /**
     * NRI's subscription bit of this event ({@code 1 << (event number - 1)}, as NRI's
     * {@code EventMask}), or 0 for an event NRI cannot express.
     */
    public int nriMaskBit() {
        return nri == null ? 0 : 1 << (nri.getNumber() - 1);
    }

    /** NRI's {@code ConfigureResponse.events} mask for these events. */
    public static int nriMask(Collection<HookEvent> events) {
        int mask = 0;
        for (HookEvent e : events) {
            mask |= e.nriMaskBit();
        }
        return mask;
    }

    /** The events in an NRI event mask; bits for events cri4j does not know are left out. */
    public static Set<HookEvent> fromNriMask(int mask) {
        Set<HookEvent> out = EnumSet.noneOf(HookEvent.class);
        for (HookEvent e : values()) {
            if (e.nri != null && (mask & e.nriMaskBit()) != 0) {
                out.add(e);
            }
        }
        return out;
    }

    /** The cri4j event for NRI's, or empty for {@code UNKNOWN}, {@code LAST} and unknown numbers. */
    public static Optional<HookEvent> fromNri(Event event) {
        for (HookEvent e : values()) {
            if (e.nri == event) {
                return Optional.of(e);
            }
        }
        return Optional.empty();
    }
}
