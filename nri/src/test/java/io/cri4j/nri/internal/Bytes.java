package io.cri4j.nri.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Consumer;

/** Test helpers: hex, and feeding a byte string cut at every boundary. */
public final class Bytes {

    private Bytes() {}

    public static byte[] hex(String hex) {
        return HexFormat.of().parseHex(hex.replaceAll("\\s+", ""));
    }

    public static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    public static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /**
     * The ways to deliver {@code bytes} that a socket may produce: whole, cut once at every
     * position, and one byte at a time.
     */
    public static List<List<ByteBuf>> cuts(byte[] bytes) {
        List<List<ByteBuf>> all = new ArrayList<>();
        all.add(List.of(Unpooled.wrappedBuffer(bytes)));
        for (int i = 1; i < bytes.length; i++) {
            all.add(
                    List.of(
                            Unpooled.wrappedBuffer(bytes, 0, i),
                            Unpooled.wrappedBuffer(bytes, i, bytes.length - i)));
        }
        List<ByteBuf> single = new ArrayList<>();
        for (int i = 0; i < bytes.length; i++) {
            single.add(Unpooled.wrappedBuffer(bytes, i, 1));
        }
        all.add(single);
        return all;
    }

    /** Runs {@code check} once per way of cutting {@code bytes}, feeding the pieces to {@code feed}. */
    public static void forEveryCut(byte[] bytes, Consumer<List<ByteBuf>> check) {
        for (List<ByteBuf> pieces : cuts(bytes)) {
            check.accept(pieces);
        }
    }
}
