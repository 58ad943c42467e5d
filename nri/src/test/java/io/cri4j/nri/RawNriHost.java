package io.cri4j.nri;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.hook.nri.v1alpha1.RegisterPluginRequest;
import io.cri4j.hook.nri.v1alpha1.SynchronizeRequest;
import io.cri4j.nri.internal.proto.Request;
import io.cri4j.nri.internal.proto.Response;
import io.cri4j.nri.internal.ttrpc.TtrpcFrame;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A stand-in NRI runtime speaking raw bytes on a unix socket, for tests of what a plugin does with
 * bad input; the protocol itself is tested against containerd. Blocking, one plugin at a time.
 */
final class RawNriHost implements AutoCloseable {

    record Frame(int conn, int stream, int type, byte[] data) {}

    final Path socket;
    private final ServerSocketChannel server;
    SocketChannel plugin;
    private int nextStream = 1;

    RawNriHost(Path socket) throws IOException {
        this.socket = socket;
        Files.deleteIfExists(socket);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
    }

    /**
     * Accepts the plugin's connection, closing the one before it, and runs NRI's registration:
     * Register, Configure, Synchronize.
     */
    RegisterPluginRequest acceptAndRegister() throws IOException {
        SocketChannel next = server.accept();
        dropPlugin();
        plugin = next;
        Frame register = read();
        if (register.conn() != 2 || register.type() != TtrpcFrame.REQUEST) {
            throw new IOException("expected RegisterPlugin on mux connection 2, got " + register);
        }
        Request r = Request.parseFrom(register.data());
        respond(2, register.stream(), new byte[0]);
        call(
                "Configure",
                ConfigureRequest.newBuilder()
                        .setRuntimeName("raw-host")
                        .setRuntimeVersion("0")
                        .setRegistrationTimeout(5000)
                        .setRequestTimeout(2000)
                        .build());
        call("Synchronize", SynchronizeRequest.getDefaultInstance());
        return RegisterPluginRequest.parseFrom(r.getPayload());
    }

    /** Calls the plugin service and returns its Response. */
    Response call(String method, Message payload) throws IOException {
        int stream = nextStream;
        nextStream += 2;
        byte[] req =
                Request.newBuilder()
                        .setService("nri.pkg.api.v1alpha1.Plugin")
                        .setMethod(method)
                        .setPayload(payload.toByteString())
                        .setTimeoutNano(2_000_000_000L)
                        .build()
                        .toByteArray();
        writeMux(1, new TtrpcFrame(stream, TtrpcFrame.REQUEST, 0, req).encode());
        Frame f = read();
        if (f.conn() != 1 || f.stream() != stream || f.type() != TtrpcFrame.RESPONSE) {
            throw new IOException("expected the answer on stream " + stream + ", got " + f);
        }
        return Response.parseFrom(f.data());
    }

    /** Sends a ttrpc request with this raw Request data on mux connection 1 and reads the answer. */
    Response callRaw(byte[] requestData) throws IOException {
        int stream = nextStream;
        nextStream += 2;
        writeMux(1, new TtrpcFrame(stream, TtrpcFrame.REQUEST, 0, requestData).encode());
        return Response.parseFrom(read().data());
    }

    int nextStream() {
        int s = nextStream;
        nextStream += 2;
        return s;
    }

    void respond(int conn, int stream, byte[] payload) throws IOException {
        writeMux(
                conn,
                new TtrpcFrame(
                                stream,
                                TtrpcFrame.RESPONSE,
                                0,
                                Response.newBuilder()
                                        .setPayload(ByteString.copyFrom(payload))
                                        .build()
                                        .toByteArray())
                        .encode());
    }

    void writeMux(int conn, byte[] payload) throws IOException {
        ByteBuffer b =
                ByteBuffer.allocate(8 + payload.length)
                        .putInt(conn)
                        .putInt(payload.length)
                        .put(payload)
                        .flip();
        write(b.array());
    }

    void write(byte[] raw) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(raw);
        while (b.hasRemaining()) {
            plugin.write(b);
        }
    }

    /** One mux frame holding one whole ttrpc frame (what the plugin writes for frames up to 4096 bytes). */
    Frame read() throws IOException {
        byte[] mux = readFully(8);
        int conn = ByteBuffer.wrap(mux).getInt(0);
        byte[] payload = readFully(ByteBuffer.wrap(mux).getInt(4));
        ByteBuffer t = ByteBuffer.wrap(payload);
        int length = t.getInt(0);
        return new Frame(
                conn, t.getInt(4), payload[8] & 0xff, Arrays.copyOfRange(payload, 10, 10 + length));
    }

    /** True once the plugin has closed its end (reads to end of stream, discarding). */
    boolean pluginClosed() throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4096);
        while (true) {
            b.clear();
            if (plugin.read(b) < 0) {
                return true;
            }
        }
    }

    private byte[] readFully(int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (plugin.read(b) < 0) {
                throw new EOFException("the plugin closed the connection");
            }
        }
        return b.array();
    }

    void dropPlugin() throws IOException {
        if (plugin != null) {
            plugin.close();
        }
    }

    @Override
    public void close() throws IOException {
        dropPlugin();
        server.close();
        Files.deleteIfExists(socket);
    }
}
