package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.testing.real.ContainerdExtension;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client connection's rules, on the wire, as strict as containerd's gRPC server (grpc-go):
 * a client that PINGs with no reason is sent GOAWAY ENHANCE_YOUR_CALM "too_many_pings" after the
 * same number of PINGs, and HEADERS on an even or a used stream id end the connection. Each rule
 * is checked against a real containerd too: the proxy must do what containerd does.
 */
class ConnectionRulesIT {

    @RegisterExtension static final ContainerdExtension CONTAINERD = new ContainerdExtension();

    @TempDir Path dir;
    private TestBackend backend;
    private CriProxy proxy;

    @BeforeEach
    void start() throws Exception {
        backend = new TestBackend(dir.resolve("backend.sock"), false).start();
        proxy =
                CriProxy.builder()
                        .listen(dir.resolve("proxy.sock"))
                        .backend(backend.socket)
                        .build()
                        .start();
    }

    @AfterEach
    void stop() throws Exception {
        proxy.close();
        backend.close();
    }

    /** What a server did with a PING flood: the acks before its GOAWAY, and that GOAWAY. */
    record Flood(int acks, RawH2.Frame goAway, boolean closed) {}

    private static Flood flood(Path socket) throws Exception {
        try (RawH2 c = new RawH2(socket)) {
            int acks = 0;
            for (long i = 1; i <= 50; i++) {
                try {
                    c.ping(i);
                } catch (java.io.IOException closed) {
                    // the server ended the connection after its last ack: its GOAWAY is on the way
                    // in
                }
                RawH2.Frame f = c.next();
                if (f != null && f.type() == RawH2.PING && f.ack() && f.pingData() == i) {
                    acks++;
                    continue;
                }
                if (f != null && f.type() == RawH2.GOAWAY) {
                    RawH2.Frame after = c.next();
                    while (after != null && after.type() == RawH2.PING) {
                        after = c.next();
                    }
                    return new Flood(acks, f, after != null && after.type() == -1);
                }
                throw new AssertionError("after PING " + i + ": " + f);
            }
            return new Flood(acks, null, false);
        }
    }

    @Test
    void aPingFloodIsEndedAsContainerdEndsIt() throws Exception {
        List<Path> servers = new ArrayList<>(List.of(dir.resolve("proxy.sock")));
        servers.add(CONTAINERD.socketPath());
        List<Flood> floods = new ArrayList<>();
        for (Path s : servers) {
            Flood f = flood(s);
            floods.add(f);
            assertThat(f.goAway()).as("GOAWAY from %s", s).isNotNull();
            assertThat(f.goAway().goAwayCode()).isEqualTo(RawH2.ENHANCE_YOUR_CALM);
            assertThat(f.goAway().goAwayDebug()).isEqualTo("too_many_pings");
            assertThat(f.closed()).as("connection closed after the GOAWAY").isTrue();
        }
        assertThat(floods.get(0).acks())
                .as("PINGs acked by the proxy, as by containerd")
                .isEqualTo(floods.get(1).acks());
    }

    @Test
    void aPingAfterAnAnswerIsNoStrike() throws Exception {
        try (RawH2 c = new RawH2(dir.resolve("proxy.sock"))) {
            int stream = 1;
            for (long i = 1; i <= 20; i++) {
                c.versionCall(stream);
                stream += 2;
                c.ping(i);
                boolean acked = false;
                for (RawH2.Frame f = c.next(); !acked; f = c.next()) {
                    assertThat(f).isNotNull();
                    assertThat(f.type())
                            .as("no GOAWAY for PINGs that follow answers")
                            .isNotIn(RawH2.GOAWAY, -1);
                    acked = f.type() == RawH2.PING && f.ack() && f.pingData() == i;
                }
            }
        }
    }

    /** What a server did with HEADERS on a stream id it must refuse. */
    private static String illegalHeaders(Path socket, int... streams) throws Exception {
        try (RawH2 c = new RawH2(socket)) {
            try {
                for (int stream : streams) {
                    c.versionCall(stream);
                }
                c.ping(42);
            } catch (java.io.IOException closed) {
                // the server ended the connection before all was written: what it sent is on the
                // way in
            }
            RawH2.Frame goAway = null;
            for (RawH2.Frame f = c.next(); f != null; f = c.next()) {
                if (f.type() == -1) {
                    return goAway == null ? "closed" : "goaway " + goAway.goAwayCode() + ", closed";
                }
                if (f.type() == RawH2.GOAWAY) {
                    goAway = f;
                }
            }
            return "open";
        }
    }

    @Test
    void headersOnAnEvenOrUsedStreamIdEndTheConnection() throws Exception {
        int[][] cases = {{2}, {1, 1}, {5, 3}};
        for (int[] streams : cases) {
            String proxied = illegalHeaders(dir.resolve("proxy.sock"), streams);
            String containerd = illegalHeaders(CONTAINERD.socketPath(), streams);
            assertThat(containerd)
                    .as("containerd, streams %s", java.util.Arrays.toString(streams))
                    .endsWith("closed");
            assertThat(proxied)
                    .as("proxy, streams %s", java.util.Arrays.toString(streams))
                    .isEqualTo("goaway " + RawH2.PROTOCOL_ERROR + ", closed");
        }
    }
}
