package io.cri4j.cri;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.netty.channel.epoll.Epoll;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The unix-socket rules of {@link CriServer}, on real sockets, with real gRPC calls through {@link CriChannels}. */
class CriServerIT {

    @TempDir Path dir;

    private ManagedChannel channel;

    @BeforeAll
    static void epollIsUsed() {
        assertThat(Epoll.isAvailable()).as("Netty epoll native transport").isTrue();
    }

    @AfterEach
    void closeChannel() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    static final class VersionService extends RuntimeServiceGrpc.RuntimeServiceImplBase {
        private final String name;

        VersionService(String name) {
            this.name = name;
        }

        @Override
        public void version(VersionRequest request, StreamObserver<VersionResponse> response) {
            response.onNext(
                    VersionResponse.newBuilder()
                            .setVersion(request.getVersion())
                            .setRuntimeName(name)
                            .setRuntimeVersion("1.0")
                            .setRuntimeApiVersion("v1")
                            .build());
            response.onCompleted();
        }
    }

    private VersionResponse callVersion(CriEndpoint endpoint) {
        if (channel != null) {
            channel.shutdownNow();
        }
        channel = CriChannels.newChannel(endpoint);
        return RuntimeServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .version(VersionRequest.newBuilder().setVersion("0.1.0").build());
    }

