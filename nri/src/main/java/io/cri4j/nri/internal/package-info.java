/**
 * Implementation of {@link io.cri4j.nri.NriPlugin} and {@link io.cri4j.nri.NriHost}, in layers as
 * the bytes go: {@code mux} (NRI's multiplexer), {@code ttrpc}, then the role, {@code plugin} or
 * {@code host}; this package holds what both roles share (NRI's connection ids and service names,
 * the meters). Not API.
 */
package io.cri4j.nri.internal;
