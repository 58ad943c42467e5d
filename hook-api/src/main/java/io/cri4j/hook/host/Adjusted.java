package io.cri4j.hook.host;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A request or config with hooks' changes applied, and the changes that could not be applied.
 * Immutable.
 *
 * @param value the changed request or config
 * @param unsupported what was not applied, in the order met
 * @param <T> the request or config type
 */
public record Adjusted<T>(T value, List<UnsupportedAdjustment> unsupported) {

    /** Validates and copies. */
    public Adjusted {
        Objects.requireNonNull(value, "value");
        unsupported = List.copyOf(unsupported);
    }

    /** The unsupported fields per hook (hook name → field descriptions), in the order met. */
    public Map<String, List<String>> unsupportedByHook() {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (UnsupportedAdjustment u : unsupported) {
            out.computeIfAbsent(u.hook(), k -> new java.util.ArrayList<>()).add(u.describe());
        }
        out.replaceAll((k, v) -> List.copyOf(v));
        return out;
    }
}
