/**
 * A kubelet-compatible streaming server for CRI {@code Exec}, {@code Attach} and {@code PortForward}
 * (SPDY/3.1 and WebSocket, the protocols kubelet, kubectl and crictl speak) and a Java client.
 *
 * <p>A runtime implements {@link io.cri4j.streaming.StreamingRuntime} on plain Java streams; the
 * {@link io.cri4j.streaming.StreamingServer} answers the CRI calls with single-use URLs and serves
 * them. Everything under {@code io.cri4j.streaming.internal} is not API.
 */
package io.cri4j.streaming;
