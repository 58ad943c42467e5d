package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Cold start of {@code cri4j proxy}, {@code cri4j fake-runtime} and {@code cri4j nri-plugin}: the
 * time from starting the JVM to its first answer, per command and JVM setting, against {@code
 * java -version} with the same flags as the floor. The first answer is: for {@code proxy}, a
 * {@code Version} answered through it (relayed to a {@code cri4j fake-runtime} started once
 * beforehand); for {@code fake-runtime}, a {@code Version} it answered; for {@code nri-plugin}
 * (with the hook jars of {@code -Dplugins=DIR}), its registration with an NRI host in this JVM
 * (configured and synchronized: the host's listener hears it). Every round starts one process of
 * each setting in a rotating order, so load changes on a shared machine hit all of them alike; it
 * prints the median and the range of each, and the process's CPU time until then. The client in
 * this JVM polls a socket every millisecond with a 1 s deadline per call. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ColdStart cli/target/cri4j-cli.jar [rounds]}
 * (default 10), with {@code -Dcommands=proxy,fake-runtime,nri-plugin} (the default: the ones
 * whose inputs are there; {@code nri-plugin} needs {@code -Dplugins}), the settings as system
 * properties {@code -Dset.NAME="flags..."} (default: {@code ./cri4j}'s {@code defaults=} line, with
 * its {@code proxy_flags=} after it for {@code proxy}, as "cri4j", plus, with {@code -Dcds=true}, the same with each command's AppCDS archive as
 * {@code ./cri4j} names it next to the jar ({@code cri4j-cli-COMMAND.jsa}) as "cri4j+cds"; in a
 * setting's flags {@code @COMMAND@} stands for the command and {@code @COMMAND_FLAGS@} for the flags
 * {@code ./cri4j} adds for it), and {@code -Djar.NAME=FILE} to start setting NAME from another CLI jar (e.g. the
 * build before a change, in the same run); one round of warm-up first ({@code -Dwarmup=false}
 * leaves it out). A process that exits before its first answer stops the
 * run with its output.
 */
public final class ColdStart {
    private ColdStart() {}

    /** In a setting's flags, stands for the command being started. */
    private static final String COMMAND = "@COMMAND@";

    /** In a setting's flags: the flags {@code ./cri4j} adds for the command (the proxy's). */
    private static final String COMMAND_FLAGS = "@COMMAND_FLAGS@";

    /** One command's start: what to run and when it has answered. */
    private interface Command {
        List<String> args(Path dir) throws java.io.IOException;

        /** Blocks until the process answered; false if it exited first. */
        boolean answered(Process p, Path dir) throws Exception;
    }

