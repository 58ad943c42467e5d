/**
 * The plugin side, what {@link io.cri4j.nri.NriPlugin} runs: one connection to a runtime, NRI's
 * plugin service served by one {@link io.cri4j.hook.AsyncHook}, registration and reconnection. Not
 * API.
 */
package io.cri4j.nri.internal.plugin;
