package io.cri4j.nri.internal;

import io.cri4j.hook.HookEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What both ends of an NRI connection agree on: which mux connection carries which ttrpc service,
 * the services' names and the NRI version cri4j speaks.
 */
public final class NriWire {

    /** Mux connection of the plugin service (the runtime calls the plugin). */
    public static final int PLUGIN_SERVICE_CONN = 1;

    /** Mux connection of the runtime service (the plugin calls the runtime). */
    public static final int RUNTIME_SERVICE_CONN = 2;

    /** The plugin service's ttrpc name. */
    public static final String PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin";

    /** The runtime service's ttrpc name. */
    public static final String RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime";

    /**
     * The NRI version cri4j sends ({@code RegisterPlugin}'s and {@code Configure}'s): the API it
     * speaks (the per-event RPCs of NRI v0.12, and {@code StateChange} for older peers).
     */
    public static final String NRI_VERSION = "v0.12.2";

    private NriWire() {}

    /** The events' display names, comma-separated, for logs. */
    public static String names(Set<HookEvent> events) {
        List<String> n = new ArrayList<>();
        for (HookEvent e : events) {
            n.add(e.displayName());
        }
        return String.join(", ", n);
    }
}
