package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.VersionRequest;
import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JVM settings a node runs the agent with: {@code ./cri4j}, the container image and the
 * systemd unit start the JVM with the same documented defaults (a heap cap, the serial collector,
 * bounded metaspace, code cache and direct memory, Netty's unpooled buffers, two malloc arenas;
 * the proxy compiles with C2 alone and trims the native heap), a process started by {@code
 * ./cri4j} gets all of them, and it stays within a memory bound under load where the JVM's own
 * defaults let it grow (see BENCHMARKS.md, "Memory").
 */
class JvmDefaultsIT {

    @TempDir Path dir;

    static List<String> scriptDefaults() throws Exception {
        return scriptLine("defaults");
    }

    /** The flags {@code ./cri4j} adds for {@code proxy} (its {@code proxy_flags=} line). */
    static List<String> scriptProxyFlags() throws Exception {
        return scriptLine("proxy_flags");
    }

    private static List<String> scriptLine(String name) throws Exception {
        for (String l : Files.readAllLines(Path.of("..", "cri4j"))) {
            if (l.startsWith(name + "=")) {
                return Arrays.asList(
                        l.substring(name.length() + 1).replace("\"", "").trim().split("\\s+"));
            }
        }
        throw new AssertionError("./cri4j has no " + name + "= line");
    }

    /** The defaults and then the proxy's flags: what the image and the unit run the proxy with. */
    private static List<String> proxyDefaults() throws Exception {
        List<String> all = new ArrayList<>(scriptDefaults());
        all.addAll(scriptProxyFlags());
        return all;
    }

    /** The JVM options of the image's entrypoint (the -Pimage profile of cli/pom.xml). */
    static List<String> imageFlags() throws Exception {
        String pom = Files.readString(Path.of("pom.xml"));
        Matcher m = Pattern.compile("<entrypoint>(.*?)</entrypoint>", Pattern.DOTALL).matcher(pom);
        assertThat(m.find()).as("the image's entrypoint").isTrue();
        List<String> flags = new ArrayList<>();
        Matcher arg = Pattern.compile("<arg>([^<]*)</arg>").matcher(m.group(1));
        while (arg.find()) {
            if (arg.group(1).startsWith("-X") || arg.group(1).startsWith("-D")) {
                flags.add(arg.group(1));
            }
        }
        return flags;
    }

