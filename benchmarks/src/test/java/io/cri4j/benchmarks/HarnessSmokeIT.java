package io.cri4j.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The timed harnesses of BENCHMARKS.md in their shortest form, so that they keep working: each
 * runs one round and must print its series with figures. Nothing here is timed or compared; the
 * figures come from the documented commands.
 */
class HarnessSmokeIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path CLI_JAR = ROOT.resolve("cli/target/cri4j-cli.jar");

    /** Runs {@code main} with {@code props} set, and returns what it printed. */
    private static String run(Map<String, String> props, Harness main) throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        props.forEach(System::setProperty);
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            main.run();
        } finally {
            System.setOut(out);
            props.keySet().forEach(System::clearProperty);
        }
        String printed = buf.toString(StandardCharsets.UTF_8);
        out.print(printed);
        return printed;
    }

    private interface Harness {
        void run() throws Exception;
    }

    private static String defaults() throws Exception {
        return String.join(" ", MemoryFootprint.scriptFlags(ROOT.resolve("cri4j")));
    }

    @Test
    void coldStartOfTheThreeCommands(@TempDir Path plugins) throws Exception {
        assertThat(CLI_JAR).exists();
        try (Stream<Path> jars = Files.list(ROOT.resolve("example-hook-plugin/target"))) {
            for (Path j :
                    jars.filter(
                                    p ->
                                            p.getFileName()
                                                    .toString()
                                                    .matches(
                                                            "cri4j-example-hook-plugin-[^-]+(-SNAPSHOT)?\\.jar"))
                            .toList()) {
                Files.copy(j, plugins.resolve(j.getFileName()));
            }
        }
        String printed =
                run(
                        Map.of(
                                "set.cri4j",
                                defaults(),
                                "plugins",
                                plugins.toString(),
                                "commands",
                                "proxy,fake-runtime,nri-plugin",
                                "warmup",
                                "false"),
                        () -> ColdStart.main(new String[] {CLI_JAR.toString(), "1"}));
        for (String command : List.of("proxy", "fake-runtime", "nri-plugin")) {
            assertThat(printed)
                    .containsPattern(
                            "(?m)^cri4j +"
                                    + command
                                    + " +[1-9][0-9]* \\(.*ratio 1\\.00 +CPU +[0-9]+ .*java -version +[1-9]");
        }
    }

    @Test
    void streamingThroughputRatio() throws Exception {
        String printed =
                run(Map.of(), () -> StreamingThroughputRatio.main(new String[] {"1", "1"}));
        assertThat(printed)
                .containsPattern("(?m)^raw loopback TCP copy +[1-9]")
                .containsPattern("(?m)^exec stdout, SPDY +[1-9].*ratio to raw: median [0-9]")
                .containsPattern("(?m)^exec stdout, WebSocket +[1-9].*ratio to raw: median [0-9]");
    }

    @Test
    void memoryFootprint() throws Exception {
        String printed =
                run(
                        Map.of("flags", defaults(), "settle", "1"),
                        () -> MemoryFootprint.main(new String[] {CLI_JAR.toString(), "400", "2"}));
        assertThat(printed)
                .containsPattern("(?m)^JVM defaults +proxy +[1-9]")
                .containsPattern("(?m)^cri4j defaults +proxy +[1-9]");
    }

    @Test
    void kubeletClientThroughJvmSettings() throws Exception {
        // grpc-go from Debian (installed by .ci/install-test-deps.sh); the script builds its client
        ProcessBuilder pb =
                new ProcessBuilder(
                                "bash",
                                ROOT.resolve("benchmarks/go/run.sh").toString(),
                                "jvm",
                                "fake",
                                "1",
                                "defaults=defaults")
                        .directory(ROOT.toFile())
                        .redirectErrorStream(true);
        pb.environment().put("CLI_JAR", CLI_JAR.toString());
        // the build cache proxy-core's tests filled building the same client, when there is one
        Path cache = ROOT.resolve("proxy-core/target/grpcgo/cache");
        if (Files.isDirectory(cache)) {
            pb.environment().put("GOCACHE", cache.toString());
        }
        Process p = pb.start();
        String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        System.out.print(printed);
        assertThat(p.exitValue()).as(printed).isZero();
        assertThat(printed).containsPattern("(?m)^defaults: VmRSS [1-9][0-9.]* MiB$");
    }
}
