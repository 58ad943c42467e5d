package io.cri4j.benchmarks;

import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Heap of N concurrent idle exec sessions (default 1000): the server runs in this JVM with a
 * runtime that blocks reading stdin; the clients (our {@link StreamingClient}) run in a child JVM,
 * so the server's heap is measured alone. Used heap after GC is taken before the sessions open
 * (after a warm-up of 20 sessions) and once all N are being served; the child reports its own
 * figure the same way. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.StreamingSessionHeap [sessions] [spdy|ws]}.
 */
public final class StreamingSessionHeap {
    private StreamingSessionHeap() {}

    /** @param args optional number of sessions (default 1000) and transport (spdy or ws, default spdy) */
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--clients")) {
            clients(args[1]);
            return;
        }
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        String transport = args.length > 1 ? args[1] : "spdy";
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        try (StreamingFixture f = new StreamingFixture(n + 100)) {
            Process child =
                    new ProcessBuilder(
                                    java,
                                    "-cp",
                                    System.getProperty("java.class.path"),
                                    StreamingSessionHeap.class.getName(),
                                    "--clients",
                                    transport)
                            .redirectError(ProcessBuilder.Redirect.INHERIT)
                            .start();
            try (PrintStream toChild =
                            new PrintStream(child.getOutputStream(), true, StandardCharsets.UTF_8);
                    BufferedReader fromChild =
                            new BufferedReader(
                                    new InputStreamReader(
                                            child.getInputStream(), StandardCharsets.UTF_8))) {
                for (int i = 0; i < 20; i++) {
                    toChild.println("W " + f.execUrl(true, true, "idle"));
                }
                toChild.println("M");
                String childBefore = expect(fromChild, "heap");
                long before = usedHeapAfterGc();
                long threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
                long fdsBefore = openFds();
                String rssBefore = rss();
                for (int i = 0; i < n; i++) {
                    toChild.println("O " + f.execUrl(true, true, "idle"));
                }
                toChild.println("M");
                String childAfter = expect(fromChild, "heap");
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (f.server.activeSessions() < n && System.nanoTime() < deadline) {
                    Thread.sleep(
                            50); // a benchmark, not a test: wait for the server to see them all
                }
                int active = f.server.activeSessions();
                long after = usedHeapAfterGc();
                long threadsAfter = ManagementFactory.getThreadMXBean().getThreadCount();
                long fdsAfter = openFds();
                toChild.println("C");
                String closed = expect(fromChild, "closed");
                long cb = Long.parseLong(childBefore.split(" ")[1]);
                long ca = Long.parseLong(childAfter.split(" ")[1]);
                System.out.printf(
                        "%s, %d idle exec sessions (server saw %d active); ulimit -n (soft) %s%n",
                        transport, n, active, ulimitN());
                System.out.printf(
                        "server JVM: used heap after GC %.1f -> %.1f MiB: %.1f MiB for %d sessions, %.1f KiB each;"
                                + " threads %d -> %d, fds %d -> %d, RSS %s -> %s%n",
                        mib(before),
                        mib(after),
                        mib(after - before),
                        n,
                        (after - before) / 1024.0 / n,
                        threadsBefore,
                        threadsAfter,
                        fdsBefore,
                        fdsAfter,
                        rssBefore,
                        rss());
                System.out.printf(
                        "client JVM: used heap after GC %.1f -> %.1f MiB: %.1f MiB, %.1f KiB per session; %s%n",
                        mib(cb), mib(ca), mib(ca - cb), (ca - cb) / 1024.0 / n, closed);
            } finally {
                child.destroy();
                child.waitFor();
            }
        }
    }

    private static String expect(BufferedReader in, String prefix) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new IllegalStateException("client JVM ended before reporting " + prefix);
    }

    /** The child: reads W/O url (warm-up / open and keep), M (measure), C (close all) from stdin. */
    private static void clients(String transport) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<RemoteCommand> open = new ArrayList<>();
        CommandOptions opts = new CommandOptions(true, true, false, false);
        try (StreamingClient client =
                transport.equals("ws")
                        ? StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .build()
                        : StreamingClient.builder().build()) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("W ")) {
                    try (RemoteCommand c = client.exec(URI.create(line.substring(2)), opts)) {
                        c.stdin().close();
                        c.waitFor();
                    }
                } else if (line.startsWith("O ")) {
                    open.add(client.exec(URI.create(line.substring(2)), opts));
                } else if (line.equals("M")) {
                    System.out.println("heap " + usedHeapAfterGc());
                } else if (line.equals("C")) {
                    int ok = 0;
                    for (RemoteCommand c : open) {
                        c.stdin().close();
                    }
                    for (RemoteCommand c : open) {
                        if (c.waitFor() == 0) {
                            ok++;
                        }
                        c.close();
                    }
                    System.out.println(
                            "closed: "
                                    + ok
                                    + " of "
                                    + open.size()
                                    + " sessions exited 0 after stdin EOF");
                    return;
                }
            }
        }
    }

    static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static double mib(long bytes) {
        return bytes / 1048576.0;
    }

    private static long openFds() {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        } catch (Exception e) {
            return -1;
        }
    }

    private static String rss() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("VmRSS"))
                    .map(l -> l.substring(6).trim())
                    .findFirst()
                    .orElse("?");
        } catch (Exception e) {
            return "?";
        }
    }

    private static String ulimitN() {
        try {
            Process p =
                    new ProcessBuilder("sh", "-c", "ulimit -n").redirectErrorStream(true).start();
            String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            p.waitFor();
            return s;
        } catch (Exception e) {
            return "?";
        }
    }
}
