package io.cri4j.nri.internal.host;

import io.cri4j.hook.HookEvent;
import io.cri4j.nri.NriHost;
import io.cri4j.nri.internal.NriMeters;
import java.util.Set;

/** A host's listener that records into {@link NriMeters} before telling the user's. Not API. */
public final class NriHostMeters {
    private NriHostMeters() {}

    /** {@code listener}, recording into {@code meters} first (itself when there is nothing to record). */
    public static NriHost.Listener listening(NriHost.Listener listener, NriMeters meters) {
        if (meters == NriMeters.NONE) {
            return listener;
        }
        return new NriHost.Listener() {
            @Override
            public void registered(String name, int index, Set<HookEvent> events) {
                meters.registered();
                listener.registered(name, index, events);
            }

            @Override
            public void disconnected(String name, Throwable cause) {
                meters.disconnected();
                listener.disconnected(name, cause);
            }

            @Override
            public void rejected(String who, String reason) {
                meters.rejected();
                listener.rejected(who, reason);
            }
        };
    }
}
