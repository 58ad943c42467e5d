package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of a CRI unary call over our unix-socket transport (CriServer + CriChannels, Netty
 * epoll), against the floor: a raw JDK unix-socket ping-pong of the same payload size.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class TransportBenchmark {

    private Path dir;
    private CriServer server;
    private ManagedChannel channel;
    private RuntimeServiceGrpc.RuntimeServiceBlockingStub stub;
    private VersionRequest request;

    private ServerSocketChannel rawServer;
    private Thread rawEcho;
    private SocketChannel rawClient;
    private ByteBuffer rawOut;
    private ByteBuffer rawIn;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("cri4j-bench");
        server =
                CriServer.builder(CriEndpoint.unix(dir.resolve("cri.sock")))
                        .addService(
                                new RuntimeServiceGrpc.RuntimeServiceImplBase() {
                                    @Override
                                    public void version(
                                            VersionRequest r, StreamObserver<VersionResponse> o) {
                                        o.onNext(
                                                VersionResponse.newBuilder()
                                                        .setVersion(r.getVersion())
                                                        .build());
                                        o.onCompleted();
                                    }
                                })
                        .build()
                        .start();
        channel = CriChannels.newChannel(server.endpoint());
        stub = RuntimeServiceGrpc.newBlockingStub(channel);
        request = VersionRequest.newBuilder().setVersion("x".repeat(64)).build();
        stub.version(request);

        Path raw = dir.resolve("raw.sock");
        rawServer = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        rawServer.bind(UnixDomainSocketAddress.of(raw));
        rawEcho = new Thread(this::echo, "raw-echo");
        rawEcho.setDaemon(true);
        rawEcho.start();
        rawClient = SocketChannel.open(StandardProtocolFamily.UNIX);
        rawClient.connect(UnixDomainSocketAddress.of(raw));
        rawOut = ByteBuffer.allocateDirect(request.getSerializedSize());
        rawIn = ByteBuffer.allocateDirect(request.getSerializedSize());
    }

    private void echo() {
        try (SocketChannel peer = rawServer.accept()) {
            ByteBuffer buf = ByteBuffer.allocateDirect(4096);
            while (peer.read(buf) >= 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    peer.write(buf);
                }
                buf.clear();
            }
        } catch (IOException e) {
            // closed at tear-down
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
        rawClient.close();
        rawServer.close();
        rawEcho.join(5000);
        Files.deleteIfExists(dir.resolve("raw.sock"));
        Files.deleteIfExists(dir);
    }

    /** Baseline: the same payload sent and read back over a raw unix socket. */
    @Benchmark
    public int rawUnixSocketPingPong() throws IOException {
        rawOut.clear();
        rawOut.put(request.toByteArray()).flip();
        while (rawOut.hasRemaining()) {
            rawClient.write(rawOut);
        }
        rawIn.clear();
        while (rawIn.hasRemaining()) {
            if (rawClient.read(rawIn) < 0) {
                throw new IOException("echo closed");
            }
        }
        return rawIn.position();
    }

    /** A CRI Version call through CriChannels to a CriServer on a unix socket. */
    @Benchmark
    public VersionResponse grpcUnaryOverUnixSocket() {
        return stub.version(request);
    }
}
