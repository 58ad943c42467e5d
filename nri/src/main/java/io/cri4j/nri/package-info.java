/**
 * NRI in Java, both ends. {@link io.cri4j.nri.NriPlugin} serves a cri4j lifecycle hook ({@link
 * io.cri4j.hook.Hook} or {@link io.cri4j.hook.AsyncHook}) to containerd 2.x or CRI-O over their
 * NRI socket ({@code /var/run/nri/nri.sock}); {@link io.cri4j.nri.NriHost} is NRI's runtime side,
 * serving the NRI plugins that connect to its socket to any host as hooks (a {@link
 * io.cri4j.hook.host.HookProvider}: the cri4j CRI proxy, the fake runtime). Both speak NRI's own
 * protocol: ttrpc over NRI's connection multiplexer, implemented here on Netty's epoll transport.
 */
package io.cri4j.nri;
