/**
 * The CRI interceptor SPI: interceptors see any RuntimeService/ImageService call (unary or
 * server-streaming), may change the request or response or answer themselves; chains compose in
 * registration order.
 *
 * <p>{@link io.cri4j.hook.cri.AsyncCriInterceptor} is the form a proxy runs, on its I/O thread
 * (never blocks); {@link io.cri4j.hook.cri.CriInterceptor} is the blocking form, adapted to run on
 * a worker ({@link io.cri4j.hook.cri.CriInterceptor#async}). {@link
 * io.cri4j.hook.cri.ForwardingAsyncCriInterceptor} and {@link
 * io.cri4j.hook.cri.ForwardingCriInterceptor} have a typed method per CRI RPC.
 */
package io.cri4j.hook.cri;
