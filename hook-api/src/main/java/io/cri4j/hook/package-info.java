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
 *   <li>{@link io.cri4j.hook.RuntimeHook}: called at named {@link io.cri4j.hook.HookPoint}s with
 *       Koordinator's {@code runtime.v1alpha1} messages (generated in
 *       {@code io.cri4j.hook.koordinator.v1alpha1}, wire-identical to upstream); in-process
 *       ({@link io.cri4j.hook.InProcessHooks}, ServiceLoader) or remote
 *       ({@link io.cri4j.hook.RemoteRuntimeHook}, Koordinator's protocol over a unix socket).
 *       {@link io.cri4j.hook.AsyncRuntimeHook}: a hook that answers with a stage, so that no hook
 *       thread waits for it (remote hooks are such hooks).</li>
 *   <li>{@link io.cri4j.hook.HookDispatcher}: index order, per-hook timeout, failure policy,
 *       field-by-field merge with {@link io.cri4j.hook.HookConflict} reporting.</li>
 *   <li>{@link io.cri4j.hook.HookConfigDirectory}: Koordinator's hook config directory, watched.</li>
 *   <li>{@link io.cri4j.hook.HookServer}: serves Java hooks to Koordinator's Go proxy.</li>
 * </ul>
 */
package io.cri4j.hook;
