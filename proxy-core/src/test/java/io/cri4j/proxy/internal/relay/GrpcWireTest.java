package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Metadata;
import io.grpc.Status;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The gRPC wire details the relay writes and reads itself when it answers a call. */
class GrpcWireTest {

    @Test
    void grpcTimeoutUnits() {
        assertThat(GrpcWire.timeoutNanos(null)).isEqualTo(-1);
        assertThat(GrpcWire.timeoutNanos("2H")).isEqualTo(TimeUnit.HOURS.toNanos(2));
        assertThat(GrpcWire.timeoutNanos("3M")).isEqualTo(TimeUnit.MINUTES.toNanos(3));
        assertThat(GrpcWire.timeoutNanos("10S")).isEqualTo(TimeUnit.SECONDS.toNanos(10));
        assertThat(GrpcWire.timeoutNanos("99999999m"))
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(99999999));
        assertThat(GrpcWire.timeoutNanos("7u")).isEqualTo(7_000);
        assertThat(GrpcWire.timeoutNanos("5n")).isEqualTo(5);
        for (String bad : new String[] {"", "S", "123456789S", "1x", "-1S", "1.5S"}) {
            assertThatThrownBy(() -> GrpcWire.timeoutNanos(bad))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("grpc-timeout");
        }
    }

    @Test
    void statusMessagesArePercentEncodedAsGrpcSays() {
        assertThat(GrpcWire.percentEncode("plain text: ok")).isEqualTo("plain text: ok");
        assertThat(GrpcWire.percentEncode("100%\nnext")).isEqualTo("100%25%0Anext");
        assertThat(GrpcWire.percentEncode("caf\u00e9")).isEqualTo("caf%C3%A9");
    }

    @Test
    void aStatusIsReadBackFromTheTrailersItWasWrittenTo() {
        Status s = Status.NOT_FOUND.withDescription("container x not found (100% gone, caf\u00e9)");
        Status back = GrpcWire.status(GrpcWire.trailers(s, null, true));
        assertThat(back.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(back.getDescription()).isEqualTo(s.getDescription());
        assertThat(GrpcWire.status(GrpcWire.trailers(Status.OK, null, false)).isOk()).isTrue();
        // a malformed escape stays as it came
        assertThat(GrpcWire.percentDecode("50%-ish %4")).isEqualTo("50%-ish %4");
        assertThat(GrpcWire.status(new DefaultHttp2Headers()).getCode())
                .isEqualTo(Status.Code.UNKNOWN);
        assertThat(GrpcWire.status(new DefaultHttp2Headers().add("grpc-status", "x")))
                .satisfies(
                        u -> {
                            assertThat(u.getCode()).isEqualTo(Status.Code.UNKNOWN);
                            assertThat(u.getDescription()).contains("'x'");
                        });
    }

    @Test
    void trailersCarryStatusMessageAndMetadataTrailersOnlyAlsoTheHeaders() {
        Metadata extra = new Metadata();
        extra.put(Metadata.Key.of("x-why", Metadata.ASCII_STRING_MARSHALLER), "hook");
        extra.put(
                Metadata.Key.of("x-detail-bin", Metadata.BINARY_BYTE_MARSHALLER),
                new byte[] {1, 2, 3});
        Http2Headers t =
                GrpcWire.trailers(Status.NOT_FOUND.withDescription("no pod \"x\""), extra, false);
        assertThat(t.get("grpc-status").toString()).isEqualTo("5");
        assertThat(t.get("grpc-message").toString()).isEqualTo("no pod \"x\"");
        assertThat(t.get("x-why").toString()).isEqualTo("hook");
        assertThat(t.get("x-detail-bin").toString()).isEqualTo("AQID");
        assertThat(t.status()).isNull();
        Http2Headers only = GrpcWire.trailers(Status.UNAVAILABLE, null, true);
        assertThat(only.status().toString()).isEqualTo("200");
        assertThat(only.get("content-type").toString()).isEqualTo("application/grpc");
        assertThat(only.get("grpc-status").toString()).isEqualTo("14");
        assertThat(only.contains("grpc-message")).isFalse();
    }

    @Test
    void requestHeadersBecomeMetadataWithoutPseudoOrReservedOnes() {
        Http2Headers h =
                new DefaultHttp2Headers()
                        .method("POST")
                        .path("/runtime.v1.RuntimeService/Version")
                        .set("content-type", "application/grpc")
                        .set("te", "trailers")
                        .set("grpc-timeout", "1S")
                        .set("user-agent", "grpc-go/1.60")
                        .set("x-trace", "abc")
                        .set("x-id-bin", "AQID")
                        .set("x-broken-bin", "!!!");
        Metadata md = GrpcWire.metadata(h);
        assertThat(md.keys()).containsExactlyInAnyOrder("x-trace", "x-id-bin");
        assertThat(md.get(Metadata.Key.of("x-trace", Metadata.ASCII_STRING_MARSHALLER)))
                .isEqualTo("abc");
        assertThat(md.get(Metadata.Key.of("x-id-bin", Metadata.BINARY_BYTE_MARSHALLER)))
                .containsExactly(1, 2, 3);
    }
}
