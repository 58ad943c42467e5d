package io.cri4j.nri.internal.mux;

import io.netty.buffer.ByteBuf;

/**
 * Bytes of one logical connection of NRI's multiplexer: read from the socket by {@link MuxCodec}
 * (a piece of the connection's byte stream, as it arrived), or written to it (one ttrpc frame,
 * which {@link MuxCodec} cuts as Go's {@code bufio} does). The receiver releases {@code bytes}.
 *
 * @param connId the logical connection (1: the plugin service, 2: the runtime service)
 * @param bytes the bytes
 */
public record MuxMessage(int connId, ByteBuf bytes) {}
