package io.cri4j.hook;

import io.cri4j.hook.internal.ContainerMerge;
import io.cri4j.hook.internal.Owners;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.Field;
import io.cri4j.nri.api.FieldOwners;
import io.cri4j.nri.api.OwningPlugins;
import java.util.Objects;
import java.util.Optional;

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
    private final ContainerMerge merge;
    private final Owners ownerTable;
    private volatile Container container;
    private volatile OwningPlugins owners;

    /**
     * @param result the merged adjustment (normalized: removals first, then additions), the
     *     updates of other containers and the evictions
     * @param container the container as the hooks left it
     * @param owners who set what; a name with NRI's removal marker ({@code "-name"}) removed it
     */
    public ContainerCreation(HookResult result, Container container, OwningPlugins owners) {
        this.result = Objects.requireNonNull(result, "result");
        this.container = Objects.requireNonNull(container, "container");
        this.owners = Objects.requireNonNull(owners, "owners");
        this.containerId = container.getId();
        this.merge = null;
        this.ownerTable = null;
    }

    /** A finished merge's outcome; the merge is not changed afterwards. */
    ContainerCreation(HookResult result, ContainerMerge merge) {
        this.result = result;
        this.containerId = merge.containerId();
        this.merge = merge;
        this.ownerTable = merge.owners();
    }

    /** The merged adjustment, the updates of other containers and the evictions. */
    public HookResult result() {
        return result;
    }

    /** The container as the hooks left it. */
    public Container container() {
        Container c = container;
        if (c == null) {
            synchronized (this) {
                c = container;
                if (c == null) {
                    c = merge.container();
                    container = c;
                }
            }
        }
        return c;
    }

    /** Who set what; a name with NRI's removal marker ({@code "-name"}) removed it. */
    public OwningPlugins owners() {
        OwningPlugins o = owners;
        if (o == null) {
            synchronized (this) {
                o = owners;
                if (o == null) {
                    o = ownerTable.toProto();
                    owners = o;
                }
            }
        }
        return o;
    }

    /** The hook that set a plain field of the created container (e.g. {@link Field#CPUShares}). */
    public Optional<String> owner(Field field) {
        if (ownerTable != null) {
            return Optional.ofNullable(ownerTable.owner(containerId, field.name()));
        }
        FieldOwners f = owners.getOwnersMap().get(containerId);
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
        FieldOwners f = owners.getOwnersMap().get(containerId);
        if (f == null || !f.getCompoundMap().containsKey(field.getNumber())) {
            return Optional.empty();
        }
        return Optional.ofNullable(
                f.getCompoundMap().get(field.getNumber()).getOwnersMap().get(key));
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
}
