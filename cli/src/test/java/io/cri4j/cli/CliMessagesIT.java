package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user sees when an option or the machine is not as the command expects: the shaded CLI
 * jar run as a process, as {@code ./cri4j} runs it. Every failure is one line naming the thing
 * and the reason, with a non-zero exit; never a stack trace.
 */
class CliMessagesIT {

    @TempDir Path dir;

    /** Runs the CLI to its end and checks that it said exactly one line, with no trace. */
    static CliRun oneLine(int exit, String... args) throws Exception {
        CliRun run;
        try (CliProcess p = CliProcess.start(args)) {
            run = p.finish();
        }
        List<String> lines = run.out().lines().toList();
        assertThat(lines).as("output of cri4j %s", String.join(" ", args)).hasSize(1);
        assertThat(run.exitCode()).as(run.out()).isEqualTo(exit);
        assertThat(run.out())
                .as("no trace, no Java names")
                .doesNotContain("\tat ", "Exception", "null", "http");
        return run;
    }

    @Test
    void durationOptionsAreBoundedWithOneLine() throws Exception {
        assertThat(oneLine(2, "pull", "--timeout", "1000000000h", "busybox").out())
                .startsWith("cri4j pull: ")
                .contains("--timeout", "1000000000h", "at most 24h");
        assertThat(oneLine(2, "pull", "--deadline", "99999999999999999999999s", "busybox").out())
                .contains("--deadline", "at most 24h");
        assertThat(oneLine(2, "pull", "--timeout", "25h", "busybox").out()).contains("at most 24h");
        assertThat(oneLine(2, "pull", "--timeout", "0s", "busybox").out()).contains("positive");
        assertThat(oneLine(2, "version", "--timeout", "99999999999999999999").out())
                .startsWith("cri4j version: ")
                .contains("--timeout", "at most 24h");
    }

    @Test
    void badNriHostOptionsAreOneLine() throws Exception {
        List<String> base =
                List.of(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("proxy.sock"),
                        "--backend",
                        "unix://" + dir.resolve("none.sock"),
                        "--no-observe-pulls",
                        "--nri-socket",
                        "unix://" + dir.resolve("nri.sock"));
        java.util.function.Function<List<String>, String[]> with =
                extra -> {
                    List<String> all = new java.util.ArrayList<>(base);
                    all.addAll(extra);
                    return all.toArray(String[]::new);
                };
        assertThat(oneLine(2, with.apply(List.of("--nri-plugin-timeout", "nri-logger"))).out())
                .startsWith("cri4j proxy: ")
                .contains("--nri-plugin-timeout takes PLUGIN=DURATION", "nri-logger");
        assertThat(oneLine(2, with.apply(List.of("--nri-plugin-timeout", "slow=2h"))).out())
                .contains("the request timeout of slow must be at most 1 h");
        assertThat(oneLine(2, with.apply(List.of("--nri-plugin-timeout", "slow=soon"))).out())
                .contains("'soon' is not a duration");
        assertThat(oneLine(2, with.apply(List.of("--nri-required-plugin", "no/slash"))).out())
                .contains("required plugin: invalid plugin name \"no/slash\"");
        assertThat(oneLine(2, with.apply(List.of("--nri-max-missed-deadlines", "0"))).out())
                .contains("maxMissedDeadlines must be 1..1000, got 0");
    }

    @Test
    void versionHasHelp() throws Exception {
        try (CliProcess p = CliProcess.start("version", "--help")) {
            CliRun run = p.finish();
            assertThat(run.exitCode()).as(run.out()).isZero();
            assertThat(run.out())
                    .startsWith("Usage: cri4j version")
                    .doesNotContain("Unknown option");
        }
    }

    @Test
    void badEndpointsAndMissingRuntimesAreOneLine() throws Exception {
        assertThat(oneLine(2, "version", "-r", "foo://bar").out())
                .startsWith("cri4j version: ")
                .contains("foo://bar", "unsupported scheme");
        Path missing = dir.resolve("missing.sock");
        assertThat(oneLine(1, "version", "-r", "unix://" + missing, "--timeout", "5s").out())
                .startsWith("cri4j version: ")
                .contains(missing.toString(), "no such");
        assertThat(
                        oneLine(
                                        2,
                                        "fake-runtime",
                                        "--listen",
                                        "unix://" + dir.resolve("f.sock"),
                                        "--streaming-address",
                                        "nocolon")
                                .out())
                .contains("--streaming-address", "HOST:PORT");
        assertThat(
                        oneLine(
                                        1,
                                        "fake-runtime",
                                        "--listen",
                                        "unix://" + dir.resolve("f.sock"),
                                        "--streaming-address",
                                        "999.1.1.1:0")
                                .out())
                .contains("999.1.1.1");
    }

