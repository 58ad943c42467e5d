package io.cri4j.imagepull;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pull progress server against clients that misbehave, over real sockets: headers that trickle
 * in, more connections than the cap, watchers that never read, an undecodable query, and a
 * {@code Host} header naming somewhere else (DNS rebinding).
 */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class PullProgressServerHardeningIT {

    @TempDir Path dir;
    private FakeCriServer fake;
    private ManagedChannel channel;
    private PullObserver observer;
    private PullProgressServer server;
    private final List<Socket> sockets = new ArrayList<>();

    private void start(PullProgressServer.Builder b) throws Exception {
        server = b.build().start();
    }

    private PullProgressServer.Builder builder(long pullRate, int maxWatchers) throws Exception {
        fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                        .pullRate(pullRate)
                        .build()
                        .start();
        channel = fake.newChannel();
        observer =
                PullObserver.builder(fake.endpoint())
                        .pollInterval(Duration.ofMillis(20))
                        .minInterval(Duration.ofMillis(1))
                        .maxWatchers(maxWatchers)
                        .build();
        return PullProgressServer.builder(observer);
    }

    @AfterEach
    void stop() throws Exception {
        for (Socket s : sockets) {
            s.close();
        }
        if (server != null) {
            server.close();
        }
        if (observer != null) {
            observer.close();
        }
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (fake != null) {
            fake.close();
        }
    }

    private Socket connect() throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        s.connect(server.address(), 5000);
        s.setSoTimeout(10_000);
        return s;
    }

    private static void send(Socket s, String text) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(text.getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    /** The whole response the server sends before it closes. */
    private static String readAll(Socket s) throws IOException {
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }

    private static boolean closedByServer(Socket s) {
        try {
            InputStream in = s.getInputStream();
            while (in.read() >= 0) {
                // what it sent before closing
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    @Test
    void aRequestTricklingInIsCutOffAtTheRequestTimeoutFromTheConnectionsStart() throws Exception {
        start(builder(32L << 20, 4).requestTimeout(Duration.ofSeconds(1)));
        Socket s = connect();
        long t0 = System.nanoTime();
        send(s, "GET /imagePullProgress HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        boolean cut = false;
        // a header line every 100 ms: each byte would restart a read-idle timeout
        while (System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4)) {
            try {
                send(s, "X-Slow: " + (System.nanoTime() - t0) + "\r\n");
            } catch (IOException e) {
                cut = true;
                break;
            }
            s.setSoTimeout(100);
            try {
                if (s.getInputStream().read() < 0) {
                    cut = true;
                    break;
                }
            } catch (SocketTimeoutException e) {
                // still open
            } catch (IOException e) {
                cut = true;
                break;
            }
        }
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(cut).as("connection closed while headers still trickled in").isTrue();
        assertThat(took).isBetween(900L, 2500L);
        // a request sent in time is answered
        Socket ok = connect();
        send(ok, "GET /imagePullProgress HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        assertThat(readAll(ok)).startsWith("HTTP/1.1 200").contains("\"pulls\"");
    }

    @Test
    void connectionsAreCappedAndOneMoreIsAnswered503() throws Exception {
        start(builder(32L << 20, 4));
        for (int i = 0; i < 128; i++) {
            connect(); // idle: holding a connection costs the client nothing
        }
        Socket over = connect();
        String r = readAll(over);
        assertThat(r).startsWith("HTTP/1.1 503").contains("too many connections (at most 128)");
        sockets.remove(0).close();
        // the slot of a closed connection is free again (once the server has seen the close)
        String again = "";
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!again.startsWith("HTTP/1.1 200") && System.nanoTime() < end) {
            Socket s = connect();
            send(
                    s,
                    "GET /imagePullProgress HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            again = readAll(s);
            sockets.remove(s);
            s.close();
        }
        assertThat(again).startsWith("HTTP/1.1 200");
    }

    @Test
    void aWatcherThatNeverReadsIsDroppedAfterTheStallTimeoutAndFreesItsSlot() throws Exception {
        start(builder(4L << 20, 1).stallTimeout(Duration.ofSeconds(1)));
        Socket stalled = new Socket();
        sockets.add(stalled);
        stalled.setReceiveBufferSize(1024);
        stalled.connect(server.address(), 5000);
        send(stalled, "GET /imagePullProgress?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        awaitTrue(() -> observer.watchers() == 1);
        // pulls keep the stream busy; the watcher reads none of it
        List<CompletableFuture<String>> pulls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            pulls.add(
                    ObservedPulls.pull(observer, channel, "registry.example/stall/app" + i + ":1"));
        }
        long t0 = System.nanoTime();
        awaitTrue(() -> observer.watchers() == 0, Duration.ofSeconds(60));
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(observer.watchers()).as("the stalled watcher was dropped").isZero();
        // its slot is free again for a watcher that reads
        Socket reader = connect();
        send(reader, "GET /imagePullProgress?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        byte[] head = new byte[12];
        assertThat(reader.getInputStream().readNBytes(head, 0, 12)).isEqualTo(12);
        assertThat(new String(head, StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 200");
        System.out.println("stalled watcher dropped " + took + " ms after the pulls began");
    }

    @Test
    void anUndecodableQueryIsAnswered400WithTheReason() throws Exception {
        start(builder(32L << 20, 4));
        Socket s = connect();
        send(s, "GET /imagePullProgress?image=%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        String r = readAll(s);
        assertThat(r).startsWith("HTTP/1.1 400").contains("cannot decode the path or query");
        assertThat(observer.watchers()).isZero();
    }

    @Test
    void aForeignHostHeaderIsRefusedUnlessAllowed() throws Exception {
        start(builder(32L << 20, 4).allowHosts(List.of("progress.node.example")));
        for (String host :
                List.of(
                        "127.0.0.1",
                        "localhost",
                        "LOCALHOST.",
                        "[::1]:8080",
                        "127.0.0.1:1234",
                        "progress.node.example:80")) {
            Socket s = connect();
            send(
                    s,
                    "GET /imagePullProgress HTTP/1.1\r\nHost: "
                            + host
                            + "\r\nConnection: close\r\n\r\n");
            assertThat(readAll(s)).as(host).startsWith("HTTP/1.1 200");
        }
        for (String host :
                List.of(
                        "attacker.example",
                        "attacker.example:" + server.address().getPort(),
                        "10.1.2.3")) {
            Socket s = connect();
            send(s, "GET /imagePullProgress HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
            assertThat(readAll(s))
                    .as(host)
                    .startsWith("HTTP/1.1 403")
                    .contains("is not allowed here");
        }
        Socket none = connect();
        send(none, "GET /imagePullProgress HTTP/1.1\r\n\r\n");
        assertThat(readAll(none)).startsWith("HTTP/1.1 400").contains("Host header");
    }

    static void awaitTrue(BooleanSupplier c) throws InterruptedException {
        awaitTrue(c, Duration.ofSeconds(10));
    }

    static void awaitTrue(BooleanSupplier c, Duration within) throws InterruptedException {
        long end = System.nanoTime() + within.toNanos();
        while (!c.getAsBoolean() && System.nanoTime() < end) {
            Thread.sleep(10);
        }
    }
}
