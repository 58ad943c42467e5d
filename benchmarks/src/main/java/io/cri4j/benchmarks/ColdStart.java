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
 * Cold start of {@code cri4j proxy}: the time from starting its JVM to the first {@code Version}
 * answered through it (relayed to a {@code cri4j fake-runtime} started once beforehand), per JVM
 * setting, against {@code java -version} with the same flags as the floor. Every round starts one
 * process of each setting in a rotating order, so load changes on a shared machine hit all of
 * them alike; it prints the median and the range of each. The client in this JVM polls the
 * proxy's socket every millisecond with a 1 s deadline per call. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ColdStart cli/target/cri4j-cli.jar [rounds]}
 * (default 10), with the settings as system properties {@code -Dset.NAME="flags..."} (default:
 * {@code ./cri4j}'s {@code defaults=} line as "cri4j", plus its archive flag when {@code
 * -Dcds=FILE} names an AppCDS archive). {@code -Djar.NAME=FILE} starts setting NAME from another
 * CLI jar (e.g. the build before a change, in the same run).
 */
public final class ColdStart {
    private ColdStart() {}

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
            List<String> flags = MemoryFootprint.scriptFlags(Path.of("cri4j"));
            settings.put("cri4j", flags);
            String cds = System.getProperty("cds");
            if (cds != null) {
                List<String> withCds = new ArrayList<>(flags);
                withCds.remove("-Xshare:off");
                withCds.add("-XX:SharedArchiveFile=" + cds);
                settings.put("cri4j+cds", withCds);
            }
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path dir = Files.createTempDirectory("cri4j-coldstart");
        List<String> fakeCmd = new ArrayList<>(List.of(java, "-jar", jar.toString()));
        fakeCmd.addAll(List.of("fake-runtime", "--listen", "unix://" + dir.resolve("fake.sock")));
        Process fake = new ProcessBuilder(fakeCmd).redirectErrorStream(true).start();
        drain(fake.getInputStream());
        List<String> names = new ArrayList<>(settings.keySet());
        Map<String, double[]> start = new LinkedHashMap<>();
        Map<String, double[]> floor = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        for (String n : names) {
            cpu.put(n, new double[rounds]);
            start.put(n, new double[rounds]);
            floor.put(n, new double[rounds]);
        }
        try {
            answer(dir.resolve("fake.sock"), 60_000); // the runtime serves
            for (int r = -1; r < rounds; r++) { // round -1: warm-up (page cache)
                for (int k = 0; k < names.size(); k++) {
                    String n = names.get((Math.max(r, 0) + k) % names.size());
                    List<String> flags = settings.get(n);
                    double f = javaVersion(java, flags);
                    Path j = Path.of(System.getProperty("jar." + n, jar.toString()));
                    double[] c = new double[1];
                    double s = proxyStart(java, flags, j.toAbsolutePath(), dir, c);
                    if (r >= 0) {
                        cpu.get(n)[r] = c[0];
                        floor.get(n)[r] = f;
                        start.get(n)[r] = s;
                    }
                }
            }
        } finally {
            fake.destroy();
            fake.waitFor(30, TimeUnit.SECONDS);
        }
        System.out.printf(
                "%d rounds; ms from exec to the first answered Version, median (min..max); the"
                        + " proxy's CPU time (user + system) until then; ratio: median of the"
                        + " per-round ratios to the first setting%n",
                rounds);
        double[] first = start.get(names.get(0));
        for (String n : names) {
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratio[r] = start.get(n)[r] / first[r];
            }
            System.out.printf(
                    "%-12s proxy %6.0f (%4.0f..%4.0f) ratio %.2f  CPU %5.0f (%4.0f..%4.0f)   java"
                            + " -version %4.0f (%4.0f..%4.0f)   flags: %s%n",
                    n,
                    q(start.get(n), .5),
                    q(start.get(n), 0),
                    q(start.get(n), 1),
                    q(ratio, .5),
                    q(cpu.get(n), .5),
                    q(cpu.get(n), 0),
                    q(cpu.get(n), 1),
                    q(floor.get(n), .5),
                    q(floor.get(n), 0),
                    q(floor.get(n), 1),
                    String.join(" ", settings.get(n))
                            + (System.getProperty("jar." + n) == null
                                    ? ""
                                    : " (jar " + System.getProperty("jar." + n) + ")"));
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

    private static double proxyStart(
            String java, List<String> flags, Path jar, Path dir, double[] cpuMillis)
            throws Exception {
        Path sock = dir.resolve("proxy.sock");
        Files.deleteIfExists(sock);
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(flags);
        cmd.addAll(List.of("-jar", jar.toString(), "proxy", "--listen", "unix://" + sock));
        cmd.addAll(List.of("--backend", "unix://" + dir.resolve("fake.sock")));
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        drain(p.getInputStream());
        try {
            answer(sock, 60_000);
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

    /** Polls until a Version through {@code sock} is answered. */
    private static void answer(Path sock, long timeoutMillis) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (true) {
            if (Files.exists(sock)) {
                ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(sock));
                try {
                    RuntimeServiceGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(1, TimeUnit.SECONDS)
                            .version(VersionRequest.getDefaultInstance());
                    return;
                } catch (StatusRuntimeException e) {
                    if (System.nanoTime() > deadline) {
                        throw e;
                    }
                } finally {
                    ch.shutdownNow();
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no answer on " + sock);
            }
            Thread.sleep(1); // poll interval of a client waiting for the socket
        }
    }

    private static void drain(InputStream in) {
        Thread t =
                new Thread(
                        () -> {
                            try (in) {
                                in.transferTo(java.io.OutputStream.nullOutputStream());
                            } catch (Exception e) {
                                // the process is gone
                            }
                        });
        t.setDaemon(true);
        t.start();
    }

    private static double q(double[] values, double q) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
    }
}
