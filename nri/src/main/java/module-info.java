/**
 * {@link io.cri4j.nri.NriPlugin}: a hook served as an NRI plugin of containerd and CRI-O. The NRI
 * messages are {@code io.cri4j.hook.nri.v1alpha1}, in module {@code io.cri4j.hook}.
 */
module io.cri4j.nri {
    requires transitive io.cri4j.hook;
    requires io.netty.buffer;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.transport.unix.common;
    requires io.netty.transport.classes.epoll;
    requires org.slf4j;
    // optional: only a plugin or host given a registry records into it
    requires static micrometer.core;
    // optional: only a plugin given an OpenTelemetry records spans into it
    requires static io.opentelemetry.api;

    exports io.cri4j.nri;

    // ttrpc's generated frames: protobuf reads their accessors reflectively
    opens io.cri4j.nri.internal.proto to
            com.google.protobuf;
}
