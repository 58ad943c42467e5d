package io.cri4j.hook;

import io.cri4j.hook.internal.ContainerMerge;
import io.cri4j.hook.internal.Owners;
import io.cri4j.hook.internal.ResourceMerge;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.FieldOwners;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What the hooks of a {@link HookChain} made of one {@code CreateContainer} event: the merged
 * answer, the container as the hooks adjusted it, and which hook set which field (NRI's {@link
 * OwningPlugins}, keyed by container id, with hook names as owners). A host applies {@link
 * #result()} and uses {@link #owner} to name the hook behind a field it cannot carry. Immutable;
 * the adjusted container and the owners message are made when first asked for.
 */
public final class ContainerCreation {
    private final HookResult result;
    private final String containerId;
    private final Owners ownerTable;
    private final Lazy<Container> container;
    private final Lazy<OwningPlugins> owners;

    /**
     * @param result the merged adjustment (normalized: removals first, then additions), the
     *     updates of other containers and the evictions
     * @param container the container as the hooks left it
     * @param owners who set what; a name with NRI's removal marker ({@code "-name"}) removed it
     */
    public ContainerCreation(HookResult result, Container container, OwningPlugins owners) {
        this.result = Objects.requireNonNull(result, "result");
        this.container = new Lazy<>(Objects.requireNonNull(container, "container"), null);
        this.owners = new Lazy<>(Objects.requireNonNull(owners, "owners"), null);
        this.containerId = container.getId();
        this.ownerTable = null;
    }

    /** A finished merge's outcome; the merge is not changed afterwards. */
    ContainerCreation(HookResult result, ContainerMerge merge) {
        this.result = result;
        this.containerId = merge.containerId();
        this.ownerTable = merge.owners();
        this.container = new Lazy<>(null, merge::container);
        this.owners = new Lazy<>(null, ownerTable::toProto);
    }

    /** The merged adjustment, the updates of other containers and the evictions. */
    public HookResult result() {
        return result;
    }

    /** The container as the hooks left it. */
    public Container container() {
        return container.get();
    }

    /** Who set what; a name with NRI's removal marker ({@code "-name"}) removed it. */
    public OwningPlugins owners() {
        return owners.get();
    }

    /** The hook that set a plain field of the created container (e.g. {@link Field#CPUShares}). */
    public Optional<String> owner(Field field) {
        if (ownerTable != null) {
            return Optional.ofNullable(ownerTable.owner(containerId, field.name()));
        }
        FieldOwners f = owners().getOwnersMap().get(containerId);
        return f == null
                ? Optional.empty()
                : Optional.ofNullable(f.getSimpleMap().get(field.getNumber()));
    }

    /**
     * The hook that set (or removed) the entry {@code key} of a keyed field (e.g. {@link
     * Field#Env}).
     */
    public Optional<String> owner(Field field, String key) {
        if (ownerTable != null) {
            return Optional.ofNullable(ownerTable.owner(containerId, field.name(), key));
        }
        FieldOwners f = owners().getOwnersMap().get(containerId);
        if (f == null || !f.getCompoundMap().containsKey(field.getNumber())) {
            return Optional.empty();
        }
        return Optional.ofNullable(
                f.getCompoundMap().get(field.getNumber()).getOwnersMap().get(key));
    }

    /**
     * The hooks that added device cgroup rules ({@code linux.resources.devices}) to the created
     * container, in hook order. NRI has no field number for these rules, so {@link #owners()}
     * does not carry them; a creation made from an {@link OwningPlugins} message knows none.
     */
    public List<String> deviceCgroupRuleOwners() {
        if (ownerTable == null) {
            return List.of();
        }
        String o = ownerTable.owner(containerId, ResourceMerge.DEVICE_CGROUP_RULES);
        return o == null || o.isEmpty() ? List.of() : List.of(o.split(","));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ContainerCreation c
                && result.equals(c.result)
                && container().equals(c.container())
                && owners().equals(c.owners());
    }

    @Override
    public int hashCode() {
        return Objects.hash(result, container(), owners());
    }

    @Override
    public String toString() {
        return "ContainerCreation[result="
                + result
                + ", container="
                + container()
                + ", owners="
                + owners()
                + "]";
    }

    /** A value given, or made once when first asked for. */
    private static final class Lazy<T> {
        private Supplier<T> make;
        private volatile T value;

        Lazy(T value, Supplier<T> make) {
            this.value = value;
            this.make = make;
        }

        T get() {
            T v = value;
            if (v == null) {
                synchronized (this) {
                    v = value;
                    if (v == null) {
                        v = make.get();
                        value = v;
                        make = null;
                    }
                }
            }
            return v;
        }
    }
}
