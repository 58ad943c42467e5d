package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.hook.Hook;
import io.cri4j.hook.koordinator.HookServer;
import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Resident memory (RSS, {@code VmRSS} of {@code /proc/PID/status}) of the CLI's processes as a
 * node runs them: {@code cri4j fake-runtime} and {@code cri4j proxy} in front of it with a
 * watched hook config directory, each a JVM of its own started from the CLI jar. Per JVM setting
 * (the JVM's own defaults, and the defaults {@code ./cri4j} and the container image set), in the
 * same run: RSS once both serve and answered a first call, again after they stayed idle for
 * {@code -Dsettle} seconds (default 10: "idle"), after every 25,000 of
 * {@code calls} relayed {@code Version} calls (8 callers on one channel), and after
 * {@code changes} changes of a hook config file (a hook server in this JVM; a relayed call after
 * each change), and the relayed calls per second. With flags, the processes get
 * {@code MALLOC_ARENA_MAX=2} as {@code ./cri4j} gives them; without, glibc's default. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.MemoryFootprint cli/target/cri4j-cli.jar [calls] [changes]},
 * with the flags to compare in {@code -Dflags="..."} (default: those of {@code ./cri4j}, the proxy
 * with its {@code proxy_flags} after them).
 */
public final class MemoryFootprint {
    private MemoryFootprint() {}

    /** How long the processes stay idle after their first call before the second reading. */
    private static long settleMs() {
        return Long.getLong("settle", 10) * 1000;
    }

    /** A CLI process and its output, read on a thread of its own. */
    private static final class Cli implements AutoCloseable {
        final Process process;
        final CompletableFuture<Void> serving = new CompletableFuture<>();

        Cli(Path jar, List<String> flags, String... args) throws Exception {
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.addAll(flags);
            cmd.addAll(List.of("-jar", jar.toString()));
            cmd.addAll(Arrays.asList(args));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            if (flags.isEmpty()) {
                pb.environment().remove("MALLOC_ARENA_MAX"); // the JVM's and glibc's own defaults
            } else {
                pb.environment().put("MALLOC_ARENA_MAX", "2"); // as ./cri4j and the image set it
            }
            process = pb.start();
            Thread t =
                    new Thread(
                            () -> {
                                try (BufferedReader r =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        process.getInputStream(),
                                                        StandardCharsets.UTF_8))) {
                                    for (String l; (l = r.readLine()) != null; ) {
                                        if (l.contains("serving")) {
                                            serving.complete(null);
                                        }
                                    }
                                } catch (Exception e) {
                                    // gone
                                }
                                serving.completeExceptionally(
                                        new IllegalStateException(
                                                "exited: " + String.join(" ", args)));
                            });
            t.setDaemon(true);
            t.start();
        }

        long rssKib() throws Exception {
            for (String l : Files.readAllLines(Path.of("/proc/" + process.pid() + "/status"))) {
                if (l.startsWith("VmRSS:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
            throw new IllegalStateException("no VmRSS");
        }

        @Override
        public void close() {
            process.destroy();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The JVM flags {@code ./cri4j} sets (its {@code defaults=} line). */
    static List<String> scriptFlags(Path script) throws Exception {
        return scriptLine(script, "defaults");
    }

    /**
     * The flags {@code ./cri4j} adds for {@code command} after its defaults (its {@code
     * proxy_flags=} line for {@code proxy}; none for the other commands).
     */
    static List<String> scriptCommandFlags(Path script, String command) throws Exception {
        return command.equals("proxy") ? scriptLine(script, "proxy_flags") : List.of();
    }

    private static List<String> scriptLine(Path script, String name) throws Exception {
        for (String l : Files.readAllLines(script)) {
            if (l.startsWith(name + "=")) {
                return Arrays.asList(
                        l.substring(name.length() + 1).replace("\"", "").trim().split("\\s+"));
            }
        }
        throw new IllegalStateException("no " + name + "= line in " + script);
    }

    private static String mib(long kib) {
        return String.format("%.1f", kib / 1024.0);
    }

    /** @param args the CLI jar, calls (100000), config changes (1000) */
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]).toAbsolutePath();
        int calls = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        int changes = args.length > 2 ? Integer.parseInt(args[2]) : 1_000;
        String flagProp = System.getProperty("flags");
        List<String> flags =
                flagProp != null
                        ? Arrays.asList(flagProp.trim().split("\\s+"))
                        : scriptFlags(Path.of("cri4j"));
        // the proxy's own flags after the defaults, as ./cri4j starts it (not with -Dflags)
        List<String> proxyFlags =
                flagProp != null ? List.of() : scriptCommandFlags(Path.of("cri4j"), "proxy");
        Map<String, List<String>> settings = new LinkedHashMap<>();
        settings.put("JVM defaults", List.of());
        settings.put("cri4j defaults", flags);
        String also = System.getProperty("also");
        if (also != null) {
            settings.put("also", Arrays.asList(also.trim().split("\\s+")));
            System.out.println("also: " + also);
        }
        System.out.println(
                "flags: "
                        + String.join(" ", flags)
                        + (proxyFlags.isEmpty()
                                ? ""
                                : "; the proxy's: " + String.join(" ", proxyFlags)));
        System.out.println(
                "RSS in MiB: at the first answer, idle "
                        + settleMs() / 1000
                        + " s later, after each quarter of the calls, after the config changes;"
                        + " then relayed calls per second");
        for (Map.Entry<String, List<String>> s : settings.entrySet()) {
            List<String> proxy = new ArrayList<>(s.getValue());
            if (s.getKey().equals("cri4j defaults")) {
                proxy.addAll(proxyFlags);
            }
            run(jar, s.getKey(), s.getValue(), proxy, calls, changes);
        }
    }

    private static void run(
            Path jar,
            String name,
            List<String> flags,
            List<String> proxyFlags,
            int calls,
            int changes)
            throws Exception {
        Path dir = Files.createTempDirectory("cri4j-rss");
        Path hooks = Files.createDirectories(dir.resolve("hooks"));
        Hook noop =
                new Hook() {
                    @Override
                    public String name() {
                        return "noop";
                    }

                    @Override
                    public io.cri4j.hook.HookResult createContainer(
                            io.cri4j.hook.nri.v1alpha1.PodSandbox pod,
                            io.cri4j.hook.nri.v1alpha1.Container c) {
                        return io.cri4j.hook.HookResult.none();
                    }
                };
        try (HookServer hookServer = HookServer.start(dir.resolve("hook.sock"), List.of(noop));
                Cli fake =
                        new Cli(
                                jar,
                                flags,
                                "fake-runtime",
                                "--listen",
                                "unix://" + dir.resolve("fake.sock"));
                Cli proxy = startProxy(jar, proxyFlags, dir, fake)) {
            ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(dir.resolve("proxy.sock")));
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                        .version(VersionRequest.getDefaultInstance());
                List<String> row = new ArrayList<>();
                List<String> fakeRow = new ArrayList<>();
                row.add(mib(proxy.rssKib()));
                fakeRow.add(mib(fake.rssKib()));
                // idle for a while: what a JVM compiled or allocated for its start is given back
                // by now where its flags say so (e.g. -XX:TrimNativeHeapInterval)
                Thread.sleep(settleMs());
                row.add(mib(proxy.rssKib()));
                fakeRow.add(mib(fake.rssKib()));
                ExecutorService callers = Executors.newFixedThreadPool(8);
                AtomicInteger left = new AtomicInteger(calls);
                int step = Math.max(1, calls / 4);
                long t0 = System.nanoTime();
                for (int done = 0; done < calls; done += step) {
                    AtomicInteger batch = new AtomicInteger(Math.min(step, calls - done));
                    List<CompletableFuture<Void>> fs = new ArrayList<>();
                    for (int c = 0; c < 8; c++) {
                        fs.add(
                                CompletableFuture.runAsync(
                                        () -> {
                                            while (batch.getAndDecrement() > 0) {
                                                rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                                                        .version(
                                                                VersionRequest
                                                                        .getDefaultInstance());
                                                left.decrementAndGet();
                                            }
                                        },
                                        callers));
                    }
                    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new))
                            .get(30, TimeUnit.MINUTES);
                    row.add(mib(proxy.rssKib()));
                    fakeRow.add(mib(fake.rssKib()));
                }
                double perSecond = calls / ((System.nanoTime() - t0) / 1e9);
                callers.shutdownNow();
                for (int i = 0; i < changes; i++) {
                    Path tmp = hooks.resolve(".h.tmp");
                    Files.writeString(
                            tmp,
                            "{\"remote-endpoint\": \""
                                    + hookServer.socket()
                                    + "\", \"runtime-hooks\": [\"PreCreateContainer\"], \"timeout\": \""
                                    + (1 + i % 50)
                                    + "s\"}");
                    Files.move(tmp, hooks.resolve("h.json"), StandardCopyOption.ATOMIC_MOVE);
                    rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                            .version(VersionRequest.getDefaultInstance());
                }
                row.add(mib(proxy.rssKib()));
                fakeRow.add(mib(fake.rssKib()));
                System.out.printf(
                        "%-15s %-6s %s  %.0f calls/s%n",
                        name, "proxy", String.join(" ", row), perSecond);
                System.out.printf("%-15s %-6s %s%n", name, "fake", String.join(" ", fakeRow));
            } finally {
                ch.shutdownNow();
            }
        }
    }

    private static Cli startProxy(Path jar, List<String> flags, Path dir, Cli fake)
            throws Exception {
        fake.serving.get(60, TimeUnit.SECONDS);
        Cli proxy =
                new Cli(
                        jar,
                        flags,
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("proxy.sock"),
                        "--backend",
                        "unix://" + dir.resolve("fake.sock"),
                        "--hook-config-dir",
                        dir.resolve("hooks").toString());
        proxy.serving.get(60, TimeUnit.SECONDS);
        return proxy;
    }
}
