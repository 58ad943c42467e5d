/**
 * CRI bindings and transport: the generated {@code runtime.v1} and {@code runtime.v1alpha2} messages
 * and stubs, endpoints, client channels and servers on unix sockets ({@link io.cri4j.cri}).
 *
 * <p>The generated stubs' API is gRPC's and protobuf's (their future stubs return Guava's
 * {@code ListenableFuture}), and {@link io.cri4j.cri.CriChannels#builder} returns grpc-netty's builder, so
 * those modules are read by whoever reads this one. On the module path,
 * Netty's native epoll transport is a module nothing requires: add it with
 * {@code --add-modules io.netty.transport.epoll.linux.x86_64} (or {@code ...linux.aarch_64}).
 */
// "module": the qualified exports name cri4j modules built after this one, which javac reports
// as not found while it compiles this one
@SuppressWarnings("module")
module io.cri4j.cri {
    requires transitive com.google.protobuf;
    requires transitive io.grpc;
    requires transitive io.grpc.stub;
    requires transitive com.google.common;
    requires transitive io.grpc.netty;
    requires io.grpc.protobuf;
    requires io.netty.common;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.codec.http;
    requires io.netty.transport;
    requires io.netty.transport.unix.common;
    requires io.netty.transport.classes.epoll;
    requires io.netty.transport.classes.kqueue;
    requires org.slf4j;
    // What the gRPC and Guava jars need at run time (grpc-netty: Netty's HTTP/2 codec and proxy
    // handlers;
    // grpc-core: Gson; Guava: failureaccess). As automatic modules they require nothing, so on the
    // module path
    // these explicit modules are resolved only because this module requires them.
    requires io.netty.codec.http2;
    requires io.netty.handler.proxy;
    requires com.google.gson;
    requires com.google.common.util.concurrent.internal;

    exports io.cri4j.cri;
    exports io.cri4j.cri.v1;
    exports io.cri4j.cri.v1alpha2;

    // transport helpers (error descriptions, socket files, event loops) the other cri4j modules
    // share
    exports io.cri4j.cri.internal to
            io.cri4j.hook,
            io.cri4j.proxy,
            io.cri4j.nri,
            io.cri4j.streaming,
            io.cri4j.imagepull;
    // the one HTTP/1.1 server of the progress, metrics and health endpoints (and the request
    // deadline the streaming server shares)
    exports io.cri4j.cri.internal.http to
            io.cri4j.streaming,
            io.cri4j.imagepull,
            io.cri4j.proxy,
            io.cri4j.nri;
    // containerd's content service: the image puller's progress, the fake runtime's content store
    exports io.cri4j.cri.internal.containerd to
            io.cri4j.imagepull,
            io.cri4j.testing;

    // generated messages: protobuf reads their accessors reflectively (toString, equals,
    // TextFormat)
    opens io.cri4j.cri.internal.containerd to
            com.google.protobuf;
}
