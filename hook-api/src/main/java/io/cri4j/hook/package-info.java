/** Hook and interceptor SPI for CRI calls (see the hook-api issue; not yet implemented). */
package io.cri4j.hook;
