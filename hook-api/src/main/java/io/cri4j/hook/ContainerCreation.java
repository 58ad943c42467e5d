package io.cri4j.hook;

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
 * #result()} and uses {@link #owner} to name the hook behind a field it cannot carry. Immutable.
 *
 * @param result the merged adjustment (normalized: removals first, then additions), the updates
 *     of other containers and the evictions
 * @param container the container as the hooks left it
 * @param owners who set what; a name with NRI's removal marker ({@code "-name"}) removed it
 */
public record ContainerCreation(HookResult result, Container container, OwningPlugins owners) {

    /** Checks that nothing is null. */
    public ContainerCreation {
        Objects.requireNonNull(result, "result");
        Objects.requireNonNull(container, "container");
        Objects.requireNonNull(owners, "owners");
    }

    /** The hook that set a plain field of the created container (e.g. {@link Field#CPUShares}). */
    public Optional<String> owner(Field field) {
        FieldOwners f = owners.getOwnersMap().get(container.getId());
        return f == null
                ? Optional.empty()
                : Optional.ofNullable(f.getSimpleMap().get(field.getNumber()));
    }

    /**
     * The hook that set (or removed) the entry {@code key} of a keyed field (e.g. {@link
     * Field#Env}).
     */
    public Optional<String> owner(Field field, String key) {
        FieldOwners f = owners.getOwnersMap().get(container.getId());
        if (f == null || !f.getCompoundMap().containsKey(field.getNumber())) {
            return Optional.empty();
        }
        return Optional.ofNullable(
                f.getCompoundMap().get(field.getNumber()).getOwnersMap().get(key));
    }
}
