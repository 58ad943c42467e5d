package io.cri4j.benchmarks;

import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.RemoteCommandStreams;
import io.cri4j.streaming.StreamingClient;
import io.cri4j.streaming.StreamingRuntime;
import io.cri4j.streaming.StreamingServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Shared set-up of the streaming benchmarks: a {@link StreamingServer} whose runtime serves two
 * commands, and a raw loopback TCP server that copies the same bytes the same way (the floor).
 * <ul>
 * <li>{@code write N}: writes N bytes to stdout in 32 KiB writes (the buffer size of Go's
 *     {@code io.Copy}, i.e. how containerd copies a process's pipe), as fast as the connection
 *     takes them;</li>
 * <li>{@code idle}: blocks reading stdin until the client closes it (an idle interactive exec).</li>
 * </ul>
 */
final class StreamingFixture implements AutoCloseable {
    /** Size of each write of the producer, in both the runtime and the raw copy. */
    static final int CHUNK = 32 * 1024;

    private final byte[] chunk = new byte[CHUNK];
    final StreamingServer server;
    private final ServerSocket raw;
    private final ExecutorService rawWriters =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "raw-copy");
                        t.setDaemon(true);
                        return t;
                    });
    private final Thread rawAcceptor;

    StreamingFixture(int maxSessions) throws IOException {
        ThreadLocalRandom.current().nextBytes(chunk);
        StreamingRuntime runtime =
                new StreamingRuntime() {
                    @Override
                    public int exec(String containerId, List<String> cmd, RemoteCommandStreams s)
                            throws Exception {
                        switch (cmd.get(0)) {
                            case "write" -> {
                                copy(Long.parseLong(cmd.get(1)), s.stdout().orElseThrow());
                                return 0;
                            }
                            case "idle" -> {
                                InputStream in = s.stdin().orElseThrow();
                                byte[] b = new byte[64];
                                while (in.read(b) >= 0) {
                                    // discard
                                }
                                return 0;
                            }
                            default -> {
                                return 127;
                            }
                        }
                    }
                };
        server =
                StreamingServer.builder(runtime)
                        .maxConcurrentSessions(maxSessions)
                        .maxInFlight(Math.max(1000, maxSessions))
                        .build()
                        .start();
        raw = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        rawAcceptor = new Thread(this::acceptRaw, "raw-accept");
        rawAcceptor.setDaemon(true);
        rawAcceptor.start();
    }

    private void copy(long n, OutputStream out) throws IOException {
        while (n > 0) {
            int k = (int) Math.min(n, CHUNK);
            out.write(chunk, 0, k);
            n -= k;
        }
        out.close();
    }

    private void acceptRaw() {
        while (!raw.isClosed()) {
            try {
                Socket s = raw.accept();
                s.setTcpNoDelay(true);
                rawWriters.execute(
                        () -> {
                            try (s;
                                    OutputStream out = s.getOutputStream()) {
                                // the reader asks for its byte count first, as an exec names its
                                // command
                                copy(
                                        new java.io.DataInputStream(s.getInputStream()).readLong(),
                                        out);
                            } catch (IOException e) {
                                // the reader went away; it reports the short count
                            }
                        });
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Copies {@code n} bytes over a new raw loopback TCP connection; returns the bytes read. */
    long rawCopy(long n) throws IOException {
        try (Socket s = new Socket()) {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), raw.getLocalPort()));
            new java.io.DataOutputStream(s.getOutputStream()).writeLong(n);
            return drain(s.getInputStream());
        }
    }

    /** A new exec URL for {@code cmd}. */
    URI execUrl(boolean stdin, boolean stdout, String... cmd) {
        return URI.create(
                server.getExec(
                                ExecRequest.newBuilder()
                                        .setContainerId("bench")
                                        .addAllCmd(List.of(cmd))
                                        .setStdin(stdin)
                                        .setStdout(stdout)
                                        .build())
                        .getUrl());
    }

    /** Runs {@code write n} through the streaming server with {@code client}; returns the bytes read. */
    long execCopy(StreamingClient client, long n) throws IOException, InterruptedException {
        try (RemoteCommand cmd =
                client.exec(
                        execUrl(false, true, "write", Long.toString(n)),
                        new CommandOptions(false, true, false, false))) {
            long got = drain(cmd.stdout());
            int code = cmd.waitFor();
            if (code != 0) {
                throw new IOException("exec exited with " + code);
            }
            return got;
        }
    }

    static long drain(InputStream in) throws IOException {
        byte[] b = new byte[CHUNK];
        long total = 0;
        int r;
        while ((r = in.read(b)) >= 0) {
            total += r;
        }
        return total;
    }

    static void check(long expected, long got) {
        if (expected != got) {
            throw new IllegalStateException("copied " + got + " bytes, expected " + expected);
        }
    }

    @Override
    public void close() throws IOException {
        raw.close();
        rawWriters.shutdownNow();
        server.close();
    }
}
