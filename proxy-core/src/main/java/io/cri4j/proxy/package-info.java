/** A CRI proxy between kubelet and the runtime (see the proxy issue; not yet implemented). */
package io.cri4j.proxy;
