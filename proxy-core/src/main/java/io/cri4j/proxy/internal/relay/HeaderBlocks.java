package io.cri4j.proxy.internal.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.EmptyHttp2Headers;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersDecoder;
import java.util.function.IntPredicate;

/**
 * The header decoder of one relay leg. Besides decoding a header block (HPACK, RFC 7541) it
 * keeps the block's bytes when they can be sent on the other leg as they are: when the block
 * refers to no entry of the sender's dynamic table, the receiver on the other leg decodes it to
 * the same headers whatever its own table holds. The proxy asks both its peers for a dynamic
 * table of size 0, so after their first blocks every block is such a block, and a relayed
 * call's headers are neither decoded nor encoded again.
 *
 * <p>Blocks are decoded while the sender's table may hold entries (so the decoder's table stays
 * in step), for every block when {@code mustDecode} is null, and for the streams it names. With
 * {@code knownPath}, a block whose {@code :path} value, as encoded, it knows is not decoded
 * either: such a request is routed by those bytes alone (a client encodes the same path the same
 * way every time), and its headers are decoded later only if someone asks for them.
 */
public final class HeaderBlocks implements Http2HeadersDecoder {
    /** Room kept in front of a kept block for a frame header and one size-update byte. */
    static final int HEADROOM = 10;

    /** HPACK's static table has 61 entries; larger indices are in the dynamic table. */
    private static final int STATIC_ENTRIES = 61;

    private static final int SETTINGS_DEFAULT_TABLE = 4096;

    private final DefaultHttp2HeadersDecoder decoder;
    private final IntPredicate mustDecode;
    private final java.util.function.Function<ByteBuf, Object> knownPath;
    private final ByteBufAllocator alloc;

    /** The sender's dynamic table capacity, as its size updates set it. */
    private long capacity = SETTINGS_DEFAULT_TABLE;

    private ByteBuf kept;
    private Object known;

    /** Blocks handed to the HPACK decoder so far. */
    int decoded;

    /**
     * @param mustDecode the streams whose blocks are decoded even when they can be relayed as they
     *     are; null: every block
     * @param knownPath told a block's encoded {@code :path} value: what the caller knows of such a
     *     request (then the block is not decoded; {@link #takeKnown()} hands it back), or null
     *     (the block is decoded; a null function: no such shortcut)
     */
    HeaderBlocks(
            long maxHeaderListSize,
            IntPredicate mustDecode,
            java.util.function.Function<ByteBuf, Object> knownPath,
            ByteBufAllocator alloc) {
        this.decoder = new DefaultHttp2HeadersDecoder(true, maxHeaderListSize);
        this.mustDecode = mustDecode;
        this.knownPath = knownPath;
        this.alloc = alloc;
    }

    @Override
    public Http2Headers decodeHeaders(int streamId, ByteBuf block) throws Http2Exception {
        drop();
        known = null;
        long before = capacity;
        long after = scan(block, capacity);
        boolean stateless = after >= 0;
        capacity = stateless ? after : -after - 1;
        if (stateless) {
            int n = block.readableBytes();
            kept = alloc.buffer(HEADROOM + n);
            kept.writerIndex(HEADROOM).readerIndex(HEADROOM);
            kept.writeBytes(block, block.readerIndex(), n);
        }
        if (stateless && before == 0 && knownPath != null) {
            long path = pathValue(block);
            if (path >= 0) {
                known = knownPath.apply(block.slice((int) (path >>> 32), (int) path));
                if (known != null) {
                    return EmptyHttp2Headers.INSTANCE;
                }
            }
        }
        if (!stateless || before > 0 || mustDecode == null || mustDecode.test(streamId)) {
            decoded++;
            return decoder.decodeHeaders(streamId, block);
        }
        return EmptyHttp2Headers.INSTANCE;
    }

    /**
     * Where the {@code :path} value of a block is, as encoded (its string literal with the length
     * prefix): index in the upper 32 bits, length in the lower; -1 when the block has no literal
     * {@code :path} field (static entries 4 and 5 name it) or is malformed.
     */
    static long pathValue(ByteBuf b) {
        int i = b.readerIndex();
        int end = b.writerIndex();
        while (i < end) {
            int c = b.getUnsignedByte(i);
            int prefix = (c & 0x80) != 0 ? 7 : (c & 0x40) != 0 ? 6 : (c & 0x20) != 0 ? 5 : 4;
            long v = integer(b, i, end, prefix);
            if (v < 0) {
                return -1;
            }
            i = (int) (v >>> 32);
            int index = (int) v;
            if (prefix == 7 || prefix == 5) {
                continue; // an indexed field or a table size update: no literal value here
            }
            if (index == 0) {
                i = skipString(b, i, end); // a literal name: not how encoders write ":path"
                if (i < 0) {
                    return -1;
                }
            }
            int valueAt = i;
            i = skipString(b, i, end);
            if (i < 0) {
                return -1;
            }
            if (index == 4 || index == 5) {
                return ((long) valueAt << 32) | (i - valueAt);
            }
        }
        return -1;
    }

