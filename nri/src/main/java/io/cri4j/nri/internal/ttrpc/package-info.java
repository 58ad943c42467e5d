/**
 * ttrpc ({@code containerd/ttrpc}): frames, one peer per mux connection that both calls and serves
 * unary methods, errors as {@code google.rpc.Status}; {@link io.cri4j.nri.internal.ttrpc.TtrpcCodec}
 * is its Netty handler, used by both the plugin and the host side. Not API.
 */
package io.cri4j.nri.internal.ttrpc;
