/**
 * The runtime side, what {@link io.cri4j.nri.NriHost} runs for each plugin: registration,
 * {@code Synchronize}, and the plugin's events as an {@link io.cri4j.hook.AsyncHook}. Not API.
 */
package io.cri4j.nri.internal.host;
