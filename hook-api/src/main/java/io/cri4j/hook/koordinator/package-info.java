/**
 * Koordinator's runtime hook protocol ({@code runtime.v1alpha1}, generated in {@code
 * io.cri4j.hook.koordinator.v1alpha1}, wire-identical to upstream) as an adapter both ways.
 *
 * <p>{@link io.cri4j.hook.koordinator.RemoteRuntimeHook} calls a Koordinator hook server (koordlet)
 * as an {@link io.cri4j.hook.AsyncHook} at the {@link io.cri4j.hook.koordinator.HookPoint}s its
 * config ({@link io.cri4j.hook.koordinator.HookConfig}) lists; {@link
 * io.cri4j.hook.koordinator.HookConfigDirectory} watches Koordinator's hook config directory and
 * keeps one {@code RemoteRuntimeHook} per file; {@link io.cri4j.hook.koordinator.HookServer}
 * serves cri4j hooks to Koordinator's Go proxy.
 */
package io.cri4j.hook.koordinator;
