package io.cri4j.nri.internal;

import java.util.function.IntSupplier;

/**
 * What {@link io.cri4j.nri.NriPlugin} and {@link io.cri4j.nri.NriHost} record of their
 * connections, with no Micrometer type in sight: {@link #NONE} without a registry (Micrometer need
 * not be on the class path then), a Micrometer recorder otherwise. Not API.
 */
public interface NriMeters {

    /** Records nothing. */
    NriMeters NONE =
            new NriMeters() {
                @Override
                public void registered() {}

                @Override
                public void disconnected() {}

                @Override
                public void rejected() {}
            };

    /**
     * A plugin's recorder: {@code cri4j_nri_plugin_registered} (1 while registered),
     * {@code cri4j_nri_plugin_registrations_total} and {@code cri4j_nri_plugin_disconnections_total},
     * tagged with the plugin's full name.
     *
     * @param registry a {@code MeterRegistry}, or null
     */
    static NriMeters plugin(Object registry, String plugin) {
        return registry == null ? NONE : MicrometerNriMeters.plugin(registry, plugin);
    }

    /**
     * A host's recorder: {@code cri4j_nri_host_plugins} (registered plugins now), {@code
     * cri4j_nri_host_registrations_total}, {@code cri4j_nri_host_disconnections_total} and {@code
     * cri4j_nri_host_rejections_total}, tagged with the host's socket.
     *
     * @param registry a {@code MeterRegistry}, or null
     * @param plugins the number of registered plugins now
     */
    static NriMeters host(Object registry, String socket, IntSupplier plugins) {
        return registry == null ? NONE : MicrometerNriMeters.host(registry, socket, plugins);
    }

    /** A plugin registered (with the runtime, or with this host). */
    void registered();

    /** A registered plugin's connection ended. */
    void disconnected();

    /** A connection was refused before it registered (host). */
    void rejected();

    /** Whether anything is recorded (callers skip reading the clock otherwise). */
    default boolean enabled() {
        return this != NONE;
    }

    /**
     * One request of the runtime answered by the plugin.
     *
     * @param method the NRI method ({@code CreateContainer}, {@code Synchronize}, ...)
     * @param outcome {@code ok} or the failure's status code in lower case ({@code unknown},
     *     {@code deadline_exceeded}, ...)
     */
    default void request(String method, long nanos, String outcome) {}

    /** One {@code Synchronize} request's pods and containers (plugin). */
    default void synchronize(int pods, int containers) {}
}
