/** An example runtime-hook plugin jar for {@code cri4j proxy --plugins DIR}. */
package io.cri4j.examples.plugin;
