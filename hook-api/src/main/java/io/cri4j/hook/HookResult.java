package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A hook's answer to a container event, as NRI's: an adjustment of the container being created
 * ({@link HookEvent#CREATE_CONTAINER} only), updates of other containers' resources (or, at
 * {@link HookEvent#UPDATE_CONTAINER}, of the container being updated), and evictions. Immutable.
 *
 * @param adjustment changes to the container being created; the default instance changes nothing
 * @param updates resource updates of running containers
 * @param evictions containers to stop, each with a reason
 */
public record HookResult(
        ContainerAdjustment adjustment,
        List<ContainerUpdate> updates,
        List<ContainerEviction> evictions) {

    private static final HookResult NONE =
            new HookResult(ContainerAdjustment.getDefaultInstance(), List.of(), List.of());

    /** Validates and copies. */
    public HookResult {
        Objects.requireNonNull(adjustment, "adjustment");
        updates = List.copyOf(updates);
        evictions = List.copyOf(evictions);
    }

    /** Changes nothing. */
    public static HookResult none() {
        return NONE;
    }

    /** Only an adjustment of the container being created. */
    public static HookResult adjust(ContainerAdjustment adjustment) {
        return new HookResult(adjustment, List.of(), List.of());
    }

    /** Only updates of containers. */
    public static HookResult update(List<ContainerUpdate> updates) {
        return new HookResult(ContainerAdjustment.getDefaultInstance(), updates, List.of());
    }

    /** True if this changes nothing. */
    public boolean isEmpty() {
        return adjustment.equals(ContainerAdjustment.getDefaultInstance())
                && updates.isEmpty()
                && evictions.isEmpty();
    }

    /** A builder of an empty result. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link HookResult}. */
    public static final class Builder {
        private ContainerAdjustment adjustment = ContainerAdjustment.getDefaultInstance();
        private final List<ContainerUpdate> updates = new ArrayList<>();
        private final List<ContainerEviction> evictions = new ArrayList<>();

        private Builder() {}

        /** Sets the adjustment of the container being created. */
        public Builder adjust(ContainerAdjustment value) {
            adjustment = Objects.requireNonNull(value, "adjustment");
            return this;
        }

        /** Adds an update of a container's resources. */
        public Builder addUpdate(ContainerUpdate update) {
            updates.add(Objects.requireNonNull(update, "update"));
            return this;
        }

        /** Asks the runtime to stop a container, with a reason for logs and its status. */
        public Builder evict(String containerId, String reason) {
            evictions.add(
                    ContainerEviction.newBuilder()
                            .setContainerId(containerId)
                            .setReason(reason)
                            .build());
            return this;
        }

        /** The result. */
        public HookResult build() {
            return new HookResult(adjustment, updates, evictions);
        }
    }
}
