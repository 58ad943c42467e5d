/**
 * {@link io.cri4j.proxy.CriProxy}: a CRI proxy between kubelet and the runtime that runs
 * interceptors, hosts lifecycle hooks as an NRI host, and relays everything else.
 */
module io.cri4j.proxy {
    requires transitive io.cri4j.cri;
    requires transitive io.cri4j.hook;
    requires transitive io.cri4j.imagepull;
    requires io.grpc.netty;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.codec.http2;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.transport.unix.common;
    requires com.google.gson;
    requires org.slf4j;
    // optional: only a proxy given a registry records into it
    requires static micrometer.core;
    // optional: only a proxy given an OpenTelemetry records spans into it
    requires static io.opentelemetry.api;

    exports io.cri4j.proxy;
}
