package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.proxy.internal.relay.Wire.Frame;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A relayed call's gRPC status as the metrics count it: read from the block that ends the call
 * (trailers, or a trailers-only answer) without decoding any block of the call, while blocks that
 * use the runtime's dynamic table are still decoded (the relay's HPACK state stays in step).
 */
class RelayMetricsStatusTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final RelayHarness h = new RelayHarness(RelayMetrics.of(registry));

    @AfterEach
    void close() {
        h.close();
    }

    private double calls(String code) {
        Counter c =
                registry.find("cri4j.proxy.calls")
                        .tag("method", "Version")
                        .tag("kind", "relayed")
                        .tag("code", code)
                        .counter();
        return c == null ? 0 : c.count();
    }

    /** Blocks the backend leg handed to its HPACK decoder so far. */
    private int decoded() {
        return h.relay.up.blocks.decoded;
    }

    /**
     * A first call, answered: the runtime's first block starts with "size 0" and is decoded (its
     * table may have held entries before), as every connection's first block is.
     */
    private void firstCall() {
        h.ready();
        h.call(1, Wire.message(0, 0));
        h.fromBackend(Wire.headers(1, Wire.trailers(0), true));
        h.client.all();
        assertThat(decoded()).isEqualTo(1);
    }

    @Test
    void aRelayedCallsStatusIsReadFromItsTrailersAndNoBlockOfTheCallIsDecoded() {
        firstCall();
        h.call(3, Wire.message(2, 1));
        byte[] response = Wire.block(Wire.response());
        byte[] trailers = Wire.block(Wire.trailers(0).add("grpc-message", "fine"));
        h.fromBackend(Wire.frame(Wire.HEADERS, Wire.END_HEADERS, 3, response));
        assertThat(decoded()).as("the response headers, which do not end the call").isEqualTo(1);
        h.fromBackend(
                Wire.data(3, Wire.message(1, 1), false),
                Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 3, trailers));

        assertThat(decoded()).as("the trailers either").isEqualTo(1);
        assertThat(calls("OK")).isEqualTo(2);
        List<Frame> down = h.client.frames();
        assertThat(down)
                .extracting(Frame::type)
                .containsExactly(Wire.HEADERS, Wire.DATA, Wire.HEADERS);
        assertThat(down.get(0).payload()).isEqualTo(response);
        assertThat(down.get(2).payload()).isEqualTo(trailers);
    }

    @Test
    void aTrailersOnlyAnswersStatusIsReadFromItsOnlyBlock() {
        firstCall();
        h.call(3, Wire.message(0, 0));
        byte[] only = Wire.block(Wire.response().add("grpc-status", "5").add("grpc-message", "no"));
        h.fromBackend(Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 3, only));

        assertThat(decoded()).isEqualTo(1);
        assertThat(calls("NOT_FOUND")).isEqualTo(1);
        assertThat(h.client.frames().get(0).payload()).isEqualTo(only);
    }

    @Test
    void aHuffmanCodedStatusAsGrpcGoWritesItIsRead() {
        firstCall();
        // grpc-status: 12, name and value Huffman-coded, literal without indexing
        byte[] huffman = huffmanStatus(0x08, 0xbf);
        assertThat(Wire.decode(huffman).get("grpc-status")).hasToString("12");
        h.call(3, Wire.message(0, 0));
        h.fromBackend(Wire.frame(Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, 3, huffman));
        assertThat(calls("UNIMPLEMENTED")).isEqualTo(1);
        assertThat(decoded()).isEqualTo(1);
        assertThat(h.client.frames().get(0).payload()).isEqualTo(huffman);
    }

    /** {@code grpc-status} with a Huffman-coded name and the Huffman-coded value {@code value}. */
    static byte[] huffmanStatus(int... value) {
        ByteBuf b = Unpooled.buffer();
        b.writeByte(0x00).writeByte(0x88);
        b.writeBytes(new byte[] {(byte) 0x9a, (byte) 0xca, (byte) 0xc8, (byte) 0xb2});
        b.writeBytes(new byte[] {0x12, 0x34, (byte) 0xda, (byte) 0x8f});
        b.writeByte(0x80 | value.length);
        for (int v : value) {
            b.writeByte(v);
        }
        return ByteBufUtil.getBytes(b);
    }

    @Test
    void blocksThatUseTheRuntimesDynamicTableAreDecodedAndTheirStatusCounted() throws Exception {
        h.ready();
        // a runtime that has not taken the relay's "table size 0" yet: a 4096-byte table
        DefaultHttp2HeadersEncoder stateful = new DefaultHttp2HeadersEncoder();
        Http2Headers only = Wire.response().add("grpc-status", "3");

        // inserts its fields into the table
        h.call(1, Wire.message(0, 0));
        h.fromBackend(trailersOnly(stateful, 1, only));
        assertThat(decoded()).isEqualTo(1);
        assertThat(h.client.frames().get(0).headers().get("grpc-status")).hasToString("3");

        // refers to them: decoded, and the client gets it encoded again, without the table
        h.call(3, Wire.message(0, 0));
        h.fromBackend(trailersOnly(stateful, 3, only));
        assertThat(decoded()).isEqualTo(2);
        Frame reencoded = h.client.frames().get(0);
        assertThat(reencoded.headers().get("grpc-status")).hasToString("3");
        assertThat(HeaderBlocks.scan(Unpooled.wrappedBuffer(reencoded.payload()), 0)).isZero();

        // the runtime takes "size 0": that block is still decoded (it empties the table) ...
        stateful.maxHeaderTableSize(0);
        h.call(5, Wire.message(0, 0));
        h.fromBackend(trailersOnly(stateful, 5, only));
        assertThat(decoded()).isEqualTo(3);
        assertThat(h.client.frames().get(0).headers().get("grpc-status")).hasToString("3");

        // ... and from then on no block is
        h.call(7, Wire.message(0, 0));
        ByteBuf last = trailersOnly(stateful, 7, only);
        byte[] lastBlock = ByteBufUtil.getBytes(last, 9, last.readableBytes() - 9);
        h.fromBackend(last);
        assertThat(decoded()).isEqualTo(3);
        assertThat(h.client.frames().get(0).payload()).isEqualTo(lastBlock);

        assertThat(calls("INVALID_ARGUMENT")).isEqualTo(4);
        assertThat(h.relay.up.blocks.take()).isNull();
    }

    private static ByteBuf trailersOnly(
            DefaultHttp2HeadersEncoder encoder, int stream, Http2Headers h) throws Http2Exception {
        ByteBuf b = Unpooled.buffer();
        encoder.encodeHeaders(stream, h, b);
        return Wire.frame(
                Wire.HEADERS, Wire.END_HEADERS | Wire.END_STREAM, stream, ByteBufUtil.getBytes(b));
    }
}
