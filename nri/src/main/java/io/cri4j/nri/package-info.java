/**
 * Java NRI plugins: {@link io.cri4j.nri.NriPlugin} serves a cri4j lifecycle hook ({@link
 * io.cri4j.hook.Hook} or {@link io.cri4j.hook.AsyncHook}) to containerd 2.x or CRI-O over their
 * NRI socket ({@code /var/run/nri/nri.sock}), with NRI's own protocol: ttrpc over NRI's connection
 * multiplexer, implemented here on Netty's epoll transport.
 */
package io.cri4j.nri;
