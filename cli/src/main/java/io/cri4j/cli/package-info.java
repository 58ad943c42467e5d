/** The {@code ./cri4j} command line. */
package io.cri4j.cli;
