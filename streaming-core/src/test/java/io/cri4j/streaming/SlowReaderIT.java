package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.v1.ExecRequest;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A client that does not read stdout stops the runtime's writes after a bounded amount (the
 * client's inbound credit, the socket buffers, the server's outbound high-water mark): neither
 * side queues the whole output. Then everything is read, in order and complete. (Whether the
 * bound holds is watched for a few seconds: without back-pressure the runtime writes all 96 MiB
 * in far less.)
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SlowReaderIT {
    private static final long TOTAL = 96L << 20;

    /** Generous: 1 MiB credit, a read loop's worth, loopback socket buffers (up to ~10 MiB), 1 MiB outbound. */
    private static final long BOUND = 32L << 20;

    @ParameterizedTest
    @EnumSource(StreamingClient.Transport.class)
    void anUnreadStdoutBlocksTheRuntimeAfterABoundedAmount(StreamingClient.Transport transport)
            throws Exception {
        AtomicLong written = new AtomicLong();
        AtomicReference<Thread> writer = new AtomicReference<>();
        StreamingRuntime runtime =
                new StreamingRuntime() {
                    @Override
                    public int exec(String containerId, List<String> cmd, RemoteCommandStreams s)
                            throws Exception {
                        writer.set(Thread.currentThread());
                        OutputStream out = s.stdout().orElseThrow();
                        byte[] chunk = new byte[32 * 1024];
                        for (long at = 0; at < TOTAL; at += chunk.length) {
                            for (int i = 0; i < chunk.length; i += 4096) {
                                Arrays.fill(chunk, i, i + 4096, (byte) ((at + i) / 4096));
                            }
                            out.write(chunk);
                            written.addAndGet(chunk.length);
                        }
                        return 0;
                    }
                };
        try (StreamingServer server = StreamingServer.builder(runtime).build().start();
                StreamingClient client = StreamingClient.builder().transport(transport).build()) {
            URI url =
                    URI.create(
                            server.getExec(
                                            ExecRequest.newBuilder()
                                                    .setContainerId("c")
                                                    .addAllCmd(List.of("write"))
                                                    .setStdout(true)
                                                    .build())
                                    .getUrl());
            try (RemoteCommand cmd =
                    client.exec(url, new CommandOptions(false, true, false, false))) {
                // Nothing is read for a while: the runtime must end up waiting for the connection
                // to drain, and stay below the bound however long nobody reads.
                boolean blocked = false;
                long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(3);
                while (!blocked || System.nanoTime() < until) {
                    assertThat(written.get()).as("written with no reader").isLessThan(BOUND);
                    blocked |= blockedOnWritability(writer.get());
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                }

                InputStream in = cmd.stdout();
                byte[] b = new byte[65536];
                long at = 0;
                int n;
                while ((n = in.read(b)) >= 0) {
                    for (int i = 0; i < n; i++, at++) {
                        if (b[i] != (byte) (at / 4096)) {
                            throw new AssertionError("byte " + at + " is " + b[i]);
                        }
                    }
                }
                assertThat(at).isEqualTo(TOTAL);
                assertThat(cmd.waitFor()).isZero();
            }
        }
    }

    private static boolean blockedOnWritability(Thread t) {
        if (t == null || t.getState() != Thread.State.TIMED_WAITING) {
            return false;
        }
        return Arrays.stream(t.getStackTrace())
                .anyMatch(e -> e.getMethodName().equals("awaitWritable"));
    }
}
