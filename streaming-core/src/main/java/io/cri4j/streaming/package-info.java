/** Kubelet-compatible streaming server and client (see the streaming issue; not yet implemented). */
package io.cri4j.streaming;
