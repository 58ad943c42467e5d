/**
 * The SPDY/3.1 session layer both features use on both ends, with Go spdystream's semantics (no
 * flow control, back-pressure from TCP), on Netty's frame codec: the session
 * ({@link io.cri4j.streaming.internal.spdy.SpdySession}), its streams
 * ({@link io.cri4j.streaming.internal.spdy.SpdyStream}) and the codec that passes DATA payloads on
 * without copying them ({@code SpdyCodec}). Knows nothing of exec or port-forward. Not API.
 */
package io.cri4j.streaming.internal.spdy;
