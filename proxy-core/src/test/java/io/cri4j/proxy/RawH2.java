package io.cri4j.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An HTTP/2 client that writes whatever frames a test wants, rules broken included, on a unix
 * socket with plain blocking I/O; a reader thread keeps every frame the server sends.
 */
final class RawH2 implements AutoCloseable {
    static final int DATA = 0,
            HEADERS = 1,
            RST = 3,
            SETTINGS = 4,
            PING = 6,
            GOAWAY = 7,
            WINDOW_UPDATE = 8;
    static final long PROTOCOL_ERROR = 0x1, ENHANCE_YOUR_CALM = 0xb;

    /** A frame from the server; {@code type == -1}: the connection ended. */
    record Frame(int type, int flags, int stream, byte[] payload) {
        long pingData() {
            return ByteBuffer.wrap(payload).getLong();
        }

        int goAwayLastStream() {
            return ByteBuffer.wrap(payload).getInt() & 0x7fffffff;
        }

        long goAwayCode() {
            return ByteBuffer.wrap(payload, 4, 4).getInt() & 0xffffffffL;
        }

        String goAwayDebug() {
            return new String(payload, 8, payload.length - 8, StandardCharsets.UTF_8);
        }

        boolean ack() {
            return (flags & 1) != 0;
        }
    }

    private final SocketChannel ch;
    final BlockingQueue<Frame> frames = new LinkedBlockingQueue<>();
    private final Thread reader;
    private final DefaultHttp2HeadersEncoder encoder =
            new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, true);

    RawH2(Path socket) throws IOException {
        ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        write(
                ByteBuffer.wrap(
                        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
        frame(SETTINGS, 0, 0, new byte[0]);
        reader = new Thread(this::read, "raw-h2-reader");
        reader.setDaemon(true);
        reader.start();
    }

    private void read() {
        ByteBuffer header = ByteBuffer.allocate(9);
        try {
            while (true) {
                header.clear();
                if (!fill(header)) {
                    break;
                }
                header.flip();
                int len =
                        (header.get() & 0xff) << 16
                                | (header.get() & 0xff) << 8
                                | header.get() & 0xff;
                int type = header.get() & 0xff;
                int flags = header.get() & 0xff;
                int stream = header.getInt() & 0x7fffffff;
                ByteBuffer payload = ByteBuffer.allocate(len);
                if (!fill(payload)) {
                    break;
                }
                if (type == SETTINGS && (flags & 1) == 0) {
                    try {
                        frame(
                                SETTINGS,
                                1,
                                0,
                                new byte[0]); // ack the server's settings, as every client does
                    } catch (IOException closed) {
                        // the server already ended the connection: keep reading what it sent before
                    }
                }
                frames.add(new Frame(type, flags, stream, payload.array()));
            }
        } catch (IOException e) {
            // the connection ended
        }
        frames.add(new Frame(-1, 0, 0, new byte[0]));
    }

    private boolean fill(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                return false;
            }
        }
        return true;
    }

    private synchronized void write(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    void frame(int type, int flags, int stream, byte[] payload) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(9 + payload.length);
        b.put((byte) (payload.length >>> 16))
                .put((byte) (payload.length >>> 8))
                .put((byte) payload.length)
                .put((byte) type)
                .put((byte) flags)
                .putInt(stream)
                .put(payload)
                .flip();
        write(b);
    }

    void ping(long data) throws IOException {
        frame(PING, 0, 0, ByteBuffer.allocate(8).putLong(data).array());
    }

    /** HEADERS of a gRPC Version request (v1) on {@code stream}, then its empty message. */
    void versionCall(int stream) throws Exception {
        Http2Headers h =
                new DefaultHttp2Headers()
                        .method("POST")
                        .scheme("http")
                        .path("/runtime.v1.RuntimeService/Version")
                        .authority("localhost")
                        .add("content-type", "application/grpc")
                        .add("te", "trailers");
        ByteBuf block = Unpooled.buffer();
        encoder.encodeHeaders(stream, h, block);
        frame(HEADERS, 0x4, stream, ByteBufUtil.getBytes(block));
        block.release();
        frame(DATA, 0x1, stream, new byte[5]); // an empty VersionRequest, END_STREAM
    }

    /** The next frame that is not SETTINGS or WINDOW_UPDATE, within 10 s; null if none came. */
    Frame next() throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            long left = end - System.nanoTime();
            Frame f = left <= 0 ? null : frames.poll(left, TimeUnit.NANOSECONDS);
            if (f == null || (f.type() != SETTINGS && f.type() != WINDOW_UPDATE)) {
                return f;
            }
        }
    }

    @Override
    public void close() throws IOException {
        ch.close();
    }
}
