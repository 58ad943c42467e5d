/**
 * {@link io.cri4j.proxy.CriProxy}: a CRI proxy between kubelet and the runtime that runs
 * interceptors and runtime hooks on the calls they want and relays everything else as raw bytes.
 */
package io.cri4j.proxy;
