/**
 * Port-forward, both ends (kubelet's {@code streaming/portforward}, client-go's
 * {@code tools/portforward}).
 *
 * <p>Server: {@link io.cri4j.streaming.internal.portforward.SpdyPortForward} (a data and an error
 * stream per forwarded connection, paired by {@code requestID} or by stream id, over plain SPDY or
 * SPDY tunnelled in WebSocket) and {@link io.cri4j.streaming.internal.portforward.WsPortForward}
 * (a data and an error channel per port); both hand the runtime a
 * {@link io.cri4j.streaming.internal.portforward.PortStreamImpl}. A failed SPDY forward writes
 * {@link io.cri4j.streaming.internal.portforward.PortForwardErrors}' JSON on its error stream.
 *
 * <p>Client: {@link io.cri4j.streaming.internal.portforward.SpdyPortForwardClient} (one stream pair
 * per connection) and {@link io.cri4j.streaming.internal.portforward.LocalForwarder} (a local
 * listener: each accepted connection becomes a forwarded connection of a session). Not API.
 */
package io.cri4j.streaming.internal.portforward;
