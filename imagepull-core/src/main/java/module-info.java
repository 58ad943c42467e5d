/**
 * Image pulls with workers, retries, deadlines and byte progress, pre-warming, and the progress of
 * pulls others make ({@link io.cri4j.imagepull}); {@code cri4j.imagepull.v1} messages in
 * {@code io.cri4j.imagepull.v1}.
 */
module io.cri4j.imagepull {
    requires transitive io.cri4j.cri;
    requires transitive io.cri4j.streaming;
    requires io.grpc.protobuf;
    requires com.google.gson;
    requires io.netty.buffer;
    requires io.netty.codec.http;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.transport.unix.common;
    requires io.netty.transport.classes.epoll;
    requires org.slf4j;
    // optional: only a puller or observer given a registry records into it
    requires static micrometer.core;

    exports io.cri4j.imagepull;
    exports io.cri4j.imagepull.v1;
}
