/**
 * WebSocket pieces both features use: the {@code channel.k8s.io} and {@code base64.channel.k8s.io}
 * channel framing ({@link io.cri4j.streaming.internal.websocket.WsChannels}), the connection's write
 * gate attribute ({@link io.cri4j.streaming.internal.websocket.GateHolder}) and the byte stream in
 * binary messages that carries SPDY for {@code SPDY/3.1+portforward.k8s.io}
 * ({@link io.cri4j.streaming.internal.websocket.WsTunnelBridge}). Knows nothing of exec or
 * port-forward. Not API.
 */
package io.cri4j.streaming.internal.websocket;
