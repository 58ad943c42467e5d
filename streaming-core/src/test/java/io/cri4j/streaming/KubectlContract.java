package io.cri4j.streaming;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.streaming.testing.KubeFront;
import io.cri4j.streaming.testing.Kubectl;
import io.cri4j.streaming.testing.TestRuntime;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What every real kubectl must be able to do against our server through the
 * API-server/kubelet front; subclasses pick the kubectl version (and so SPDY or WebSocket).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@org.junit.jupiter.api.Timeout(
        value = 120,
        threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
abstract class KubectlContract {
    final TestRuntime runtime = new TestRuntime();
    StreamingServer server;
    KubeFront front;
    Kubectl kubectl;
    Path tmp;

    abstract Path binary();

    /** The transport the front must have seen for exec ("websocket" or "SPDY/3.1"). */
    abstract String expectedExecUpgrade();

    /** The upgrade the front must have seen for port-forward. */
    abstract String expectedPortForwardUpgrade();

    /** Where the binary comes from, for the skip message. */
    String origin() {
        return "Google Cloud SDK kubectl package of the machine image";
    }

    void setUp(Path dir) throws Exception {
        if (!java.nio.file.Files.isExecutable(binary())) {
            if ("true".equals(System.getenv("CI"))) {
                Kubectl.requireBinary(binary(), origin()); // fails under CI=true
            }
            return; // every test skips itself with the reason in @BeforeEach
        }
        tmp = dir;
        server = StreamingServer.builder(runtime).build().start();
        front = new KubeFront(server);
        kubectl = Kubectl.of(binary(), front.url(), dir);
    }

    /** Each test reports the skip and its reason (an abort in @BeforeAll would hide them). */
    @org.junit.jupiter.api.BeforeEach
    void requireKubectl() {
        Kubectl.requireBinary(binary(), origin());
    }

    @AfterAll
    void stop() throws Exception {
        if (front != null) {
            front.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void execWithStdinEchoesThroughCat() throws Exception {
        byte[] input = "hello from kubectl\nsecond line\n".getBytes(StandardCharsets.UTF_8);
        Kubectl.Result r = kubectl.run(input, 60, "exec", "-i", "p", "-c", "c", "--", "cat");
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        assertThat(r.stdout()).isEqualTo(input);
        assertThat(runtime.execs).contains("ctr-c:cat");
        assertThat(front.upgradeRequests)
                .anyMatch(
                        s ->
                                s.startsWith("GET exec " + expectedExecUpgrade())
                                        || s.startsWith("POST exec " + expectedExecUpgrade()));
    }

    @Test
    void exitCodesPropagate() throws Exception {
        for (int code : new int[] {0, 1, 42}) {
            Kubectl.Result r =
                    kubectl.run(null, 60, "exec", "p", "--", "exit", Integer.toString(code));
            assertThat(r.exitCode()).as("exit %d: %s", code, r.stderr()).isEqualTo(code);
            if (code != 0) {
                assertThat(r.stderr()).contains("command terminated with exit code " + code);
            }
        }
    }

    @Test
    void largeOutputArrivesCompleteBeforeTheStatus() throws Exception {
        int size = 16 * 1024 * 1024 + 123;
        Kubectl.Result r = kubectl.run(null, 90, "exec", "p", "--", "big", Integer.toString(size));
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        assertThat(r.stdout().length).isEqualTo(size);
        byte[] expectStart = "abcdefghijklmnopqrstuvwxyz".getBytes(StandardCharsets.US_ASCII);
        assertThat(Arrays.copyOf(r.stdout(), 26)).isEqualTo(expectStart);
        assertThat(r.stdout()[size - 1]).isEqualTo((byte) ('a' + ((size - 1) % (64 * 1024)) % 26));
    }

    @Test
    void stderrAndFailures() throws Exception {
        Kubectl.Result r = kubectl.run(null, 60, "exec", "p", "--", "err", "oops");
        assertThat(r.exitCode()).isEqualTo(3);
        assertThat(r.stderr()).contains("oops");
        Kubectl.Result f = kubectl.run(null, 60, "exec", "p", "--", "fail");
        assertThat(f.exitCode()).isNotZero();
        assertThat(f.stderr()).contains("boom");
    }

    @Test
    void attachEchoesStdin() throws Exception {
        byte[] input = "attached input\n".getBytes(StandardCharsets.UTF_8);
        Kubectl.Result r = kubectl.run(input, 60, "attach", "-i", "p", "-c", "c");
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        assertThat(r.out()).contains("attached input");
        assertThat(runtime.execs).contains("attach:ctr-c");
    }

    @Test
    void ttyExecGetsInitialSizeAndResize() throws Exception {
        Path pidFile = tmp.resolve("tty.pid");
        Path ttyFile = tmp.resolve("tty.name");
        Files.deleteIfExists(pidFile);
        Files.deleteIfExists(ttyFile);
        List<String> kc = kubectl.builder(List.of("exec", "-it", "p", "--", "tty")).command();
        String inner =
                "stty rows 40 cols 100; tty > "
                        + ttyFile
                        + "; echo $$ > "
                        + pidFile
                        + "; exec "
                        + String.join(" ", kc);
        ProcessBuilder pb = new ProcessBuilder("script", "-qfec", inner, "/dev/null");
        pb.environment().putAll(kubectl.builder(List.of()).environment());
        pb.redirectErrorStream(true);
        runtime.sizes.clear();
        Process p = pb.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread drain = Kubectl.drain(p.getInputStream(), out);
        try {
            await(
                    runtime.sizes,
                    () -> runtime.sizes.contains(new TerminalSize(100, 40)),
                    "initial size 100x40",
                    out);
            String tty = Files.readString(ttyFile).trim();
            String pid = Files.readString(pidFile).trim();
            assertThat(
                            new ProcessBuilder("stty", "-F", tty, "rows", "50", "cols", "120")
                                    .inheritIO()
                                    .start()
                                    .waitFor())
                    .isZero();
            assertThat(new ProcessBuilder("kill", "-WINCH", pid).start().waitFor()).isZero();
            await(
                    runtime.sizes,
                    () -> runtime.sizes.contains(new TerminalSize(120, 50)),
                    "resize to 120x50",
                    out);
            OutputStream in = p.getOutputStream();
            in.write("xyz".getBytes(StandardCharsets.US_ASCII));
            in.flush();
            // the runtime reports every resize event it gets on stdout from another thread, and
            // kubectl may send the same size again, so such a report can land between echoed bytes
            await(
                    out,
                    () ->
                            out.toString(StandardCharsets.UTF_8)
                                    .replaceAll("size \\d+x\\d+[\r\n]+", "")
                                    .contains("xyz"),
                    "tty echo",
                    out);
            in.write('q');
            in.flush();
            assertThat(p.waitFor(30, TimeUnit.SECONDS))
                    .as(out.toString(StandardCharsets.UTF_8))
                    .isTrue();
            assertThat(p.exitValue()).as(out.toString(StandardCharsets.UTF_8)).isZero();
            assertThat(out.toString(StandardCharsets.UTF_8)).contains("size 100x40", "size 120x50");
        } finally {
            p.destroyForcibly();
            drain.join(5000);
        }
    }

    @Test
    void portForwardRoundTripsBytes() throws Exception {
        try (ServerSocket target = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> echo =
                    CompletableFuture.runAsync(
                            () -> {
                                try {
                                    for (int i = 0; i < 2; i++) {
                                        try (Socket s = target.accept()) {
                                            s.getInputStream().transferTo(s.getOutputStream());
                                        }
                                    }
                                } catch (IOException e) {
                                    throw new RuntimeException(e);
                                }
                            });
            Process p =
                    kubectl.builder(
                                    List.of(
                                            "port-forward",
                                            "--address",
                                            "127.0.0.1",
                                            "p",
                                            ":" + target.getLocalPort()))
                            .redirectErrorStream(true)
                            .start();
            try {
                BufferedReader r =
                        new BufferedReader(
                                new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                Pattern fwd = Pattern.compile("Forwarding from 127\\.0\\.0\\.1:(\\d+) ->");
                int local = -1;
                StringBuilder seen = new StringBuilder();
                String line;
                while (local < 0 && (line = r.readLine()) != null) {
                    seen.append(line).append('\n');
                    Matcher m = fwd.matcher(line);
                    if (m.find()) {
                        local = Integer.parseInt(m.group(1));
                    }
                }
                assertThat(local).as(seen.toString()).isPositive();
                Kubectl.drain(p.getInputStream(), OutputStream.nullOutputStream());
                for (int i = 0; i < 2; i++) {
                    byte[] payload = new byte[300_000 + i];
                    new java.util.Random(i).nextBytes(payload);
                    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), local)) {
                        s.setSoTimeout(30_000);
                        CompletableFuture<byte[]> back =
                                CompletableFuture.supplyAsync(
                                        () -> {
                                            try {
                                                return s.getInputStream().readAllBytes();
                                            } catch (IOException e) {
                                                throw new RuntimeException(e);
                                            }
                                        });
                        s.getOutputStream().write(payload);
                        s.shutdownOutput();
                        assertThat(back.get(30, TimeUnit.SECONDS)).isEqualTo(payload);
                    }
                }
                echo.get(30, TimeUnit.SECONDS);
                assertThat(front.upgradeRequests)
                        .anyMatch(u -> u.contains("portforward " + expectedPortForwardUpgrade()));
            } finally {
                p.destroy();
                p.waitFor(10, TimeUnit.SECONDS);
                p.destroyForcibly();
            }
        }
    }

    interface Check {
        boolean ok() throws Exception;
    }

    /** Waits for a condition that producers signal with notifyAll on {@code monitor}. */
    static void await(Object monitor, Check c, String what, ByteArrayOutputStream out)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        synchronized (monitor) {
            while (!c.ok()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError(
                            "timed out waiting for "
                                    + what
                                    + "; output: "
                                    + out.toString(StandardCharsets.UTF_8));
                }
                TimeUnit.NANOSECONDS.timedWait(monitor, left);
            }
        }
    }

    @SuppressWarnings("unused")
    private static String readAll(InputStream in) throws IOException {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
}
