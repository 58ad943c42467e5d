package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The WebSocket exec client against a hand-written server that sends its first frames in the same
 * write as the 101 (so they arrive in the read that completes the upgrade), then frames cut at
 * odd places across writes: many small messages, a fragmented stdout message with a control
 * frame inside, 16- and 64-bit lengths. Every byte must reach stdout and stderr in order.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class WebSocketClientFramingIT {
    private static byte[] frame(boolean fin, int opcode, byte[] payload) {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write((fin ? 0x80 : 0) | opcode);
        int n = payload.length;
        if (n < 126) {
            f.write(n);
        } else if (n < 65536) {
            f.write(126);
            f.write(n >>> 8);
            f.write(n);
        } else {
            f.write(127);
            for (int i = 7; i >= 0; i--) {
                f.write((int) ((long) n >>> (8 * i)));
            }
        }
        f.writeBytes(payload);
        return f.toByteArray();
    }

    private static byte[] message(int channel, byte[] data) {
        byte[] p = new byte[data.length + 1];
        p[0] = (byte) channel;
        System.arraycopy(data, 0, p, 1, data.length);
        return frame(true, 2, p);
    }

    @Test
    void everyByteArrivesInOrderHoweverFramesMeetSocketReads() throws Exception {
        Random random = new Random(3);
        ByteArrayOutputStream expectedOut = new ByteArrayOutputStream();
        ByteArrayOutputStream expectedErr = new ByteArrayOutputStream();
        ByteArrayOutputStream rest = new ByteArrayOutputStream();
        int firstWrite = 0; // bytes sent with the 101: 50 messages and a bit of the next one
        for (int i = 0; i < 300; i++) {
            byte[] d = new byte[1 + random.nextInt(i < 100 ? 20 : 40_000)];
            random.nextBytes(d);
            boolean err = i % 7 == 3;
            (err ? expectedErr : expectedOut).writeBytes(d);
            if (i == 50) {
                firstWrite = rest.size() + 3;
            }
            rest.writeBytes(message(err ? 2 : 1, d));
            if (i == 120) {
                byte[] big = new byte[200_000]; // 64-bit length
                random.nextBytes(big);
                expectedOut.writeBytes(big);
                rest.writeBytes(message(1, big));
            }
            if (i == 200) { // a fragmented stdout message with a ping inside
                rest.writeBytes(frame(false, 2, new byte[] {1, 'f', 'r'}));
                rest.writeBytes(frame(true, 9, "ping".getBytes(StandardCharsets.US_ASCII)));
                rest.writeBytes(frame(false, 0, "ag".getBytes(StandardCharsets.US_ASCII)));
                rest.writeBytes(frame(true, 0, "ment".getBytes(StandardCharsets.US_ASCII)));
                expectedOut.writeBytes("fragment".getBytes(StandardCharsets.US_ASCII));
            }
        }
        rest.writeBytes(
                message(
                        3,
                        "{\"metadata\":{},\"status\":\"Success\"}"
                                .getBytes(StandardCharsets.UTF_8)));
        rest.writeBytes(frame(true, 8, new byte[] {3, (byte) 232}));

        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                StreamingClient client =
                        StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .build()) {
            int split = firstWrite;
            CompletableFuture<Void> server =
                    CompletableFuture.runAsync(() -> serve(ss, rest.toByteArray(), split));
            URI url = URI.create("http://127.0.0.1:" + ss.getLocalPort() + "/exec/token");
            try (RemoteCommand cmd =
                    client.exec(url, new CommandOptions(false, true, true, false))) {
                CompletableFuture<byte[]> err =
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return cmd.stderr().readAllBytes();
                                    } catch (IOException e) {
                                        throw new java.io.UncheckedIOException(e);
                                    }
                                });
                byte[] out = cmd.stdout().readAllBytes();
                assertThat(out).hasSize(expectedOut.size());
                assertThat(out).isEqualTo(expectedOut.toByteArray());
                assertThat(err.get(30, TimeUnit.SECONDS)).isEqualTo(expectedErr.toByteArray());
                assertThat(cmd.exitCode().get(30, TimeUnit.SECONDS)).isZero();
            }
            server.get(30, TimeUnit.SECONDS);
        }
    }

    private static void serve(ServerSocket ss, byte[] frames, int firstWrite) {
        try (Socket s = ss.accept()) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(s.getInputStream());
            String key = null;
            String line;
            while (!(line = readLine(in)).isEmpty()) {
                if (line.toLowerCase(java.util.Locale.ROOT).startsWith("sec-websocket-key:")) {
                    key = line.substring(line.indexOf(':') + 1).trim();
                }
            }
            String accept =
                    Base64.getEncoder()
                            .encodeToString(
                                    MessageDigest.getInstance("SHA-1")
                                            .digest(
                                                    (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                                            .getBytes(StandardCharsets.US_ASCII)));
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            head.writeBytes(
                    ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    + "Sec-WebSocket-Accept: "
                                    + accept
                                    + "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            head.write(frames, 0, firstWrite);
            OutputStream out = s.getOutputStream();
            out.write(head.toByteArray()); // the first frames in the same segment as the 101, the
            // last cut
            out.flush();
            Random cuts = new Random(5);
            for (int at = firstWrite; at < frames.length; ) {
                int n =
                        Math.min(
                                frames.length - at,
                                1 + cuts.nextInt(cuts.nextBoolean() ? 7 : 50_000));
                out.write(frames, at, n);
                out.flush();
                at += n;
            }
            s.shutdownOutput();
            InputStream drain = s.getInputStream();
            while (drain.read(new byte[4096]) >= 0) {
                // the client's pong and close; wait for it to hang up
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String readLine(DataInputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }
}