    /**
     * The last block's bytes (after {@link #HEADROOM} bytes of room), when they can be sent on as
     * they are, else null; the caller owns the buffer.
     */
    ByteBuf take() {
        ByteBuf b = kept;
        kept = null;
        return b;
    }

    /** What {@code knownPath} said of the last block's path (null if it was decoded); clears it. */
    Object takeKnown() {
        Object k = known;
        known = null;
        return k;
    }

    /**
     * Decodes a block that was not decoded when it came: one that refers to no dynamic table
     * entry, so it decodes alike at any time. Any thread.
     */
    public static Http2Headers decodeLater(byte[] block, long maxHeaderListSize)
            throws Http2Exception {
        return decodeLater(Unpooled.wrappedBuffer(block), maxHeaderListSize);
    }

    /** {@link #decodeLater(byte[], long)} from a buffer (its readable bytes; consumes them). */
    public static Http2Headers decodeLater(ByteBuf block, long maxHeaderListSize)
            throws Http2Exception {
        return new DefaultHttp2HeadersDecoder(true, maxHeaderListSize).decodeHeaders(0, block);
    }

    /** Releases a block nobody took. */
    void drop() {
        if (kept != null) {
            kept.release();
            kept = null;
        }
    }

    @Override
    public Configuration configuration() {
        return decoder.configuration();
    }

    /** {@code grpc-status} as a string literal's bytes, Huffman-coded (RFC 7541 appendix B). */
    private static final byte[] GRPC_STATUS_HUFFMAN = {
        (byte) 0x9a, (byte) 0xca, (byte) 0xc8, (byte) 0xb2, 0x12, 0x34, (byte) 0xda, (byte) 0x8f
    };

    private static final byte[] GRPC_STATUS = {
        'g', 'r', 'p', 'c', '-', 's', 't', 'a', 't', 'u', 's'
    };

    /**
     * The {@code grpc-status} of a block that refers to no dynamic-table entry (one {@link #take}
     * handed out), read from its bytes without decoding them: no header is built, nothing is
     * allocated. HPACK's static table has no {@code grpc-status}, so in such a block it is a
     * literal with a literal name, plain or Huffman-coded. {@link RelayMetrics#NO_STATUS} when
     * the block has none, its value is not a decimal number, or the block is malformed.
     */
    static int grpcStatus(ByteBuf b) {
        int i = b.readerIndex();
        int end = b.writerIndex();
        while (i < end) {
            int c = b.getUnsignedByte(i);
            int prefix = (c & 0x80) != 0 ? 7 : (c & 0x40) != 0 ? 6 : (c & 0x20) != 0 ? 5 : 4;
            long v = integer(b, i, end, prefix);
            if (v < 0) {
                return RelayMetrics.NO_STATUS;
            }
            i = (int) (v >>> 32);
            if (prefix == 7 || prefix == 5) {
                continue; // an indexed field or a table size update
            }
            boolean named = false;
            if ((int) v == 0) {
                int nameAt = i;
                i = skipString(b, i, end);
                if (i < 0) {
                    return RelayMetrics.NO_STATUS;
                }
                named = isGrpcStatus(b, nameAt, i);
            }
            int valueAt = i;
            i = skipString(b, i, end);
            if (i < 0) {
                return RelayMetrics.NO_STATUS;
            }
            if (named) {
                return decimal(b, valueAt, i);
            }
        }
        return RelayMetrics.NO_STATUS;
    }

    /** Whether the string literal from {@code at} to {@code end} is {@code grpc-status}. */
    private static boolean isGrpcStatus(ByteBuf b, int at, int end) {
        byte[] name = (b.getByte(at) & 0x80) != 0 ? GRPC_STATUS_HUFFMAN : GRPC_STATUS;
        int from = (int) (integer(b, at, end, 7) >>> 32);
        if (end - from != name.length) {
            return false;
        }
        for (int k = 0; k < name.length; k++) {
            if (b.getByte(from + k) != name[k]) {
                return false;
            }
        }
        return true;
    }

