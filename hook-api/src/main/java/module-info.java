/**
 * Hooks and interceptors on CRI calls ({@link io.cri4j.hook}), the host side of hooks
 * ({@link io.cri4j.hook.host}), and the generated Koordinator {@code runtime.v1alpha1}, NRI
 * {@code nri.pkg.api.v1alpha1} and cri4j extension messages.
 *
 * <p>In-process hooks are found with {@link java.util.ServiceLoader}: a hook module
 * {@code provides io.cri4j.hook.Hook with ...} (or lists the class in {@code META-INF/services} on the
 * class path).
 */
// "module": the qualified exports name cri4j modules built after this one, which javac reports
// as not found while it compiles this one
@SuppressWarnings("module")
module io.cri4j.hook {
    requires transitive io.cri4j.cri;
    requires io.grpc.protobuf;
    requires com.google.gson;
    requires org.slf4j;
    // optional: only a chain given a registry records into it
    requires static micrometer.core;
    // optional: only a chain given an OpenTelemetry records spans into it
    requires static io.opentelemetry.api;
    requires static io.opentelemetry.context;

    exports io.cri4j.hook;
    exports io.cri4j.hook.cri;
    exports io.cri4j.hook.koordinator;
    exports io.cri4j.hook.host;
    exports io.cri4j.hook.koordinator.v1alpha1;
    exports io.cri4j.hook.extended.v1alpha1;
    exports io.cri4j.hook.nri.v1alpha1;

    // how an interceptor's failure becomes a status, and the blocking-interceptor adapter, which
    // the proxy's chain runner uses; the spans the proxy and the NRI module record (Tracing)
    exports io.cri4j.hook.internal to
            io.cri4j.proxy,
            io.cri4j.nri;

    uses io.cri4j.hook.Hook;
    uses io.cri4j.hook.AsyncHook;
}
