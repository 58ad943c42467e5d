/**
 * The proxy as a host of lifecycle hooks (not API): {@link
 * io.cri4j.proxy.internal.hooks.ProxyHooks} runs the hook chain on the CRI calls it intercepts,
 * with the proxy's container ids ({@link io.cri4j.proxy.internal.hooks.ContainerIds}), container
 * exits seen from the runtime ({@code ContainerExits}), checkpointed hook state ({@link
 * io.cri4j.proxy.internal.hooks.CheckpointStore}); {@link
 * io.cri4j.proxy.internal.hooks.PullObserving} tells a pull observer about pulls.
 */
package io.cri4j.proxy.internal.hooks;
