package io.cri4j.proxy.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.EmptyHttp2Headers;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import org.junit.jupiter.api.Test;

class HeaderBlocksTest {
    private static Http2Headers request(String path) {
        return new DefaultHttp2Headers()
                .method("POST")
                .scheme("http")
                .path(path)
                .authority("localhost")
                .add("content-type", "application/grpc")
                .add("te", "trailers")
                .add("user-agent", "grpc-java-netty/1.85.1")
                .add("grpc-timeout", "1999993u");
    }

    private static ByteBuf encode(DefaultHttp2HeadersEncoder encoder, Http2Headers h)
            throws Http2Exception {
        ByteBuf b = Unpooled.buffer();
        encoder.encodeHeaders(1, h, b);
        return b;
    }

    @Test
    void blocksOfAStatefulEncoderAreRelayableOnlyUntilTheyReferToTheTable() throws Exception {
        DefaultHttp2HeadersEncoder stateful = new DefaultHttp2HeadersEncoder();
        ByteBuf first = encode(stateful, request("/runtime.v1.RuntimeService/Version"));
        ByteBuf second = encode(stateful, request("/runtime.v1.RuntimeService/Version"));

        // the first block only inserts entries: the receiver decodes it alike whatever its table
        assertThat(HeaderBlocks.scan(first, 4096)).isEqualTo(4096);
        // the second one refers to them: it must be decoded and encoded again
        assertThat(HeaderBlocks.scan(second, 4096)).isEqualTo(-4096 - 1);
        assertThat(first.readerIndex()).isZero(); // scanning reads nothing
    }

    @Test
    void blocksOfAnEncoderWithoutTableAreRelayableAndTheSizeUpdateIsTracked() throws Exception {
        DefaultHttp2HeadersEncoder stateless = new DefaultHttp2HeadersEncoder();
        stateless.maxHeaderTableSize(0);
        ByteBuf first = encode(stateless, request("/a"));
        assertThat((int) first.getUnsignedByte(0)).isEqualTo(0x20); // "table size 0" first
        assertThat(HeaderBlocks.scan(first, 4096)).isZero();
        for (int i = 0; i < 3; i++) {
            assertThat(HeaderBlocks.scan(encode(stateless, request("/b" + i)), 0)).isZero();
        }
    }

    @Test
    void aSizeUpdateAboveZeroOrAMalformedBlockMustBeDecoded() {
        assertThat(
                        HeaderBlocks.scan(
                                Unpooled.wrappedBuffer(new byte[] {0x3f, (byte) 0xe1, 0x1f}), 0))
                .isEqualTo(-4096 - 1); // size update to 4096
        // a literal whose value runs past the end of the block
        assertThat(HeaderBlocks.scan(Unpooled.wrappedBuffer(new byte[] {0x04, 0x05, 'a'}), 0))
                .isEqualTo(-1);
        // an integer that never ends
        assertThat(
                        HeaderBlocks.scan(
                                Unpooled.wrappedBuffer(new byte[] {(byte) 0xff, (byte) 0xff}), 0))
                .isEqualTo(-1);
        // dynamic index 62
        assertThat(HeaderBlocks.scan(Unpooled.wrappedBuffer(new byte[] {(byte) 0xbe}), 0))
                .isEqualTo(-1);
        // static index 2 (:method GET)
        assertThat(HeaderBlocks.scan(Unpooled.wrappedBuffer(new byte[] {(byte) 0x82}), 0)).isZero();
    }

    @Test
    void decodesWhatItMustAndKeepsTheBytesOfWhatCanGoOnAsTheyAre() throws Exception {
        DefaultHttp2HeadersEncoder stateless =
                new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);
        stateless.maxHeaderTableSize(0);
        HeaderBlocks blocks =
                new HeaderBlocks(1 << 20, id -> id == 3, null, ByteBufAllocator.DEFAULT);
        ByteBuf b1 = encode(stateless, request("/x"));
        ByteBuf b1copy = b1.copy();
        // the sender's table may hold entries until its "size 0": decoded
        assertThat(blocks.decodeHeaders(1, b1).path().toString()).isEqualTo("/x");
        ByteBuf kept = blocks.take();
        assertThat(kept.readerIndex()).isEqualTo(HeaderBlocks.HEADROOM);
        assertThat(kept).isEqualTo(b1copy);
        kept.release();

