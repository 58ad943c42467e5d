/**
 * The hook SPI: lifecycle hooks in NRI's model.
 *
 * <p>{@link io.cri4j.hook.Hook} (blocking) and {@link io.cri4j.hook.AsyncHook} (never blocks; what
 * hosts run) see NRI's pod and container messages ({@code io.cri4j.hook.nri.v1alpha1}) and answer
 * with {@link io.cri4j.hook.HookResult}s built with {@link io.cri4j.hook.Adjustments} and {@link
 * io.cri4j.hook.ContainerUpdates}; {@link io.cri4j.hook.HookChain} serves many as one with NRI's
 * order, timeouts, failure policies and conflict rules ({@link io.cri4j.hook.HookException} and its
 * subclasses); {@link io.cri4j.hook.Hooks} finds hooks with {@link java.util.ServiceLoader}.
 *
 * <p>Beside it: the CRI interceptor SPI ({@code io.cri4j.hook.cri}), Koordinator's protocol as an
 * adapter ({@code io.cri4j.hook.koordinator}), and the host side that converts between CRI and NRI
 * for hosts that see CRI ({@code io.cri4j.hook.host}).
 */
package io.cri4j.hook;
