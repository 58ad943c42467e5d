/** Implementation details of the CRI transport. Not API. */
package io.cri4j.cri.internal;
