/**
 * Implementation of {@link io.cri4j.nri.NriPlugin}: ttrpc (frames, client and server on one
 * connection), NRI's connection multiplexer, and the adapter from NRI's plugin service to a
 * {@link io.cri4j.hook.AsyncHook}. Not API.
 */
package io.cri4j.nri.internal;