    @Test
    void servesOnAUnixSocketInNewParentDirsWithMode0660AndRemovesItOnClose() throws Exception {
        Path socket = dir.resolve("a/b/cri.sock");
        CriEndpoint endpoint = CriEndpoint.unix(socket);
        try (CriServer server =
                CriServer.builder(endpoint)
                        .addService(new VersionService("fake"))
                        .build()
                        .start()) {
            assertThat(server.endpoint()).isEqualTo(endpoint);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)))
                    .isEqualTo("rw-rw----");
            VersionResponse v = callVersion(endpoint);
            assertThat(v.getRuntimeName()).isEqualTo("fake");
            assertThat(v.getVersion()).isEqualTo("0.1.0");
        }
        assertThat(socket).doesNotExist();
    }

    @Test
    void transportFiltersAreToldOfEachConnectionAndItsEnd() throws Exception {
        Path socket = dir.resolve("t.sock");
        java.util.concurrent.BlockingQueue<String> events =
                new java.util.concurrent.LinkedBlockingQueue<>();
        try (CriServer server =
                CriServer.builder(CriEndpoint.unix(socket))
                        .addService(new VersionService("x"))
                        .addTransportFilter(
                                new io.grpc.ServerTransportFilter() {
                                    @Override
                                    public io.grpc.Attributes transportReady(io.grpc.Attributes a) {
                                        events.add("ready");
                                        return a;
                                    }

                                    @Override
                                    public void transportTerminated(io.grpc.Attributes a) {
                                        events.add("terminated");
                                    }
                                })
                        .build()
                        .start()) {
            callVersion(server.endpoint());
            assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("ready");
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("terminated");
            callVersion(server.endpoint());
            assertThat(events.poll(5, TimeUnit.SECONDS))
                    .as("a second connection")
                    .isEqualTo("ready");
        }
    }

    @Test
    void socketModeIsConfigurable() throws Exception {
        Path socket = dir.resolve("m.sock");
        try (CriServer server =
                CriServer.builder(CriEndpoint.unix(socket))
                        .socketMode("0600")
                        .addService(new VersionService("x"))
                        .build()
                        .start()) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)))
                    .isEqualTo("rw-------");
        }
        assertThatThrownBy(() -> CriServer.builder(CriEndpoint.unix(socket)).socketMode("rwz"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid socket mode");
    }

    @Test
    void replacesAStaleSocketFile() throws Exception {
        Path socket = dir.resolve("stale.sock");
        // a socket file that nobody accepts on any more, as a crashed server leaves it
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(socket));
        }
        assertThat(socket).exists();
        try (CriServer server =
                CriServer.builder(CriEndpoint.unix(socket))
                        .addService(new VersionService("new"))
                        .build()
                        .start()) {
            assertThat(callVersion(server.endpoint()).getRuntimeName()).isEqualTo("new");
        }
    }

    @Test
    void refusesToTakeOverASocketALiveServerAnswersOn() throws Exception {
        Path socket = dir.resolve("live.sock");
        CriEndpoint endpoint = CriEndpoint.unix(socket);
        try (CriServer first =
                CriServer.builder(endpoint)
                        .addService(new VersionService("first"))
                        .build()
                        .start()) {
            CriServer second =
                    CriServer.builder(endpoint).addService(new VersionService("second")).build();
            assertThatThrownBy(second::start)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("another server already owns " + socket);
            second.close();
            // the first server is untouched and still answers
            assertThat(callVersion(endpoint).getRuntimeName()).isEqualTo("first");
            assertThat(socket).exists();
        }
        // a server that does not take the lock (another program) is found by connecting
        try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            other.bind(UnixDomainSocketAddress.of(socket));
            CriServer third =
                    CriServer.builder(endpoint).addService(new VersionService("third")).build();
            assertThatThrownBy(third::start)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("live server already answers on " + socket);
            third.close();
            assertThat(socket).exists();
        }
    }

    @Test
    void refusesToReplaceSomethingThatIsNotASocket() throws Exception {
        Path file = dir.resolve("precious.txt");
        Files.writeString(file, "keep me");
        CriServer server = CriServer.builder(CriEndpoint.unix(file)).build();
        assertThatThrownBy(server::start)
                .isInstanceOf(FileAlreadyExistsException.class)
                .hasMessageContaining("not a unix socket");
        server.close();
        assertThat(Files.readString(file)).isEqualTo("keep me");
    }

    @Test
    void closeIsIdempotentAndReleasesEventLoopThreads() throws Exception {
        CriServer server =
                CriServer.builder(CriEndpoint.unix(dir.resolve("t.sock")))
                        .addService(new VersionService("t"))
                        .build()
                        .start();
        assertThat(callVersion(server.endpoint()).getRuntimeName()).isEqualTo("t");
        Set<Thread> threads = serverThreads();
        assertThat(threads).isNotEmpty();
        server.close();
        server.close();
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(5));
            assertThat(t.isAlive()).as(t.getName() + " still alive after close").isFalse();
        }
        assertThatThrownBy(server::start).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void servesOnTcpWithAPickedPort() throws Exception {
        try (CriServer server =
                CriServer.builder(CriEndpoint.tcp("127.0.0.1", 0))
                        .addService(new VersionService("tcp"))
                        .build()
                        .start()) {
            assertThat(server.endpoint().port()).isPositive();
            assertThat(
                            callVersion(CriEndpoint.parse(server.endpoint().toString()))
                                    .getRuntimeName())
                    .isEqualTo("tcp");
        }
    }

    @Test
    void unimplementedMethodGetsAStatusNotACrash() throws Exception {
        try (CriServer server =
                CriServer.builder(CriEndpoint.unix(dir.resolve("u.sock")))
                        .addService(new VersionService("u"))
                        .build()
                        .start()) {
            channel = CriChannels.newChannel(server.endpoint());
            assertThatThrownBy(
                            () ->
                                    RuntimeServiceGrpc.newBlockingStub(channel)
                                            .status(
                                                    io.cri4j.cri.v1.StatusRequest
                                                            .getDefaultInstance()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e ->
                                    assertThat(e.getStatus().getCode())
                                            .isEqualTo(Status.Code.UNIMPLEMENTED));
        }
    }

    @Test
    void clientGetsUnavailableWhenNothingListens() {
        CriEndpoint nowhere = CriEndpoint.unix(dir.resolve("nobody.sock"));
        assertThatThrownBy(() -> callVersion(nowhere))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e ->
                                assertThat(e.getStatus().getCode())
                                        .isEqualTo(Status.Code.UNAVAILABLE));
    }

    private static Set<Thread> serverThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("cri4j-server"))
                .collect(Collectors.toSet());
    }
}
