package io.cri4j.nri;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.Hook;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A plugin that cannot reach its runtime for a while: not one line per attempt, not one line for the
 * whole outage, but the first failure and then a periodic "still failing" line (a socket that
 * exists and refuses, which the plugin backs off against), or "still waiting" line (a socket that
 * does not exist, which the plugin watches for).
 */
class NriPluginReconnectLogIT {

    @TempDir Path dir;

    @Test
    void aLongOutageLogsTheFirstFailureThenAPeriodicStillFailingLine() throws Exception {
        // a socket file nobody listens on: connecting is refused
        java.nio.channels.ServerSocketChannel stale =
                java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX);
        stale.bind(java.net.UnixDomainSocketAddress.of(dir.resolve("nobody.sock")));
        stale.close();
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream err = System.err;
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        long attemptsWindowMillis;
        try (NriPlugin plugin =
                NriPlugin.builder(
                                new Hook() {
                                    @Override
                                    public String name() {
                                        return "outage";
                                    }

                                    @Override
                                    public io.cri4j.hook.HookResult createContainer(
                                            io.cri4j.hook.nri.v1alpha1.PodSandbox pod,
                                            io.cri4j.hook.nri.v1alpha1.Container c) {
                                        return io.cri4j.hook.HookResult.none();
                                    }
                                })
                        .socket(dir.resolve("nobody.sock"))
                        .index(10)
                        .reconnect(
                                Duration.ofMillis(10),
                                Duration.ofMillis(50)) // "still failing": each 1 s
                        .waitForRuntime()
                        .build()
                        .start()) {
            long t0 = System.nanoTime();
            long end = t0 + Duration.ofSeconds(15).toNanos();
            while (stillFailing(captured) < 2 && System.nanoTime() < end) {
                Thread.sleep(20);
            }
            attemptsWindowMillis = (System.nanoTime() - t0) / 1_000_000;
        } finally {
            System.setErr(err);
        }
        List<String> lines =
                captured.toString(StandardCharsets.UTF_8)
                        .lines()
                        .filter(l -> l.contains("plugin 10-outage"))
                        .toList();
        assertThat(lines.stream().filter(l -> l.contains("retrying with back-off")))
                .as("the first failure, once: %s", lines)
                .hasSize(1);
        assertThat(lines.stream().filter(l -> l.contains("still failing after")))
                .as("still-failing lines: %s", lines)
                .hasSizeBetween(2, 3)
                .allSatisfy(l -> assertThat(l).contains("nobody.sock"));
        assertThat(attemptsWindowMillis)
                .as("two still-failing lines a second apart, not one per attempt (every 50 ms)")
                .isGreaterThanOrEqualTo(1900);
        assertThat(lines).as("dozens of attempts, a handful of lines").hasSizeLessThanOrEqualTo(4);
    }

    @Test
    void waitingForAMissingSocketLogsOnceThenAPeriodicStillWaitingLine() throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream err = System.err;
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try (NriPlugin plugin =
                NriPlugin.builder(
                                new Hook() {
                                    @Override
                                    public String name() {
                                        return "absent";
                                    }

                                    @Override
                                    public io.cri4j.hook.HookResult createContainer(
                                            io.cri4j.hook.nri.v1alpha1.PodSandbox pod,
                                            io.cri4j.hook.nri.v1alpha1.Container c) {
                                        return io.cri4j.hook.HookResult.none();
                                    }
                                })
                        .socket(dir.resolve("absent.sock"))
                        .index(11)
                        .reconnect(Duration.ofMillis(10), Duration.ofMillis(50))
                        .waitForRuntime()
                        .build()
                        .start()) {
            long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (count(captured, "still waiting for the NRI socket") < 2
                    && System.nanoTime() < end) {
                Thread.sleep(20);
            }
        } finally {
            System.setErr(err);
        }
        List<String> lines =
                captured.toString(StandardCharsets.UTF_8)
                        .lines()
                        .filter(l -> l.contains("plugin 11-absent"))
                        .toList();
        assertThat(lines.stream().filter(l -> l.contains("connecting as soon as it appears")))
                .as("the first failure, once: %s", lines)
                .hasSize(1);
        assertThat(lines.stream().filter(l -> l.contains("still waiting for the NRI socket")))
                .as("still-waiting lines: %s", lines)
                .hasSizeBetween(2, 3)
                .allSatisfy(l -> assertThat(l).contains("absent.sock"));
        assertThat(lines).as("a handful of lines").hasSizeLessThanOrEqualTo(4);
    }

    private static long count(ByteArrayOutputStream captured, String text) {
        return captured.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(l -> l.contains(text))
                .count();
    }

    private static long stillFailing(ByteArrayOutputStream captured) {
        return captured.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(l -> l.contains("still failing after"))
                .count();
    }
}