    /**
     * The decimal number a string literal holds (plain, or Huffman-coded: digits are codes of 5
     * and 6 bits), or {@link RelayMetrics#NO_STATUS}.
     */
    private static int decimal(ByteBuf b, int at, int end) {
        boolean huffman = (b.getByte(at) & 0x80) != 0;
        int from = (int) (integer(b, at, end, 7) >>> 32);
        int n = 0;
        int digits = 0;
        if (!huffman) {
            for (int k = from; k < end; k++) {
                int d = b.getByte(k) - '0';
                if (d < 0 || d > 9 || ++digits > 9) {
                    return RelayMetrics.NO_STATUS;
                }
                n = n * 10 + d;
            }
            return digits == 0 ? RelayMetrics.NO_STATUS : n;
        }
        long bits = 0;
        int have = 0;
        int k = from;
        while (true) {
            while (have < 6 && k < end) {
                bits = bits << 8 | b.getUnsignedByte(k++);
                have += 8;
            }
            if (have == 0) {
                break;
            }
            int d = -1;
            int used = 0;
            if (have >= 5) {
                int five = (int) (bits >>> (have - 5)) & 0x1f;
                if (five <= 2) { // '0' 00000, '1' 00001, '2' 00010
                    d = five;
                    used = 5;
                }
            }
            if (d < 0 && have >= 6) {
                int six = (int) (bits >>> (have - 6)) & 0x3f;
                if (six >= 0x19 && six <= 0x1f) { // '3' 011001 .. '9' 011111
                    d = six - 0x19 + 3;
                    used = 6;
                }
            }
            if (d < 0) {
                // the padding: fewer than 8 bits, all ones (the start of EOS), and at the end
                int mask = (1 << have) - 1;
                if (k == end && have < 8 && ((int) bits & mask) == mask) {
                    break;
                }
                return RelayMetrics.NO_STATUS;
            }
            have -= used;
            bits &= (1L << have) - 1;
            if (++digits > 9) {
                return RelayMetrics.NO_STATUS;
            }
            n = n * 10 + d;
        }
        return digits == 0 ? RelayMetrics.NO_STATUS : n;
    }

    /**
     * Walks a header block's representations without decoding them. Returns the sender's table
     * capacity after the block when the block uses no dynamic-table entry and sets no capacity
     * above 0, else {@code -capacity - 1} (the block must be decoded; also for a malformed block,
     * which the decoder then reports).
     */
    static long scan(ByteBuf b, long capacity) {
        int i = b.readerIndex();
        int end = b.writerIndex();
        boolean stateless = true;
        while (i < end) {
            int c = b.getUnsignedByte(i);
            int prefix;
            if ((c & 0x80) != 0) {
                prefix = 7; // indexed field
            } else if ((c & 0x40) != 0) {
                prefix = 6; // literal, incremental indexing
            } else if ((c & 0x20) != 0) {
                prefix = 5; // dynamic table size update
            } else {
                prefix = 4; // literal without indexing / never indexed
            }
            long v = integer(b, i, end, prefix);
            if (v < 0) {
                return -capacity - 1;
            }
            i = (int) (v >>> 32);
            int value = (int) v;
            if (prefix == 7) {
                if (value == 0 || value > STATIC_ENTRIES) {
                    stateless = false;
                }
                continue;
            }
            if (prefix == 5) {
                capacity = value;
                if (value > 0) {
                    stateless = false;
                }
                continue;
            }
            if (value > STATIC_ENTRIES) {
                stateless = false;
            }
            if (value == 0) {
                i = skipString(b, i, end); // the literal name
                if (i < 0) {
                    return -capacity - 1;
                }
            }
            i = skipString(b, i, end); // the value
            if (i < 0) {
                return -capacity - 1;
            }
        }
        return stateless ? capacity : -capacity - 1;
    }

    /**
     * Reads an HPACK integer with an {@code prefix}-bit prefix at {@code i}: the index after it in
     * the upper 32 bits and the value in the lower, or -1 when it runs past the end or overflows.
     */
    private static long integer(ByteBuf b, int i, int end, int prefix) {
        int mask = (1 << prefix) - 1;
        int value = b.getUnsignedByte(i++) & mask;
        if (value == mask) {
            int shift = 0;
            int next;
            do {
                if (i >= end || shift > 21) {
                    return -1;
                }
                next = b.getUnsignedByte(i++);
                value += (next & 0x7f) << shift;
                shift += 7;
            } while ((next & 0x80) != 0);
        }
        return ((long) i << 32) | (value & 0xffffffffL);
    }

    private static int skipString(ByteBuf b, int i, int end) {
        if (i >= end) {
            return -1;
        }
        long v = integer(b, i, end, 7);
        if (v < 0) {
            return -1;
        }
        long next = (v >>> 32) + (v & 0xffffffffL);
        return next > end ? -1 : (int) next;
    }
}