        // from then on a block is only decoded for the streams that need it
        assertThat(blocks.decodeHeaders(5, encode(stateless, request("/y"))))
                .isSameAs(EmptyHttp2Headers.INSTANCE);
        ByteBuf relayed = blocks.take();
        Http2Headers decoded = new DefaultHttp2HeadersDecoder(true).decodeHeaders(5, relayed);
        assertThat(decoded.path().toString()).isEqualTo("/y");
        relayed.release();
        assertThat(blocks.decodeHeaders(3, encode(stateless, request("/z"))).path().toString())
                .isEqualTo("/z");
        blocks.drop();
        assertThat(blocks.take()).isNull();
    }

    @Test
    void aBlockThatReferencesTheTableIsDecodedAndNotKept() throws Exception {
        DefaultHttp2HeadersEncoder stateful = new DefaultHttp2HeadersEncoder();
        HeaderBlocks blocks = new HeaderBlocks(1 << 20, null, null, ByteBufAllocator.DEFAULT);
        blocks.decodeHeaders(1, encode(stateful, request("/a")));
        blocks.drop();
        Http2Headers h = blocks.decodeHeaders(3, encode(stateful, request("/a")));
        assertThat(h.path().toString()).isEqualTo("/a");
        assertThat(blocks.take()).isNull();
        // and a block the decoder rejects is reported, not kept
        assertThatThrownBy(
                        () ->
                                blocks.decodeHeaders(
                                        5,
                                        Unpooled.wrappedBuffer(
                                                new byte[] {(byte) 0xff, (byte) 0xff})))
                .isInstanceOf(Http2Exception.class);
        assertThat(blocks.take()).isNull();
    }

    @Test
    void findsThePathAsEncodedAndSkipsDecodingARequestKnownToBeRelayed() throws Exception {
        DefaultHttp2HeadersEncoder stateless =
                new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);
        stateless.maxHeaderTableSize(0);
        ByteBuf version = encode(stateless, request("/runtime.v1.RuntimeService/Version"));
        ByteBuf other = encode(stateless, request("/runtime.v1.RuntimeService/CreateContainer"));
        long at = HeaderBlocks.pathValue(version);
        assertThat(at).isPositive();
        ByteBuf encodedPath = version.slice((int) (at >>> 32), (int) at).copy();
        // the encoded value decodes to the path: a literal with name index 4 around it does too
        ByteBuf alone = Unpooled.buffer().writeByte(0x04).writeBytes(encodedPath.duplicate());
        assertThat(new DefaultHttp2HeadersDecoder(false).decodeHeaders(1, alone).path().toString())
                .isEqualTo("/runtime.v1.RuntimeService/Version");
        assertThat(HeaderBlocks.pathValue(Unpooled.wrappedBuffer(new byte[] {(byte) 0x84})))
                .as("static :path /")
                .isEqualTo(-1);

        HeaderBlocks blocks =
                new HeaderBlocks(
                        1 << 20,
                        null,
                        p -> p.equals(encodedPath) ? "relayed" : null,
                        ByteBufAllocator.DEFAULT);
        // "size 0" first: decoded (the table may have held entries before it)
        assertThat(blocks.decodeHeaders(1, version.copy()).path().toString())
                .isEqualTo("/runtime.v1.RuntimeService/Version");
        blocks.drop();
        ByteBuf second = encode(stateless, request("/runtime.v1.RuntimeService/Version"));
        assertThat(blocks.decodeHeaders(3, second)).isSameAs(EmptyHttp2Headers.INSTANCE);
        assertThat(blocks.takeKnown()).as("what the caller knows of the path").isEqualTo("relayed");
        assertThat(blocks.takeKnown()).isNull();
        ByteBuf kept = blocks.take();
        byte[] copy = new byte[kept.readableBytes()];
        kept.getBytes(kept.readerIndex(), copy);
        assertThat(HeaderBlocks.decodeLater(copy, 1 << 20).path().toString())
                .as("decoded later, on demand")
                .isEqualTo("/runtime.v1.RuntimeService/Version");
        assertThat(new DefaultHttp2HeadersDecoder(true).decodeHeaders(3, kept).path().toString())
                .as("the block kept to relay")
                .isEqualTo("/runtime.v1.RuntimeService/Version");
        kept.release();
        assertThat(
                        blocks.decodeHeaders(
                                        5,
                                        encode(
                                                stateless,
                                                request(
                                                        "/runtime.v1.RuntimeService/CreateContainer")))
                                .path()
                                .toString())
                .as("an unknown path is decoded")
                .isEqualTo("/runtime.v1.RuntimeService/CreateContainer");
        assertThat(blocks.takeKnown()).isNull();
        blocks.drop();
        other.release();
    }

    private static int status(byte[] block) {
        return HeaderBlocks.grpcStatus(Unpooled.wrappedBuffer(block));
    }

    @Test
    void readsGrpcStatusFromTheBytesOfABlockAsAnyEncoderWritesIt() {
        // plain, after other fields, as Netty (grpc-java) writes it
        for (int code : new int[] {0, 1, 9, 10, 16, 123456789}) {
            byte[] block =
                    Wire.block(
                            Wire.response()
                                    .add("grpc-message", "grpc-status: 5")
                                    .add("grpc-status", Integer.toString(code)));
            assertThat(status(block)).as("status %d", code).isEqualTo(code);
        }
        // Huffman-coded name and value, as grpc-go writes what is shorter so; "0" is 00000 and
        // EOS' 111; "12" is 00001 00010 and 111111; "789" is 011101 011110 011111 and 111111
        assertThat(status(RelayMetricsStatusTest.huffmanStatus(0x07))).isZero();
        assertThat(status(RelayMetricsStatusTest.huffmanStatus(0x08, 0xbf))).isEqualTo(12);
        byte[] b789 = RelayMetricsStatusTest.huffmanStatus(0x75, 0xe7, 0xff);
        assertThat(Wire.decode(b789).get("grpc-status")).hasToString("789");
        assertThat(status(b789)).isEqualTo(789);
        // the same literal with incremental indexing (0x40) and never-indexed (0x10)
        byte[] indexing = RelayMetricsStatusTest.huffmanStatus(0x08, 0xbf);
        indexing[0] = 0x40;
        assertThat(status(indexing)).isEqualTo(12);
        indexing[0] = 0x10;
        assertThat(status(indexing)).isEqualTo(12);
    }

    @Test
    void aBlockWithoutANumericGrpcStatusHasNone() {
        assertThat(status(Wire.block(Wire.response()))).isEqualTo(RelayMetrics.NO_STATUS);
        assertThat(status(Wire.block(Wire.response().add("grpc-statuses", "3"))))
                .isEqualTo(RelayMetrics.NO_STATUS);
        assertThat(status(Wire.block(Wire.trailers(0).set("grpc-status", "x1"))))
                .isEqualTo(RelayMetrics.NO_STATUS);
        assertThat(status(Wire.block(Wire.trailers(0).set("grpc-status", ""))))
                .isEqualTo(RelayMetrics.NO_STATUS);
        assertThat(status(Wire.block(Wire.trailers(0).set("grpc-status", "1234567890"))))
                .isEqualTo(RelayMetrics.NO_STATUS);
        // Huffman "a" (00011) is no digit; "0" with padding that is not EOS' ones
        assertThat(status(RelayMetricsStatusTest.huffmanStatus(0x1f)))
                .isEqualTo(RelayMetrics.NO_STATUS);
        assertThat(status(RelayMetricsStatusTest.huffmanStatus(0x06)))
                .isEqualTo(RelayMetrics.NO_STATUS);
        // a value that runs past the end of the block
        byte[] cut = RelayMetricsStatusTest.huffmanStatus(0x08, 0xbf);
        assertThat(status(java.util.Arrays.copyOf(cut, cut.length - 1)))
                .isEqualTo(RelayMetrics.NO_STATUS);
    }
}