    private static String jcmd(long pid, String command) throws Exception {
        Process jcmd =
                new ProcessBuilder(
                                Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                                Long.toString(pid),
                                command)
                        .redirectErrorStream(true)
                        .start();
        String out = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(jcmd.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    @Test
    void theScriptAndTheImageSetTheSameBoundedDefaults() throws Exception {
        List<String> defaults = scriptDefaults();
        assertThat(defaults)
                .contains("-XX:+UseSerialGC")
                .anyMatch(f -> f.startsWith("-Xmx"))
                .anyMatch(f -> f.startsWith("-XX:MaxMetaspaceSize="))
                .anyMatch(f -> f.startsWith("-XX:MaxDirectMemorySize="));
        // the image starts from its own archive (src/image/train-cds.sh), as ./cri4j from its own
        List<String> image = new ArrayList<>();
        for (String f : proxyDefaults()) {
            if (f.equals("-Xshare:off")) {
                image.add("-Xshare:auto");
                image.add("-XX:SharedArchiveFile=/app/cri4j-proxy.jsa");
            } else {
                image.add(f);
            }
        }
        assertThat(defaults).contains("-Xshare:off");
        assertThat(imageFlags())
                .as("the container image's JVM flags")
                .containsExactlyElementsOf(image);
        assertThat(Files.readString(Path.of("pom.xml")))
                .as("the container image's environment")
                .contains("<MALLOC_ARENA_MAX>2</MALLOC_ARENA_MAX>");
    }

    @Test
    void theSystemdUnitSetsThemToo() throws Exception {
        List<String> unit = Files.readAllLines(Path.of("..", "deploy", "cri4j-proxy.service"));
        String exec =
                unit.stream().filter(l -> l.startsWith("ExecStart=")).findFirst().orElseThrow();
        List<String> flags = new ArrayList<>();
        for (String f : exec.substring("ExecStart=".length()).split("\\s+")) {
            if (f.startsWith("-X") || f.startsWith("-D")) {
                flags.add(f);
            }
        }
        assertThat(flags)
                .as("the JVM flags of deploy/cri4j-proxy.service")
                .containsExactlyElementsOf(proxyDefaults());
        assertThat(unit).as("its environment").contains("Environment=MALLOC_ARENA_MAX=2");
    }

    @Test
    void theProxyStartedByTheScriptCompilesWithC2Alone() throws Exception {
        Process p =
                startScript(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("proxy.sock"),
                        "--backend",
                        "unix://" + dir.resolve("absent.sock"));
        try {
            // a backend that is down is not fatal: the proxy serves
            assertThat(servingLine(p)).contains("cri4j proxy: serving");
            assertThat(jvmArgs(p))
                    .as("the arguments of the proxy ./cri4j started")
                    .containsExactlyElementsOf(proxyDefaults());
            assertThat(jcmd(p.pid(), "VM.flags"))
                    .contains("-XX:-TieredCompilation", "-XX:TrimNativeHeapInterval=5000");
            assertThat(jcmd(p.pid(), "Thread.print"))
                    .contains("\"C2 CompilerThread0\"")
                    .doesNotContain("C1 CompilerThread");
        } finally {
            p.destroy();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    /**
     * Starts {@code ./cri4j ARGS} with the defaults alone, as the image and the unit run them
     * (CdsArchiveIT: the archives), and with glibc's arenas unset so the script's setting shows.
     */
    private static Process startScript(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", Path.of("..", "cri4j").toString()));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("CRI4J_JAVA_OPTS");
        pb.environment().remove("MALLOC_ARENA_MAX");
        pb.environment().put("CRI4J_CDS", "0");
        return pb.start();
    }

    /**
     * The first line of {@code p}'s output that says it serves (null when it ends without one);
     * the rest is read on a daemon thread so that the pipe never fills.
     */
    private static String servingLine(Process p) throws Exception {
        BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String serving =
                CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        for (String l; (l = out.readLine()) != null; ) {
                                            if (l.contains("serving")) {
                                                return l;
                                            }
                                        }
                                        return null;
                                    } catch (Exception e) {
                                        return null;
                                    }
                                })
                        .get(60, TimeUnit.SECONDS);
        Thread drain =
                new Thread(
                        () -> {
                            try {
                                while (out.readLine() != null) {
                                    // keep the pipe empty
                                }
                            } catch (Exception e) {
                                // gone
                            }
                        });
        drain.setDaemon(true);
        drain.start();
        return serving;
    }

    /** The JVM arguments of the running JVM {@code p}, as {@code jcmd VM.command_line} gives them. */
    private static List<String> jvmArgs(Process p) throws Exception {
        String line =
                jcmd(p.pid(), "VM.command_line")
                        .lines()
                        .filter(l -> l.startsWith("jvm_args:"))
                        .findFirst()
                        .orElseThrow();
        return Arrays.asList(line.substring("jvm_args:".length()).trim().split("\\s+"));
    }

    @Test
    void aProcessStartedByTheScriptRunsWithThemAndStaysBoundedUnderLoad() throws Exception {
        Path socket = dir.resolve("fake.sock");
        Process p = startScript("fake-runtime", "--listen", "unix://" + socket);
        try {
            assertThat(servingLine(p)).contains("serving");
            assertThat(jcmd(p.pid(), "VM.flags"))
                    .as("flags of the JVM ./cri4j started")
                    .contains(
                            "-XX:+UseSerialGC",
                            "-XX:MaxHeapSize=67108864",
                            "-XX:MaxNewSize=1572864",
                            "-XX:-UseSharedSpaces");
            assertThat(jvmArgs(p))
                    .as("the arguments of the JVM ./cri4j started")
                    .containsExactlyElementsOf(scriptDefaults());
            assertThat(jcmd(p.pid(), "VM.system_properties"))
                    .contains("io.netty.allocator.type=unpooled");
            assertThat(
                            new String(
                                            Files.readAllBytes(
                                                    Path.of("/proc/" + p.pid() + "/environ")),
                                            StandardCharsets.ISO_8859_1)
                                    .split("\0"))
                    .as("its environment")
                    .contains("MALLOC_ARENA_MAX=2");
            ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(socket));
            try {
                var rt = RuntimeServiceGrpc.newBlockingStub(ch);
                List<CompletableFuture<Void>> callers = new ArrayList<>();
                for (int c = 0; c < 4; c++) {
                    callers.add(
                            CompletableFuture.runAsync(
                                    () -> {
                                        for (int i = 0; i < 5_000; i++) {
                                            rt.withDeadlineAfter(30, TimeUnit.SECONDS)
                                                    .version(VersionRequest.getDefaultInstance());
                                        }
                                    }));
                }
                CompletableFuture.allOf(callers.toArray(CompletableFuture[]::new))
                        .get(5, TimeUnit.MINUTES);
            } finally {
                ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            long rssKib = 0;
            for (String l : Files.readAllLines(Path.of("/proc/" + p.pid() + "/status"))) {
                if (l.startsWith("VmRSS:")) {
                    rssKib = Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
            // measured (MemoryFootprint, the fake after 25,000 calls): about 71 MiB with the
            // defaults, about 200 MiB
            // with the JVM's own (BENCHMARKS.md)
            assertThat(rssKib / 1024)
                    .as("RSS (MiB) after 20,000 calls")
                    .isPositive()
                    .isLessThanOrEqualTo(96);
        } finally {
            p.destroy();
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
    }
}
