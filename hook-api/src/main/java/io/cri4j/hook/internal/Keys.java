package io.cri4j.hook.internal;

import io.cri4j.hook.Adjustments;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

/** Applying keyed entries to protobuf builders, as NRI's adjustments are applied. */
public final class Keys {
    private Keys() {}

    /**
     * Replaces the entry whose key is {@code key} among {@code size} entries, or adds one.
     *
     * @param keyAt the key of the entry at an index
     * @param set replaces the entry at an index
     * @param add adds the entry
     */
    public static void replaceOrAdd(
            int size, IntFunction<String> keyAt, String key, IntConsumer set, Runnable add) {
        for (int i = 0; i < size; i++) {
            if (keyAt.apply(i).equals(key)) {
                set.accept(i);
                return;
            }
        }
        add.run();
    }

    /**
     * Applies a map whose keys may carry NRI's removal marker: the marked keys are removed first,
     * then the others put.
     */
    public static <V> void applyMarked(
            Map<String, V> in, Consumer<String> remove, BiConsumer<String, V> put) {
        if (in.isEmpty()) {
            return;
        }
        for (String k : in.keySet()) {
            if (Adjustments.isMarkedForRemoval(k)) {
                remove.accept(Adjustments.clearRemovalMarker(k));
            }
        }
        for (Map.Entry<String, V> e : in.entrySet()) {
            if (!Adjustments.isMarkedForRemoval(e.getKey())) {
                put.accept(e.getKey(), e.getValue());
            }
        }
    }
}
