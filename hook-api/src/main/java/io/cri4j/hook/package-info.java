/**
 * Hooks and interceptors for CRI calls.
 *
 * <ul>
 *   <li>Lifecycle hooks in NRI's model: {@link io.cri4j.hook.Hook} (blocking) and {@link
 *       io.cri4j.hook.AsyncHook} (never blocks; what hosts run), answering with {@link
 *       io.cri4j.hook.HookResult}s built with {@link io.cri4j.hook.Adjustments} and {@link
 *       io.cri4j.hook.ContainerUpdates}; {@link io.cri4j.hook.HookChain} serves many as one with
 *       NRI's order, timeouts, failure policies and conflict rules ({@link
 *       io.cri4j.hook.HookException} and its subclasses); {@code io.cri4j.hook.host} converts
 *       between CRI and NRI for hosts that see CRI.</li>
 *   <li>CRI interceptors: see any RuntimeService/ImageService call (unary or server-streaming),
 *       may change the request or response or answer itself; chains compose in registration
 *       order. {@link io.cri4j.hook.AsyncCriInterceptor} is the form a proxy runs, on its I/O
 *       thread (never blocks); {@link io.cri4j.hook.CriInterceptor} is the blocking form, adapted
 *       to run on a worker ({@link io.cri4j.hook.CriInterceptor#async}).
 *       {@link io.cri4j.hook.ForwardingAsyncCriInterceptor} and
 *       {@link io.cri4j.hook.ForwardingCriInterceptor} have a typed method per CRI RPC.</li>
 *   <li>Koordinator's protocol ({@code runtime.v1alpha1}, generated in {@code
 *       io.cri4j.hook.koordinator.v1alpha1}, wire-identical to upstream) as an adapter both
 *       ways: {@link io.cri4j.hook.RemoteRuntimeHook} calls a Koordinator hook server (koordlet)
 *       as an {@link io.cri4j.hook.AsyncHook} at the {@link io.cri4j.hook.HookPoint}s its config
 *       lists; {@link io.cri4j.hook.HookServer} serves cri4j hooks to Koordinator's Go proxy.</li>
 *   <li>{@link io.cri4j.hook.HookConfigDirectory}: Koordinator's hook config directory, watched:
 *       one {@link io.cri4j.hook.RemoteRuntimeHook} per file.</li>
 * </ul>
 */
package io.cri4j.hook;
