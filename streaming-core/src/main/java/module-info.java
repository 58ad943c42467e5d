/**
 * kubelet-style streaming server and client for exec, attach and port-forward
 * ({@link io.cri4j.streaming}).
 */
module io.cri4j.streaming {
    requires transitive io.cri4j.cri;
    requires com.google.gson;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.codec.http;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport;
    requires org.slf4j;
    // optional: only a server given a registry records into it
    requires static micrometer.core;

    exports io.cri4j.streaming;
}
