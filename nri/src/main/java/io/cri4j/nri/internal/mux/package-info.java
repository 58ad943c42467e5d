/**
 * NRI's connection multiplexer ({@code containerd/nri} {@code pkg/net/multiplex}): mux frames in,
 * split by logical connection, and out, cut as Go's {@code bufio} cuts them; {@link
 * io.cri4j.nri.internal.mux.MuxCodec} is its Netty handler. Not API.
 */
package io.cri4j.nri.internal.mux;
