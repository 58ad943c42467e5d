package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.cri4j.cri.v1.AttachRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.PortForwardRequest;
import io.cri4j.streaming.testing.RawConn;
import io.cri4j.streaming.testing.TestRuntime;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Bad requests and misbehaving clients get their proper answers; nothing leaks. */
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
class StreamingServerAbuseIT {
    static long fdsBefore;
    static int threadsBefore;

    @BeforeAll
    static void baseline() throws Exception {
        // Warm up: class loading opens jar files once; they are not leaks.
        try (StreamingServer s = server(new TestRuntime());
                RawConn c = new RawConn(s.baseUrl())) {
            c.webSocket(exec(s, "exit", "0"), "v5.channel.k8s.io");
            c.readToEof();
        }
        fdsBefore = openFds();
        threadsBefore = streamingThreads();
    }

    static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    static String fdList() throws IOException {
        StringBuilder b = new StringBuilder();
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            s.forEach(
                    p -> {
                        try {
                            b.append(Files.readSymbolicLink(p)).append('\n');
                        } catch (IOException e) {
                            // raced with a close
                        }
                    });
        }
        return b.toString();
    }

    static int streamingThreads() {
        return (int)
                Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().startsWith("cri4j-streaming"))
                        .count();
    }

    private static StreamingServer server(TestRuntime rt, StreamingServer.Builder... ignored)
            throws IOException {
        return StreamingServer.builder(rt).build().start();
    }

    private static URI exec(StreamingServer s, String... cmd) {
        return URI.create(
                s.getExec(
                                ExecRequest.newBuilder()
                                        .setContainerId("c")
                                        .addAllCmd(List.of(cmd))
                                        .setStdout(true)
                                        .setStdin(true)
                                        .build())
                        .getUrl());
    }

    @Test
    void unknownUsedAndMismatchedTokensAre404AndBadMethodIs405() throws Exception {
        try (StreamingServer s = server(new TestRuntime())) {
            URI base = s.baseUrl();
            try (RawConn c = new RawConn(base)) {
                c.request("GET", base.resolve("exec/nosuchtoken"));
                assertThat(c.status).isEqualTo(404);
            }
            URI attach =
                    URI.create(
                            s.getAttach(
                                            AttachRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .setStdin(true)
                                                    .build())
                                    .getUrl());
            URI wrongKind = base.resolve("exec/" + attach.getPath().substring("/attach/".length()));
            try (RawConn c = new RawConn(base)) {
                c.request("POST", wrongKind);
                assertThat(c.status).isEqualTo(404);
            }
            try (RawConn c = new RawConn(base)) {
                c.request(
                        "POST", attach); // spent by the wrong-kind attempt, as kubelet's cache does
                assertThat(c.status).isEqualTo(404);
            }
            URI e = exec(s, "cat");
            try (RawConn c = new RawConn(base)) {
                c.request("PUT", e);
                assertThat(c.status).isEqualTo(405);
            }
            try (RawConn c = new RawConn(base)) {
                c.request("GET", base.resolve("other/path"));
                assertThat(c.status).isEqualTo(404);
            }
        }
    }

    @Test
    void protocolNegotiation() throws Exception {
        try (StreamingServer s = server(new TestRuntime())) {
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request(
                        "POST",
                        exec(s, "cat"),
                        "Connection: Upgrade",
                        "Upgrade: SPDY/3.1",
                        "X-Stream-Protocol-Version: v9.channel.k8s.io");
                assertThat(c.status).isEqualTo(403);
                assertThat(c.headers.get("x-accepted-stream-protocol-versions"))
                        .containsExactly(
                                "v5.channel.k8s.io",
                                "v4.channel.k8s.io",
                                "v3.channel.k8s.io",
                                "v2.channel.k8s.io",
                                "channel.k8s.io");
                assertThat(c.body).contains("unable to negotiate protocol");
            }
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request("POST", exec(s, "cat"), "Connection: Upgrade", "Upgrade: SPDY/3.1");
                assertThat(c.status).isEqualTo(400);
                assertThat(c.body).contains("X-Stream-Protocol-Version is required");
            }
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request("POST", exec(s, "cat"), "X-Stream-Protocol-Version: v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(400);
                assertThat(c.body).contains("missing upgrade headers");
            }
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.webSocket(exec(s, "cat"), "v9.channel.k8s.io");
                assertThat(c.status).isEqualTo(403);
            }
            try (RawConn c = new RawConn(s.baseUrl())) {
                URI pf =
                        URI.create(
                                s.getPortForward(
                                                PortForwardRequest.newBuilder()
                                                        .setPodSandboxId("p")
                                                        .build())
                                        .getUrl());
                c.webSocket(pf, "v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(400);
                assertThat(c.body).contains("query parameter \"port\" is required");
            }
        }
    }

    @Test
    void v5OverWebSocketCanBeSwitchedOff() throws Exception {
        try (StreamingServer s =
                        StreamingServer.builder(new TestRuntime())
                                .remoteCommandProtocols(List.of("v4.channel.k8s.io"))
                                .build()
                                .start();
                RawConn c = new RawConn(s.baseUrl())) {
            c.webSocket(exec(s, "cat"), "v5.channel.k8s.io");
            assertThat(c.status).isEqualTo(403);
        }
    }

    @Test
    void authorizerCanRefuse() throws Exception {
        try (StreamingServer s =
                        StreamingServer.builder(new TestRuntime())
                                .authorizer(r -> !r.targetId().equals("c"))
                                .build()
                                .start();
                RawConn c = new RawConn(s.baseUrl())) {
            c.webSocket(exec(s, "cat"), "v4.channel.k8s.io");
            assertThat(c.status).isEqualTo(403);
            assertThat(c.body).contains("not authorized");
        }
    }

    @Test
    void webSocketSessionStatusAndVanishingClient() throws Exception {
        TestRuntime rt = new TestRuntime();
        try (StreamingServer s = server(rt)) {
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.webSocket(exec(s, "exit", "7"), "v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(101);
                assertThat(c.header("sec-websocket-protocol")).isEqualTo("v4.channel.k8s.io");
                RawConn.Frame hello = c.readFrame();
                assertThat(hello.payload()).containsExactly(1); // empty message on stdout
                RawConn.Frame status = c.readFrame();
                assertThat(status.payload()[0]).isEqualTo((byte) 3);
                assertThat(
                                new String(
                                        status.payload(),
                                        1,
                                        status.payload().length - 1,
                                        StandardCharsets.UTF_8))
                        .contains("\"NonZeroExitCode\"", "\"message\":\"7\"");
                assertThat(c.readFrame().opcode()).isEqualTo(8); // close
            }
            rt.hangStarted = new CountDownLatch(1);
            CountDownLatch closed = new CountDownLatch(1);
            rt.hangClosed = closed;
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.webSocket(exec(s, "hang"), "base64.channel.k8s.io");
                assertThat(c.status).isEqualTo(101);
                RawConn.Frame hello = c.readFrame();
                assertThat(hello.opcode()).isEqualTo(1); // text
                assertThat(new String(hello.payload(), StandardCharsets.US_ASCII)).isEqualTo("1");
                assertThat(rt.hangStarted.await(10, TimeUnit.SECONDS)).isTrue();
                assertThat(s.activeSessions()).isEqualTo(1);
            }
            assertThat(closed.await(10, TimeUnit.SECONDS))
                    .as("runtime told the client left")
                    .isTrue();
        }
    }

    @Test
    void clientVanishingWhileTheRuntimeIsBlockedOnOutputStopsIt() throws Exception {
        TestRuntime rt = new TestRuntime();
        try (StreamingServer s = server(rt)) {
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.webSocket(exec(s, "big", Long.toString(1L << 40)), "v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(101);
                c.readFrame();
                c.readFrame(); // some output flows, then the client stops reading and leaves
            }
            String result = rt.ended.poll(20, TimeUnit.SECONDS);
            assertThat(result).startsWith("big ").contains("IOException");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (s.activeSessions() != 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(s.activeSessions()).isZero();
        }
    }

    @Test
    void concurrentSessionLimitAnswers429() throws Exception {
        TestRuntime rt = new TestRuntime();
        try (StreamingServer s =
                        StreamingServer.builder(rt).maxConcurrentSessions(1).build().start();
                RawConn first = new RawConn(s.baseUrl())) {
            first.webSocket(exec(s, "hang"), "v4.channel.k8s.io");
            assertThat(first.status).isEqualTo(101);
            assertThat(rt.hangStarted.await(10, TimeUnit.SECONDS)).isTrue();
            try (RawConn second = new RawConn(s.baseUrl())) {
                second.request(
                        "POST",
                        exec(s, "cat"),
                        "Connection: Upgrade",
                        "Upgrade: SPDY/3.1",
                        "X-Stream-Protocol-Version: v4.channel.k8s.io");
                assertThat(second.status).isEqualTo(429);
                assertThat(second.header("retry-after")).isEqualTo("60");
            }
        }
    }

    @Test
    void sessionsAndRefusalsAreRecordedWhenARegistryIsGiven() throws Exception {
        TestRuntime rt = new TestRuntime();
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        try (StreamingServer s =
                        StreamingServer.builder(rt)
                                .maxConcurrentSessions(1)
                                .meterRegistry(registry)
                                .build()
                                .start();
                RawConn first = new RawConn(s.baseUrl())) {
            java.net.URI second = exec(s, "cat"); // a token handed out, not used yet
            assertThat(registry.find("cri4j.streaming.tokens").gauge().value()).isEqualTo(1);
            first.webSocket(exec(s, "hang"), "v4.channel.k8s.io");
            assertThat(first.status).isEqualTo(101);
            assertThat(rt.hangStarted.await(10, TimeUnit.SECONDS)).isTrue();
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request(
                        "POST",
                        second,
                        "Connection: Upgrade",
                        "Upgrade: SPDY/3.1",
                        "X-Stream-Protocol-Version: v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(429);
            }
            assertThat(
                            registry.find("cri4j.streaming.sessions")
                                    .tags(
                                            "kind",
                                            "exec",
                                            "transport",
                                            "websocket",
                                            "protocol",
                                            "v4.channel.k8s.io")
                                    .counter()
                                    .count())
                    .isEqualTo(1);
            assertThat(
                            registry.find("cri4j.streaming.sessions.rejected")
                                    .tags("kind", "exec", "transport", "spdy")
                                    .counter()
                                    .count())
                    .isEqualTo(1);
            assertThat(registry.find("cri4j.streaming.sessions.active").gauge().value())
                    .isEqualTo(1);
        }
    }

    @Test
    void aSessionsBytesAreCountedByTransportAndDirection() throws Exception {
        TestRuntime rt = new TestRuntime();
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        int size = 256 * 1024;
        byte[] input = new byte[size];
        java.util.Arrays.fill(input, (byte) 'x');
        try (StreamingServer s =
                StreamingServer.builder(rt).meterRegistry(registry).build().start()) {
            for (StreamingClient.Transport t : StreamingClient.Transport.values()) {
                try (StreamingClient client = StreamingClient.builder().transport(t).build();
                        RemoteCommand cmd =
                                client.exec(
                                        exec(s, "cat"),
                                        new CommandOptions(true, true, false, false))) {
                    java.util.concurrent.CompletableFuture<Void> writing =
                            java.util.concurrent.CompletableFuture.runAsync(
                                    () -> {
                                        try {
                                            cmd.stdin().write(input);
                                            cmd.stdin().close();
                                        } catch (IOException e) {
                                            throw new java.io.UncheckedIOException(e);
                                        }
                                    });
                    // cat echoes what the server received: all of it was counted by then
                    assertThat(cmd.stdout().readAllBytes()).hasSize(size);
                    writing.get(10, TimeUnit.SECONDS);
                    assertThat(cmd.exitCode().get(10, TimeUnit.SECONDS)).isZero();
                }
            }
        }
        for (String transport : List.of("spdy", "websocket")) {
            for (String direction : List.of("sent", "received")) {
                double bytes =
                        registry.find("cri4j.streaming.bytes")
                                .tags(
                                        "kind",
                                        "exec",
                                        "transport",
                                        transport,
                                        "direction",
                                        direction)
                                .counter()
                                .count();
                // the data and its framing (and the upgrade answer): a few percent more at most
                assertThat(bytes)
                        .as(transport + " " + direction)
                        .isBetween((double) size, size * 1.05);
            }
        }
    }

    @Test
    void refusedStreamingUrlsAreRecordedByReason() throws Exception {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
                new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime())
                        .maxInFlight(1)
                        .meterRegistry(registry)
                        .build()
                        .start()) {
            URI first = exec(s, "cat");
            assertThatThrownBy(() -> exec(s, "cat"))
                    .isInstanceOf(io.grpc.StatusRuntimeException.class)
                    .hasMessageContaining("RESOURCE_EXHAUSTED");
            URI madeUp =
                    URI.create(
                            first.toString().substring(0, first.toString().lastIndexOf('/') + 1)
                                    + "AAAAAAAAAAAAAAAAAAAAAA");
            try (RawConn c = new RawConn(s.baseUrl())) {
                c.request(
                        "POST",
                        madeUp,
                        "Connection: Upgrade",
                        "Upgrade: SPDY/3.1",
                        "X-Stream-Protocol-Version: v4.channel.k8s.io");
                assertThat(c.status).isEqualTo(404);
            }
            assertThat(
                            registry.find("cri4j.streaming.token.rejections")
                                    .tags("reason", "cache_full")
                                    .counter()
                                    .count())
                    .isEqualTo(1);
            assertThat(
                            registry.find("cri4j.streaming.token.rejections")
                                    .tags("reason", "unknown")
                                    .counter()
                                    .count())
                    .isEqualTo(1);
        }
    }

    @Test
    void streamCreationTimeoutSendsGoAwayAndCloses() throws Exception {
        try (StreamingServer s =
                        StreamingServer.builder(new TestRuntime())
                                .streamCreationTimeout(Duration.ofMillis(300))
                                .build()
                                .start();
                RawConn c = new RawConn(s.baseUrl())) {
            c.request(
                    "POST",
                    exec(s, "cat"),
                    "Connection: Upgrade",
                    "Upgrade: SPDY/3.1",
                    "X-Stream-Protocol-Version: v4.channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            assertThat(c.header("x-stream-protocol-version")).isEqualTo("v4.channel.k8s.io");
            byte[] rest = c.readToEof();
            // GOAWAY: control bit, version 3, type 7, length 8, last stream 0, status 0 (OK)
            assertThat(rest).startsWith(0x80, 0x03, 0x00, 0x07, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0);
        }
    }

    @Test
    void silentConnectionIsClosedAfterTheStreamCreationTimeout() throws Exception {
        try (StreamingServer s =
                        StreamingServer.builder(new TestRuntime())
                                .streamCreationTimeout(Duration.ofMillis(300))
                                .build()
                                .start();
                RawConn c = new RawConn(s.baseUrl())) {
            assertThat(c.readToEof()).isEmpty(); // closed without a request ever arriving
        }
    }

    @Test
    void garbageFramesGetProtocolErrorGoAway() throws Exception {
        try (StreamingServer s = server(new TestRuntime());
                RawConn c = new RawConn(s.baseUrl())) {
            c.request(
                    "POST",
                    exec(s, "cat"),
                    "Connection: Upgrade",
                    "Upgrade: SPDY/3.1",
                    "X-Stream-Protocol-Version: v4.channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            // A control frame with version 2 is invalid for a SPDY/3.1 session.
            c.out.write(
                    new byte[] {
                        (byte) 0x80, 0x02, 0x00, 0x01, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0
                    });
            c.out.flush();
            byte[] rest = c.readToEof();
            assertThat(rest).startsWith(0x80, 0x03, 0x00, 0x07, 0, 0, 0, 8);
            assertThat(rest[15]).isEqualTo((byte) 1); // PROTOCOL_ERROR
        }
    }

    @Test
    void idleTimeoutClosesTheConnectionAndStopsTheRuntime() throws Exception {
        TestRuntime rt = new TestRuntime();
        try (StreamingServer s =
                        StreamingServer.builder(rt)
                                .idleTimeout(Duration.ofMillis(400))
                                .build()
                                .start();
                RawConn c = new RawConn(s.baseUrl())) {
            c.webSocket(exec(s, "hang"), "v4.channel.k8s.io");
            assertThat(c.status).isEqualTo(101);
            assertThat(rt.hangStarted.await(10, TimeUnit.SECONDS)).isTrue();
            c.readToEof(); // the server hangs up
            assertThat(rt.hangClosed.await(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    /** Sends {@code request} one byte per tick; returns when the server hung up, or after it all. */
    private static int drip(
            RawConn c, byte[] request, java.util.concurrent.ScheduledExecutorService ticks)
            throws Exception {
        java.util.concurrent.atomic.AtomicInteger sent =
                new java.util.concurrent.atomic.AtomicInteger();
        var task =
                ticks.scheduleAtFixedRate(
                        () -> {
                            int i = sent.get();
                            if (i < request.length) {
                                try {
                                    c.out.write(request[i]);
                                    c.out.flush();
                                    sent.incrementAndGet();
                                } catch (IOException closed) {
                                    throw new java.io.UncheckedIOException(closed); // ends the task
                                }
                            }
                        },
                        0,
                        50,
                        TimeUnit.MILLISECONDS);
        try {
            c.socket.setSoTimeout(30_000);
            assertThat(c.in.read())
                    .as("the server hangs up on a request that drips in")
                    .isEqualTo(-1);
        } finally {
            task.cancel(false);
        }
        return sent.get();
    }

    @Test
    void aRequestDrippingInIsCutOffAtTheRequestTimeoutThoughBytesKeepComing() throws Exception {
        var ticks = java.util.concurrent.Executors.newScheduledThreadPool(2);
        try (StreamingServer s =
                StreamingServer.builder(new TestRuntime())
                        .requestTimeout(Duration.ofSeconds(1))
                        .build()
                        .start()) {
            URI url = exec(s, "cat");
            byte[] request =
                    ("GET "
                                    + url.getRawPath()
                                    + " HTTP/1.1\r\nHost: x\r\nX-Pad: "
                                    + "a".repeat(400)
                                    + "\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII);
            long t0 = System.nanoTime();
            try (RawConn c = new RawConn(s.baseUrl())) {
                int sent = drip(c, request, ticks);
                assertThat(sent).as("bytes sent before the hang-up").isLessThan(request.length);
            }
            // many at once: all cut off, and a well-behaved client is served meanwhile
            List<RawConn> slow = new java.util.ArrayList<>();
            List<java.util.concurrent.Future<Integer>> drips = new java.util.ArrayList<>();
            var pool = java.util.concurrent.Executors.newFixedThreadPool(8);
            try {
                for (int i = 0; i < 40; i++) {
                    RawConn c = new RawConn(s.baseUrl());
                    slow.add(c);
                    drips.add(pool.submit(() -> drip(c, request, ticks)));
                }
                try (RawConn good = new RawConn(s.baseUrl())) {
                    good.webSocket(exec(s, "exit", "0"), "v5.channel.k8s.io");
                    assertThat(good.status).isEqualTo(101);
                }
                for (var f : drips) {
                    assertThat(f.get(60, TimeUnit.SECONDS)).isLessThan(request.length);
                }
            } finally {
                for (RawConn c : slow) {
                    c.close();
                }
                pool.shutdownNow();
            }
        } finally {
            ticks.shutdownNow();
        }
    }

    @AfterAll
    static void nothingLeaks() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (streamingThreads() > threadsBefore && System.nanoTime() < deadline) {
            Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("cri4j-streaming"))
                    .findFirst()
                    .ifPresent(
                            t -> {
                                try {
                                    t.join(500);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                            });
        }
        assertThat(streamingThreads()).isLessThanOrEqualTo(threadsBefore);
        assertThat(openFds()).as(fdList()).isLessThanOrEqualTo(fdsBefore);
    }
}
