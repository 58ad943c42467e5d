package io.cri4j.hook.internal;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.nri.v1alpha1.CompoundFieldOwners;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.FieldOwners;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which hook set which field of which container during one event: NRI's field ownership
 * ({@code pkg/api/owners.go}). A hook claims a field (or an entry of a keyed field) when it sets
 * it; a second claim by any hook is a conflict, unless the field was cleared (removed) by the
 * claiming hook itself, which is recorded as the hook's name with NRI's removal marker. Not
 * thread-safe: one event's merge is sequential.
 */
public final class Owners {
    private final HookEvent event;

    /** container (or pod) id → field name → owner. */
    private final Map<String, Map<String, String>> simple = new LinkedHashMap<>();

    /** container (or pod) id → field name → key → owner. */
    private final Map<String, Map<String, Map<String, String>>> compound = new LinkedHashMap<>();

    /** container id → how conflict messages name it. */
    private final Map<String, String> subjects = new HashMap<>();

    /** Ownership for one event. */
    public Owners(HookEvent event) {
        this.event = event;
    }

    /** How conflict messages name {@code id}, e.g. {@code container "web"}. */
    public void describe(String id, String subject) {
        subjects.put(id, subject);
    }

    /** Claims a plain field; throws if another claim stands. */
    public void claim(String id, String field, String hook) {
        check(
                id,
                field,
                "",
                simple.computeIfAbsent(id, k -> new LinkedHashMap<>()).get(field),
                hook);
        simple.get(id).put(field, hook);
    }

    /** Claims the entry {@code key} of a keyed field; throws if another claim stands. */
    public void claim(String id, String field, String key, String hook) {
        Map<String, String> m = entries(id, field);
        check(id, field, key, m.get(key), hook);
        m.put(key, hook);
    }

    /** Throws if {@code hook} could not claim the plain field; records nothing. */
    public void checkClaim(String id, String field, String hook) {
        Map<String, String> m = simple.get(id);
        check(id, field, "", m == null ? null : m.get(field), hook);
    }

    /** Throws if {@code hook} could not claim the entry; records nothing. */
    public void checkClaim(String id, String field, String key, String hook) {
        Map<String, Map<String, String>> f = compound.get(id);
        Map<String, String> m = f == null ? null : f.get(field);
        check(id, field, key, m == null ? null : m.get(key), hook);
    }

    /** Records that {@code hook} removed the plain field: it may set it again, nobody else may. */
    public void clear(String id, String field, String hook) {
        simple.computeIfAbsent(id, k -> new LinkedHashMap<>())
                .put(field, Adjustments.markForRemoval(hook));
    }

    /**
     * Records that {@code hook} removed the entry {@code key}, if another hook had set it: then
     * {@code hook} may set it again and nobody else may. Removing an entry no hook set (one the
     * container came with) records nothing, as in NRI.
     */
    public void clear(String id, String field, String key, String hook) {
        Map<String, String> m = entries(id, field);
        if (m.containsKey(key)) {
            m.put(key, Adjustments.markForRemoval(hook));
        }
    }

    /** OCI hooks never conflict: every contributing hook is listed, comma-separated (as NRI). */
    public void claimAppending(String id, String field, String hook) {
        Map<String, String> m = simple.computeIfAbsent(id, k -> new LinkedHashMap<>());
        String current = m.get(field);
        if (current == null || Adjustments.isMarkedForRemoval(current)) {
            m.put(field, hook);
        } else if (!List.of(current.split(",")).contains(hook)) {
            m.put(field, current + "," + hook);
        }
    }

    /** The owner of a plain field, or null. */
    public String owner(String id, String field) {
        Map<String, String> m = simple.get(id);
        return m == null ? null : m.get(field);
    }

    /** The owner of an entry of a keyed field, or null. */
    public String owner(String id, String field, String key) {
        Map<String, Map<String, String>> f = compound.get(id);
        Map<String, String> m = f == null ? null : f.get(field);
        return m == null ? null : m.get(key);
    }

    /** The plain fields of {@code id} and their owners. */
    public Map<String, String> simpleOwners(String id) {
        return simple.getOrDefault(id, Map.of());
    }

    /** The keyed fields of {@code id}: field → key → owner. */
    public Map<String, Map<String, String>> compoundOwners(String id) {
        return compound.getOrDefault(id, Map.of());
    }

    /** As NRI's {@code OwningPlugins}; fields NRI has no number for are left out. */
    public OwningPlugins toProto() {
        OwningPlugins.Builder out = OwningPlugins.newBuilder();
        Map<String, FieldOwners.Builder> per = new LinkedHashMap<>();
        simple.forEach(
                (id, fields) ->
                        fields.forEach(
                                (field, owner) -> {
                                    Integer n = number(field);
                                    if (n != null) {
                                        per.computeIfAbsent(id, k -> FieldOwners.newBuilder())
                                                .putSimple(n, owner);
                                    }
                                }));
        compound.forEach(
                (id, fields) ->
                        fields.forEach(
                                (field, keys) -> {
                                    Integer n = number(field);
                                    if (n != null) {
                                        per.computeIfAbsent(id, k -> FieldOwners.newBuilder())
                                                .putCompound(
                                                        n,
                                                        CompoundFieldOwners.newBuilder()
                                                                .putAllOwners(keys)
                                                                .build());
                                    }
                                }));
        per.forEach((id, b) -> out.putOwners(id, b.build()));
        return out.build();
    }

    private static Integer number(String field) {
        try {
            return Field.valueOf(field).getNumber();
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private Map<String, String> entries(String id, String field) {
        return compound.computeIfAbsent(id, k -> new LinkedHashMap<>())
                .computeIfAbsent(field, k -> new LinkedHashMap<>());
    }

    private void check(String id, String field, String key, String other, String hook) {
        if (other == null) {
            return;
        }
        if (Adjustments.isMarkedForRemoval(other)) {
            String clearer = Adjustments.clearRemovalMarker(other);
            if (clearer.equals(hook)) {
                return;
            }
            other = clearer;
        }
        throw new HookConflictException(
                event,
                subjects.getOrDefault(id, "container \"" + id + "\""),
                field,
                key,
                other,
                hook);
    }
}
