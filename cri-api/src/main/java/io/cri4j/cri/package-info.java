/**
 * CRI bindings and transport: endpoints ({@link io.cri4j.cri.CriEndpoint}), client channels
 * ({@link io.cri4j.cri.CriChannels}), servers on unix sockets ({@link io.cri4j.cri.CriServer}) and
 * conversion between {@code runtime.v1} and {@code runtime.v1alpha2}
 * ({@link io.cri4j.cri.CriConversion}). The generated messages and stubs are in
 * {@code io.cri4j.cri.v1} and {@code io.cri4j.cri.v1alpha2}.
 */
package io.cri4j.cri;
