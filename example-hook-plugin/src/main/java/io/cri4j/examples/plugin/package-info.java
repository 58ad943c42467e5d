/**
 * An example hook plugin jar in cri4j's hook model: the same class runs under {@code cri4j proxy
 * --plugins DIR}, {@code cri4j nri-plugin --plugins DIR}, behind {@code HookServer} and on the fake
 * runtime.
 */
package io.cri4j.examples.plugin;
