/** The one hardened HTTP/1.1 server of cri4j's small HTTP endpoints. Not API. */
package io.cri4j.cri.internal.http;
