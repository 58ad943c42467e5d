package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class StartWarmupTest {

    @Test
    void everyListedPicocliClassExistsAndLoads() throws Exception {
        List<String> names = new ArrayList<>();
        try (InputStream in = StartWarmup.class.getResourceAsStream(StartWarmup.PICOCLI_CLASSES)) {
            assertThat(in).as(StartWarmup.PICOCLI_CLASSES).isNotNull();
            BufferedReader r =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                if (!line.isBlank() && !line.startsWith("#")) {
                    names.add(line.strip());
                }
            }
        }
        assertThat(names)
                .hasSizeGreaterThan(100)
                .doesNotHaveDuplicates()
                .contains("picocli.CommandLine");
        for (String n : names) {
            assertThat(Class.forName(n, false, getClass().getClassLoader()).getName())
                    .as("a class picocli has")
                    .isEqualTo(n);
        }
        assertThat(StartWarmup.loadPicocliClasses()).isEqualTo(names.size());
    }

    @Test
    void theThreeServingCommandsHaveStepsThatAllSucceedTheOthersNone() {
        for (String command : List.of("proxy", "fake-runtime", "nri-plugin")) {
            List<Runnable> steps = StartWarmup.steps(command);
            assertThat(steps).as(command).isNotEmpty();
            // a renamed class or a broken entry point fails here, not silently at start
            steps.forEach(Runnable::run);
        }
        for (String other :
                new String[] {"version", "pull", "pulls", "help", "--help", "-h", "x"}) {
            assertThat(StartWarmup.steps(other)).as(other).isEmpty();
            assertThat(StartWarmup.forCommand(other)).as(other).isNull();
        }
        assertThat(StartWarmup.steps(null)).isEmpty();
    }

    @Test
    void theCommandRunsOnlyAfterEveryStepAndAFailingStepStopsNone() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<String> ran = new CopyOnWriteArrayList<>();
        StartWarmup w =
                StartWarmup.of(
                        List.of(
                                () -> {
                                    try {
                                        release.await(5, TimeUnit.SECONDS);
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    }
                                    ran.add("slow");
                                },
                                () -> {
                                    throw new IllegalStateException("a failing step");
                                },
                                () -> ran.add("after the failure")));
        w.startSteps();
        assertThat(w.done()).as("a step still waits").isFalse();
        // the command line's parse does not wait; its command does
        List<String> seenByCommand = new CopyOnWriteArrayList<>();
        Thread command =
                new Thread(
                        () -> {
                            w.await();
                            seenByCommand.addAll(ran);
                        });
        command.start();
        release.countDown();
        command.join(10_000);
        assertThat(seenByCommand).containsExactly("slow", "after the failure");
        assertThat(w.done()).isTrue();
    }

    @Test
    void theUsageHelpAndTheVersionDoNotWaitForTheWarmup() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        try {
            for (String[] args :
                    new String[][] {
                        {"proxy", "--help"}, {"fake-runtime", "-V"}, {"nri-plugin", "-h"}
                    }) {
                // waiting for the step would take its 30 s: the help would then find it done
                StartWarmup w =
                        StartWarmup.of(
                                List.of(
                                        () -> {
                                            try {
                                                release.await(30, TimeUnit.SECONDS);
                                            } catch (InterruptedException e) {
                                                Thread.currentThread().interrupt();
                                            }
                                        }),
                                60_000);
                w.startSteps();
                CliRun help =
                        CliRun.of(Cri4jCli.afterWarmup(Cri4jCli.commandLine(args[0]), w), args);
                assertThat(w.done()).as("the step still waits").isFalse();
                assertThat(help.exitCode()).isZero();
                // the subcommands have no version of their own: -V prints nothing, as before
                assertThat(help).isEqualTo(CliRun.of(args));
                if (!args[1].equals("-V")) {
                    assertThat(help.out()).as(String.join(" ", args)).contains("Usage:");
                }
            }
        } finally {
            release.countDown();
        }
    }

    @Test
    void helpUsageErrorsAndExitCodesAreTheSameAfterTheWarmup() {
        String[][] cases = {
            {"proxy", "--help"},
            {"proxy", "--listen"},
            {"proxy", "--no-such-option"},
            {"proxy", "--listen", "unix:///tmp/x.sock", "--max-followed-pulls", "0"},
            {"fake-runtime", "--help"},
            {"fake-runtime"},
            {"fake-runtime", "--listen", "unix:///tmp/x.sock", "--streaming-address", "nope"},
            {"nri-plugin", "-h"},
            {"nri-plugin", "--plugins"},
            {"nri-plugin", "--socket", "tcp://127.0.0.1:1", "--plugins", "/nonexistent"},
        };
        for (String[] args : cases) {
            CliRun plain = CliRun.of(args);
            StartWarmup w = StartWarmup.forCommand(args[0]);
            w.startSteps();
            CliRun warmed = CliRun.of(Cri4jCli.afterWarmup(Cri4jCli.commandLine(args[0]), w), args);
            assertThat(warmed).as(String.join(" ", args)).isEqualTo(plain);
            assertThat(plain.exitCode()).as(String.join(" ", args)).isIn(0, 1, 2);
        }
    }
}
