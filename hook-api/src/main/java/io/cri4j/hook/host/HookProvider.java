package io.cri4j.hook.host;

import io.cri4j.hook.AsyncHook;
import java.io.IOException;
import java.util.List;

/**
 * Hooks that come and go while a host runs, such as the external NRI plugins connected to an NRI
 * socket. A host (the cri4j CRI proxy, the fake runtime) starts a provider once with its view of
 * the runtime, takes {@link #hooks()} at every event (for example as a {@code HookChain} source,
 * together with its own in-process hooks) and closes the provider when it stops.
 *
 * <p>A provider configures a new hook and gives it the host's pods and containers
 * ({@link HookHost#snapshot()}, NRI's {@code Synchronize}) before {@link #hooks()} lists it; the
 * updates a hook asks for then or later go to {@link HookHost#runtime()}. A hook that goes away
 * (its plugin disconnected) leaves the list; a call in flight to it fails as a hook failure, which
 * the hook's failure policy turns into a failed call or a warning.
 */
public interface HookProvider extends AutoCloseable {

    /**
     * Starts accepting hooks for {@code host}. Called once; returns when the provider accepts (for
     * an NRI socket: listens), without waiting for any hook.
     *
     * @throws IOException when the provider cannot start (its socket cannot be bound, for example)
     */
    void start(HookHost host) throws IOException;

    /** The hooks ready now, in any order (hosts order them by index, then name). Never blocks. */
    List<AsyncHook> hooks();

    /** Stops accepting hooks and lets the connected ones go; idempotent. */
    @Override
    void close();
}
