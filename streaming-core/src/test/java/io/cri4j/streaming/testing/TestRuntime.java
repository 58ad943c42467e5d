package io.cri4j.streaming.testing;

import io.cri4j.streaming.PortForwardStream;
import io.cri4j.streaming.RemoteCommandStreams;
import io.cri4j.streaming.StreamingRuntime;
import io.cri4j.streaming.TerminalSize;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * A small in-process "container": commands {@code cat}, {@code echo ...}, {@code exit N},
 * {@code big N} (N bytes of a pattern), {@code err TEXT} (to stderr), {@code fail} (throws),
 * {@code tty} (reports terminal sizes, echoes stdin, ends at 'q'), {@code hang} (until closed);
 * attach behaves like cat; port-forward dials 127.0.0.1:port.
 */
public final class TestRuntime implements StreamingRuntime {
    public final List<TerminalSize> sizes = new CopyOnWriteArrayList<>();
    public final List<String> execs = new CopyOnWriteArrayList<>();

    /** "cmd -> result" for every finished exec, in completion order. */
    public final java.util.concurrent.BlockingQueue<String> ended =
            new java.util.concurrent.LinkedBlockingQueue<>();

    public volatile CountDownLatch hangStarted = new CountDownLatch(1);
    public volatile CountDownLatch hangClosed = new CountDownLatch(1);

    @Override
    public int exec(String containerId, List<String> cmd, RemoteCommandStreams s) throws Exception {
        String what = String.join(" ", cmd);
        try {
            int code = run(containerId, cmd, s);
            ended.add(what + " -> " + code);
            return code;
        } catch (Exception e) {
            ended.add(what + " -> " + e);
            throw e;
        }
    }

    private int run(String containerId, List<String> cmd, RemoteCommandStreams s) throws Exception {
        execs.add(containerId + ":" + String.join(" ", cmd));
        String c = cmd.isEmpty() ? "" : cmd.get(0);
        switch (c) {
            case "cat" -> {
                copy(s.stdin().orElseThrow(), s.stdout().orElseThrow());
                return 0;
            }
            case "echo" -> {
                s.stdout()
                        .orElseThrow()
                        .write(
                                (String.join(" ", cmd.subList(1, cmd.size())) + "\n")
                                        .getBytes(StandardCharsets.UTF_8));
                return 0;
            }
            case "err" -> {
                s.stderr()
                        .orElseThrow()
                        .write((cmd.get(1) + "\n").getBytes(StandardCharsets.UTF_8));
                return 3;
            }
            case "exit" -> {
                return Integer.parseInt(cmd.get(1));
            }
            case "big" -> {
                long n = Long.parseLong(cmd.get(1));
                byte[] chunk = new byte[64 * 1024];
                for (int i = 0; i < chunk.length; i++) {
                    chunk[i] = (byte) ('a' + (i % 26));
                }
                OutputStream out = s.stdout().orElseThrow();
                while (n > 0) {
                    int k = (int) Math.min(n, chunk.length);
                    out.write(chunk, 0, k);
                    n -= k;
                }
                return 0;
            }
            case "fail" -> throw new IOException("boom");
            case "hang" -> {
                CountDownLatch closed = hangClosed;
                s.onClose(closed::countDown);
                hangStarted.countDown();
                closed.await();
                return 0;
            }
            case "tty" -> {
                OutputStream out = s.stdout().orElseThrow();
                Thread sizer =
                        new Thread(
                                () -> {
                                    try {
                                        TerminalSize t;
                                        while ((t = s.resizes().next()) != null) {
                                            synchronized (sizes) {
                                                sizes.add(t);
                                                sizes.notifyAll();
                                            }
                                            synchronized (out) {
                                                out.write(
                                                        ("size "
                                                                        + t.width()
                                                                        + "x"
                                                                        + t.height()
                                                                        + "\r\n")
                                                                .getBytes(StandardCharsets.UTF_8));
                                            }
                                        }
                                    } catch (InterruptedException | IOException e) {
                                        // session over
                                    }
                                });
                sizer.setDaemon(true);
                sizer.start();
                InputStream in = s.stdin().orElseThrow();
                int b;
                while ((b = in.read()) >= 0) {
                    if (b == 'q') {
                        break;
                    }
                    synchronized (out) {
                        out.write(b);
                        out.flush();
                    }
                }
                return 0;
            }
            default -> throw new IOException("executable file not found: " + c);
        }
    }

    @Override
    public void attach(String containerId, RemoteCommandStreams s) throws Exception {
        execs.add("attach:" + containerId);
        copy(s.stdin().orElseThrow(), s.stdout().orElseThrow());
    }

    @Override
    public void portForward(String podSandboxId, int port, PortForwardStream stream)
            throws Exception {
        try (Socket sock = new Socket(InetAddress.getLoopbackAddress(), port)) {
            Thread up =
                    new Thread(
                            () -> {
                                try {
                                    copy(stream.input(), sock.getOutputStream());
                                    sock.shutdownOutput();
                                } catch (IOException e) {
                                    // closed
                                }
                            });
            up.setDaemon(true);
            up.start();
            copy(sock.getInputStream(), stream.output());
            stream.output().close();
            up.join(10_000);
        }
    }

    static void copy(InputStream in, OutputStream out) throws IOException {
        byte[] buf = new byte[32 * 1024];
        int n;
        while ((n = in.read(buf)) >= 0) {
            out.write(buf, 0, n);
            out.flush();
        }
    }
}
