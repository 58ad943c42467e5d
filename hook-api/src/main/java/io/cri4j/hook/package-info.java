/**
 * Hooks and interceptors for CRI calls.
 *
 * <ul>
 *   <li>{@link io.cri4j.hook.CriInterceptor}: sees any RuntimeService/ImageService call (unary or
 *       server-streaming), may change the request or response or answer itself; chains compose
 *       in registration order. {@link io.cri4j.hook.AsyncCriInterceptor}: the same for
 *       interceptors that never block, which a proxy runs on its I/O thread.</li>
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