    /** @param args the CLI jar, rounds (10) */
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]).toAbsolutePath();
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        Map<String, List<String>> settings = new LinkedHashMap<>();
        for (String name : new java.util.TreeSet<>(System.getProperties().stringPropertyNames())) {
            if (name.startsWith("set.")) {
                settings.put(name.substring(4), split(System.getProperty(name)));
            }
        }
        if (settings.isEmpty()) {
            List<String> flags = new ArrayList<>(MemoryFootprint.scriptFlags(Path.of("cri4j")));
            flags.add(COMMAND_FLAGS);
            settings.put("cri4j", flags);
            if (Boolean.getBoolean("cds")) {
                // each command's archive, named as ./cri4j names it next to the jar
                String stem = jar.toString().replaceFirst("\\.jar$", "");
                List<String> withCds = new ArrayList<>(flags);
                withCds.remove("-Xshare:off");
                withCds.add("-XX:SharedArchiveFile=" + stem + "-" + COMMAND + ".jsa");
                settings.put("cri4j+cds", withCds);
            }
        }
        String plugins = System.getProperty("plugins");
        List<String> commands =
                split(
                        System.getProperty(
                                        "commands",
                                        "proxy,fake-runtime"
                                                + (plugins != null ? ",nri-plugin" : ""))
                                .replace(',', ' '));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path dir = Files.createTempDirectory("cri4j-coldstart");
        List<String> fakeCmd = new ArrayList<>(List.of(java, "-jar", jar.toString()));
        fakeCmd.addAll(List.of("fake-runtime", "--listen", "unix://" + dir.resolve("fake.sock")));
        Process fake =
                commands.contains("proxy")
                        ? new ProcessBuilder(fakeCmd).redirectErrorStream(true).start()
                        : null;
        StringBuilder fakeOut = fake == null ? null : drain(fake.getInputStream());
        RegistrationHost nri =
                commands.contains("nri-plugin")
                        ? new RegistrationHost(dir.resolve("nri.sock"))
                        : null;
        Map<String, Command> known = new LinkedHashMap<>();
        known.put("proxy", relaying());
        known.put("fake-runtime", serving());
        if (nri != null) {
            known.put("nri-plugin", registering(nri, Path.of(plugins).toAbsolutePath()));
        }
        List<String> names = new ArrayList<>(settings.keySet());
        Map<String, double[]> start = new LinkedHashMap<>();
        Map<String, double[]> floor = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        for (String c : commands) {
            if (!known.containsKey(c)) {
                throw new IllegalArgumentException(
                        "unknown command "
                                + c
                                + " (proxy, fake-runtime, nri-plugin with -Dplugins)");
            }
            for (String n : names) {
                cpu.put(c + " " + n, new double[rounds]);
                start.put(c + " " + n, new double[rounds]);
                floor.put(c + " " + n, new double[rounds]);
            }
        }
        try {
            if (fake != null && !answer(dir.resolve("fake.sock"), fake, 60_000)) {
                throw new IllegalStateException("the fake runtime exited: " + fakeOut);
            }
            // round -1: warm-up (page cache); -Dwarmup=false leaves it out
            int firstRound = Boolean.parseBoolean(System.getProperty("warmup", "true")) ? -1 : 0;
            for (int r = firstRound; r < rounds; r++) {
                for (String c : commands) {
                    for (int k = 0; k < names.size(); k++) {
                        String n = names.get((Math.max(r, 0) + k) % names.size());
                        List<String> flags = new ArrayList<>();
                        for (String x : settings.get(n)) {
                            if (x.equals(COMMAND_FLAGS)) {
                                flags.addAll(
                                        MemoryFootprint.scriptCommandFlags(Path.of("cri4j"), c));
                            } else {
                                flags.add(x.replace(COMMAND, c));
                            }
                        }
                        double f = javaVersion(java, flags);
                        Path j = Path.of(System.getProperty("jar." + n, jar.toString()));
                        double[] cpuMs = new double[1];
                        double s =
                                firstAnswer(
                                        java, flags, j.toAbsolutePath(), known.get(c), dir, cpuMs);
                        if (r >= 0) {
                            cpu.get(c + " " + n)[r] = cpuMs[0];
                            floor.get(c + " " + n)[r] = f;
                            start.get(c + " " + n)[r] = s;
                        }
                    }
                }
            }
        } finally {
            if (fake != null) {
                fake.destroy();
                fake.waitFor(30, TimeUnit.SECONDS);
            }
            if (nri != null) {
                nri.close();
            }
        }
        System.out.printf(
                "%d rounds; ms from exec to the first answer (proxy, fake-runtime: a Version;"
                        + " nri-plugin: registered), median (min..max); the process's CPU time (user"
                        + " + system) until then; ratio: median of the per-round ratios to the first"
                        + " setting%n",
                rounds);
        for (String c : commands) {
            double[] first = start.get(c + " " + names.get(0));
            for (String n : names) {
                String key = c + " " + n;
                double[] ratio = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    ratio[r] = start.get(key)[r] / first[r];
                }
                System.out.printf(
                        "%-12s %-12s %6.0f (%4.0f..%4.0f) ratio %.2f  CPU %5.0f (%4.0f..%4.0f)   java"
                                + " -version %4.0f (%4.0f..%4.0f)   flags: %s%n",
                        n,
                        c,
                        q(start.get(key), .5),
                        q(start.get(key), 0),
                        q(start.get(key), 1),
                        q(ratio, .5),
                        q(cpu.get(key), .5),
                        q(cpu.get(key), 0),
                        q(cpu.get(key), 1),
                        q(floor.get(key), .5),
                        q(floor.get(key), 0),
                        q(floor.get(key), 1),
                        String.join(" ", settings.get(n))
                                + (System.getProperty("jar." + n) == null
                                        ? ""
                                        : " (jar " + System.getProperty("jar." + n) + ")"));
            }
        }
    }

    /** {@code proxy}: a Version relayed through it to the fake runtime. */
    private static Command relaying() {
        return new Command() {
            @Override
            public List<String> args(Path dir) throws java.io.IOException {
                Files.deleteIfExists(dir.resolve("proxy.sock"));
                return List.of(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("proxy.sock"),
                        "--backend",
                        "unix://" + dir.resolve("fake.sock"));
            }

            @Override
            public boolean answered(Process p, Path dir) throws Exception {
                return answer(dir.resolve("proxy.sock"), p, 60_000);
            }
        };
    }

    /** {@code fake-runtime}: a Version it answers itself. */
    private static Command serving() {
        return new Command() {
            @Override
            public List<String> args(Path dir) throws java.io.IOException {
                Files.deleteIfExists(dir.resolve("runtime.sock"));
                return List.of("fake-runtime", "--listen", "unix://" + dir.resolve("runtime.sock"));
            }

            @Override
            public boolean answered(Process p, Path dir) throws Exception {
                return answer(dir.resolve("runtime.sock"), p, 60_000);
            }
        };
    }

    /** {@code nri-plugin}: registered with the host in this JVM. */
    private static Command registering(RegistrationHost host, Path plugins) {
        return new Command() {
            @Override
            public List<String> args(Path dir) {
                host.expect();
                return List.of(
                        "nri-plugin",
                        "--socket",
                        "unix://" + host.socket,
                        "--plugins",
                        plugins.toString(),
                        "--name",
                        "coldstart");
            }

            @Override
            public boolean answered(Process p, Path dir) throws Exception {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (System.nanoTime() < deadline) {
                    if (host.registered.tryAcquire(1, TimeUnit.MILLISECONDS)) {
                        return true;
                    }
                    if (!p.isAlive()) {
                        return false;
                    }
                }
                throw new IllegalStateException("the plugin did not register in 60 s");
            }
        };
    }

    /** An NRI host that only counts registrations: no containers, nothing to update. */
    private static final class RegistrationHost implements AutoCloseable {
        final Path socket;
        final java.util.concurrent.Semaphore registered = new java.util.concurrent.Semaphore(0);
        private final io.cri4j.nri.NriHost host;

        RegistrationHost(Path socket) throws java.io.IOException {
            this.socket = socket;
            this.host =
                    io.cri4j.nri.NriHost.builder(socket)
                            .registrationTimeout(java.time.Duration.ofSeconds(60))
                            .listener(
                                    new io.cri4j.nri.NriHost.Listener() {
                                        @Override
                                        public void registered(
                                                String name,
                                                int index,
                                                java.util.Set<io.cri4j.hook.HookEvent> events) {
                                            registered.release();
                                        }
                                    })
                            .build();
            host.start(
                    new io.cri4j.hook.host.HookHost() {
                        @Override
                        public String runtimeName() {
                            return "cri4j-coldstart";
                        }

                        @Override
                        public String runtimeVersion() {
                            return "0";
                        }

                        @Override
                        public java.util.concurrent.CompletionStage<
                                        io.cri4j.hook.host.RuntimeSnapshot>
                                snapshot() {
                            return java.util.concurrent.CompletableFuture.completedFuture(
                                    io.cri4j.hook.host.RuntimeSnapshot.empty());
                        }

                        @Override
                        public io.cri4j.hook.RuntimeHandle runtime() {
                            return (updates, evictions) ->
                                    java.util.concurrent.CompletableFuture.completedFuture(
                                            List.of());
                        }
                    });
        }

        /** Forgets a registration left from the previous start. */
        void expect() {
            registered.drainPermits();
        }

        @Override
        public void close() {
            host.close();
        }
    }

    private static List<String> split(String flags) {
        String t = flags.trim();
        return t.isEmpty() ? List.of() : Arrays.asList(t.split("\\s+"));
    }

    private static double javaVersion(String java, List<String> flags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(flags);
        cmd.add("-version");
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        p.waitFor();
        return (System.nanoTime() - t0) / 1e6;
    }

    private static double firstAnswer(
            String java, List<String> flags, Path jar, Command c, Path dir, double[] cpuMillis)
            throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(flags);
        cmd.addAll(List.of("-jar", jar.toString()));
        cmd.addAll(c.args(dir));
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        StringBuilder out = drain(p.getInputStream());
        try {
            if (!c.answered(p, dir)) {
                p.waitFor(5, TimeUnit.SECONDS);
                throw new IllegalStateException(
                        String.join(" ", cmd) + " exited with " + p.exitValue() + ":\n" + out);
            }
            double wall = (System.nanoTime() - t0) / 1e6;
            cpuMillis[0] = cpuMillis(p.pid());
            return wall;
        } finally {
            p.destroy();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    /** User + system CPU time of a process so far, from /proc (10 ms ticks). */
    private static double cpuMillis(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12]))
                * 10.0; // utime, stime (fields 14, 15)
    }

    /**
     * Polls until a Version on {@code sock} is answered: true, or false as soon as {@code process}
     * (when given) has exited.
     */
    private static boolean answer(Path sock, Process process, long timeoutMillis) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (true) {
            if (Files.exists(sock)) {
                ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(sock));
                try {
                    RuntimeServiceGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(1, TimeUnit.SECONDS)
                            .version(VersionRequest.getDefaultInstance());
                    return true;
                } catch (StatusRuntimeException e) {
                    if (System.nanoTime() > deadline) {
                        throw e;
                    }
                } finally {
                    ch.shutdownNow();
                }
            }
            if (process != null && !process.isAlive()) {
                return false;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no answer on " + sock);
            }
            Thread.sleep(1); // poll interval of a client waiting for the socket
        }
    }

    /** Reads a process's output as it comes (kept, for the error when it exits early). */
    private static StringBuilder drain(InputStream in) {
        StringBuilder out = new StringBuilder();
        Thread t =
                new Thread(
                        () -> {
                            byte[] buf = new byte[8192];
                            try (in) {
                                for (int n; (n = in.read(buf)) > 0; ) {
                                    synchronized (out) {
                                        if (out.length() < 65536) {
                                            out.append(
                                                    new String(
                                                            buf,
                                                            0,
                                                            n,
                                                            java.nio.charset.StandardCharsets
                                                                    .UTF_8));
                                        }
                                    }
                                }
                            } catch (Exception e) {
                                // the process is gone
                            }
                        });
        t.setDaemon(true);
        t.start();
        return out;
    }

    private static double q(double[] values, double q) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
    }
}
