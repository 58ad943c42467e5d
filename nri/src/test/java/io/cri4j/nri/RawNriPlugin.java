package io.cri4j.nri;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.proto.Response;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * A stand-in NRI plugin speaking raw bytes on a unix socket, for tests of what a host does with a
 * plugin that misbehaves; well-behaved plugins are NRI's Go plugins. Blocking.
 */
final class RawNriPlugin implements AutoCloseable {

    record Frame(int conn, int stream, int type, byte[] data) {
        Request request() throws IOException {
            return Request.parseFrom(data);
        }

        Response response() throws IOException {
            return Response.parseFrom(data);
        }
    }

    private final SocketChannel ch;
    private final Map<Integer, ByteArrayOutputStream> partial = new HashMap<>();
    private int nextStream = 1;

    RawNriPlugin(Path socket) throws IOException {
        ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
    }

    /** Calls RegisterPlugin on mux connection 2 and returns the runtime's answer. */
    Response register(String name, String index) throws IOException {
        return register(name, index, "");
    }

    /** Calls RegisterPlugin naming the plugin's NRI version (v0.12 plugins send it). */
    Response register(String name, String index, String nriVersion) throws IOException {
        return call(
                2,
                "nri.pkg.api.v1alpha1.Runtime",
                "RegisterPlugin",
                RegisterPluginRequest.newBuilder()
                        .setPluginName(name)
                        .setPluginIdx(index)
                        .setNRIVersion(nriVersion)
                        .build());
    }

    /** Calls a method of the runtime service and returns its answer. */
    Response call(int conn, String service, String method, Message payload) throws IOException {
        int stream = nextStream;
        nextStream += 2;
        byte[] req =
                Request.newBuilder()
                        .setService(service)
                        .setMethod(method)
                        .setPayload(payload.toByteString())
                        .setTimeoutNano(2_000_000_000L)
                        .build()
                        .toByteArray();
        writeMux(conn, new TtrpcFrame(stream, TtrpcFrame.REQUEST, 0, req).encode());
        Frame f = read();
        if (f.conn() != conn || f.stream() != stream || f.type() != TtrpcFrame.RESPONSE) {
            throw new IOException("expected the answer on stream " + stream + ", got " + f);
        }
        return f.response();
    }

    /** Reads the runtime's next request on mux connection 1 and checks its method. */
    Frame expect(String method) throws IOException {
        Frame f = read();
        if (f.conn() != 1
                || f.type() != TtrpcFrame.REQUEST
                || !f.request().getMethod().equals(method)) {
            throw new IOException(
                    "expected a "
                            + method
                            + " request on connection 1, got "
                            + f
                            + " "
                            + (f.type() == TtrpcFrame.REQUEST ? f.request().getMethod() : ""));
        }
        return f;
    }

    /** Answers a request of the runtime. */
    void answer(Frame request, Message payload) throws IOException {
        writeMux(
                1,
                new TtrpcFrame(
                                request.stream(),
                                TtrpcFrame.RESPONSE,
                                0,
                                Response.newBuilder()
                                        .setPayload(ByteString.copyFrom(payload.toByteArray()))
                                        .build()
                                        .toByteArray())
                        .encode());
    }

    void writeMux(int conn, byte[] payload) throws IOException {
        write(
                ByteBuffer.allocate(8 + payload.length)
                        .putInt(conn)
                        .putInt(payload.length)
                        .put(payload)
                        .array());
    }

    void write(byte[] raw) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(raw);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** The next whole ttrpc frame, on whichever mux connection it completes. */
    Frame read() throws IOException {
        while (true) {
            for (Map.Entry<Integer, ByteArrayOutputStream> e : partial.entrySet()) {
                byte[] b = e.getValue().toByteArray();
                if (b.length >= 10) {
                    int length = ByteBuffer.wrap(b).getInt(0);
                    if (b.length >= 10 + length) {
                        e.getValue().reset();
                        e.getValue().write(b, 10 + length, b.length - 10 - length);
                        return new Frame(
                                e.getKey(),
                                ByteBuffer.wrap(b).getInt(4),
                                b[8] & 0xff,
                                Arrays.copyOfRange(b, 10, 10 + length));
                    }
                }
            }
            byte[] mux = readFully(8);
            int conn = ByteBuffer.wrap(mux).getInt(0);
            partial.computeIfAbsent(conn, c -> new ByteArrayOutputStream())
                    .writeBytes(readFully(ByteBuffer.wrap(mux).getInt(4)));
        }
    }

    /** True once the runtime has closed the connection (reads to its end, discarding). */
    boolean closedByRuntime() throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4096);
        while (true) {
            b.clear();
            try {
                if (ch.read(b) < 0) {
                    return true;
                }
            } catch (IOException e) {
                return true; // reset
            }
        }
    }

    private byte[] readFully(int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new EOFException("the runtime closed the connection");
            }
        }
        return b.array();
    }

    @Override
    public void close() throws IOException {
        ch.close();
    }
}
