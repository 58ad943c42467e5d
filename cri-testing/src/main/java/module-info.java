/**
 * Test support: the in-memory fake CRI runtime and its JUnit 5 extension
 * ({@link io.cri4j.testing.fake}), harnesses for real containerd, registries and peers
 * ({@link io.cri4j.testing.real}) and CRI conformance checks ({@link io.cri4j.testing.conformance}).
 * JUnit is the user's: {@code requires static}.
 */
module io.cri4j.testing {
    requires transitive io.cri4j.cri;
    requires transitive io.cri4j.hook;
    requires transitive io.cri4j.streaming;
    requires static transitive org.junit.jupiter.api;
    requires io.grpc.inprocess;
    requires com.google.gson;
    requires java.net.http;
    requires org.slf4j;
    // optional: only a fake given a registry records its hooks into it
    requires static micrometer.core;

    exports io.cri4j.testing.conformance;
    exports io.cri4j.testing.fake;
    exports io.cri4j.testing.real;
}
