/**
 * The HTTP/1.1 part of streaming, shared by exec, attach and port-forward (kubelet's
 * {@code streaming} package): the server's routes ({@code <prefix>exec|attach|portforward/<token>},
 * {@link io.cri4j.streaming.internal.StreamingHttpHandler}), its single-use tokens
 * ({@link io.cri4j.streaming.internal.RequestCache}), request deadline, session limit and error
 * answers, the protocol negotiation and upgrade to SPDY/3.1 or WebSocket that hands the connection
 * to a feature package; the client's upgrade request ({@link io.cri4j.streaming.internal.Upgrader});
 * the protocol, header and stream-type names both ends use
 * ({@link io.cri4j.streaming.internal.Protocols}).
 *
 * <p>By feature: {@code remotecommand} (exec and attach) and {@code portforward}, each with its SPDY
 * and WebSocket parts, server and client. Shared by them: {@code spdy} (the SPDY/3.1 session
 * layer), {@code websocket} (the {@code channel.k8s.io} framing and the SPDY-in-WebSocket tunnel)
 * and {@code io} (blocking streams over event loops, back-pressure). Not API.
 */
package io.cri4j.streaming.internal;