    @Test
    void filesThatAreNotWhatTheOptionNeedsAreOneLine() throws Exception {
        Path file = dir.resolve("pod.json");
        Files.writeString(file, "{}");
        Path sock = file.resolve("cri.sock");
        for (String cmd : new String[] {"fake-runtime", "proxy"}) {
            List<String> args = new ArrayList<>(List.of(cmd, "--listen", "unix://" + sock));
            if (cmd.equals("proxy")) {
                args.addAll(List.of("--backend", "unix://" + dir.resolve("rt.sock")));
            }
            assertThat(oneLine(1, args.toArray(String[]::new)).out())
                    .startsWith("cri4j " + cmd + ": ")
                    .contains(file + " exists and is not a directory");
        }
        assertThat(
                        oneLine(
                                        1,
                                        "proxy",
                                        "--listen",
                                        "unix://" + dir.resolve("p.sock"),
                                        "--backend",
                                        "unix://" + dir.resolve("rt.sock"),
                                        "--hook-config-dir",
                                        file.toString())
                                .out())
                .startsWith("cri4j proxy: ")
                .contains("--hook-config-dir", file.toString(), "not a directory");
        // binding where nobody may create files: the fake and the proxy give the same reason
        for (String cmd : new String[] {"fake-runtime", "proxy"}) {
            List<String> args =
                    new ArrayList<>(List.of(cmd, "--listen", "unix:///sys/cri4j-test.sock"));
            if (cmd.equals("proxy")) {
                args.addAll(List.of("--backend", "unix://" + dir.resolve("rt.sock")));
            }
            assertThat(oneLine(1, args.toArray(String[]::new)).out())
                    .containsIgnoringCase("permission denied");
        }
    }

    @Test
    void credentialFilesAreNamedWithTheirProblem() throws Exception {
        Path missing = dir.resolve("nope.json");
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"auths\": {");
        Path binary = dir.resolve("binary.json");
        Files.write(binary, new byte[] {'{', '"', (byte) 0xFF, '"', ':', '1', '}'});
        String rt = "unix://" + dir.resolve("rt.sock");
        assertThat(
                        oneLine(
                                        2,
                                        "pull",
                                        "-r",
                                        rt,
                                        "--docker-config",
                                        missing.toString(),
                                        "busybox")
                                .out())
                .contains(missing.toString(), "no such file");
        assertThat(oneLine(2, "pull", "-r", rt, "--docker-config", bad.toString(), "busybox").out())
                .contains(bad.toString(), "not valid JSON");
        assertThat(
                        oneLine(
                                        2,
                                        "pull",
                                        "-r",
                                        rt,
                                        "--docker-config",
                                        binary.toString(),
                                        "busybox")
                                .out())
                .contains(binary.toString(), "not UTF-8");
        assertThat(oneLine(2, "pull", "-r", rt, "--docker-config", dir.toString(), "busybox").out())
                .contains(dir.toString(), "directory");
    }

    @Test
    void unreachableRuntimesAreNamedWithoutJavaNames() throws Exception {
        Path missing = dir.resolve("docker.sock");
        CliRun run;
        try (CliProcess p =
                CliProcess.start(
                        "pull",
                        "--progress",
                        "plain",
                        "--backoff-limit",
                        "0",
                        "--docker-socket",
                        missing.toString(),
                        "busybox")) {
            run = p.finish();
        }
        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.out())
                .contains(missing.toString())
                .doesNotContain("null", "Exception", "\tat ");
    }

    @Test
    void aProxyWhoseBackendIsMissingSaysSoInOneLineAndServes() throws Exception {
        Path backend = dir.resolve("nothing-here.sock");
        try (CliProcess p =
                CliProcess.start(
                        "proxy",
                        "--listen",
                        "unix://" + dir.resolve("p.sock"),
                        "--backend",
                        "unix://" + backend)) {
            List<String> lines = new ArrayList<>();
            for (String line = p.nextLine(); line != null; line = p.nextLine()) {
                lines.add(line);
                if (line.startsWith("cri4j proxy: serving") || lines.size() > 20) {
                    break;
                }
            }
            assertThat(lines)
                    .as("until serving")
                    .last()
                    .asString()
                    .startsWith("cri4j proxy: serving");
            assertThat(lines)
                    .as("no trace")
                    .noneMatch(l -> l.startsWith("\tat ") || l.contains("Exception"));
            assertThat(lines).hasSizeLessThanOrEqualTo(3);
        }
    }

    @Test
    void malformedImageReferencesAreRefusedBeforeAnyPull() throws Exception {
        String rt = "unix://" + dir.resolve("rt.sock");
        for (String ref : new String[] {"::::", "../../etc/passwd", "Busybox"}) {
            assertThat(oneLine(2, "pull", "-r", rt, "--progress", "plain", ref).out())
                    .startsWith("cri4j pull: ")
                    .contains("'" + ref + "'");
        }
    }
}
