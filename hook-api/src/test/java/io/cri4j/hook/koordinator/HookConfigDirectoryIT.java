package io.cri4j.hook.koordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Config directory churn on a real file system watched with WatchService. */
class HookConfigDirectoryIT {
    @TempDir Path dir;
    private final LinkedBlockingQueue<HookConfigDirectory.Snapshot> snapshots =
            new LinkedBlockingQueue<>();

    static String config(String socket, String policy, String... points) {
        return "{\"remote-endpoint\": \""
                + socket
                + "\", \"failure-policy\": \""
                + policy
                + "\", \"runtime-hooks\": [\""
                + String.join("\", \"", points)
                + "\"]}";
    }

    private HookConfigDirectory.Snapshot await(Predicate<HookConfigDirectory.Snapshot> p)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        HookConfigDirectory.Snapshot last = null;
        while (System.nanoTime() < deadline) {
            HookConfigDirectory.Snapshot s = snapshots.poll(100, TimeUnit.MILLISECONDS);
            if (s != null) {
                last = s;
                if (p.test(s)) {
                    return s;
                }
            }
        }
        throw new AssertionError("no snapshot matched within 10 s; last: " + last);
    }

    private static void write(Path f, String text) throws Exception {
        Files.writeString(f, text, StandardCharsets.UTF_8);
    }

    @Test
    void churnEndsInTheStateOfTheLastValidFiles() throws Exception {
        write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
        try (HookConfigDirectory d = HookConfigDirectory.watch(dir)) {
            d.addListener(snapshots::add);
            assertThat(d.get()).extracting(RemoteRuntimeHook::name).containsExactly("a");
            assertThat(d.get().get(0).policy().failurePolicy()).isEqualTo(FailurePolicy.FAIL);

            // add a malformed file: reported, ignored
            write(dir.resolve("b.json"), "{\"remote-endpoint\": ");
            // (a scan may see the file half written first; wait for the final content's error)
            HookConfigDirectory.Snapshot s =
                    await(x -> x.errors().getOrDefault("b", "").contains("malformed JSON"));
            assertThat(s.configs()).containsOnlyKeys("a");

            // change a: takes effect
            write(dir.resolve("a.json"), config("/run/a2.sock", "Ignore", "PreCreateContainer"));
            await(
                    x ->
                            x.configs().containsKey("a")
                                    && x.configs()
                                            .get("a")
                                            .remoteEndpoint()
                                            .equals("/run/a2.sock"));
            assertThat(d.get().get(0).config().points())
                    .containsExactly(HookPoint.PRE_CREATE_CONTAINER);
            assertThat(d.get().get(0).events()).containsExactly(HookEvent.CREATE_CONTAINER);

            // break a: the last good version stays in force
            write(dir.resolve("a.json"), "[]");
            s = await(x -> x.errors().containsKey("a"));
            assertThat(s.configs().get("a").remoteEndpoint()).isEqualTo("/run/a2.sock");

            // atomic rename of a new file into place (how config managers write)
            Path tmp = dir.resolve(".c.json.tmp");
            write(tmp, config("/run/c.sock", "Fail", "PreStartContainer", "PostStopContainer"));
            Files.move(tmp, dir.resolve("c.json"), StandardCopyOption.ATOMIC_MOVE);
            await(x -> x.configs().containsKey("c"));

            // rename c away to a non-json name: gone
            Files.move(
                    dir.resolve("c.json"),
                    dir.resolve("c.json.disabled"),
                    StandardCopyOption.ATOMIC_MOVE);
            await(x -> !x.configs().containsKey("c"));

            // delete a, fix b
            Files.delete(dir.resolve("a.json"));
            write(
                    dir.resolve("b.json"),
                    config("unix:///run/b.sock", "Ignore", "PostStartContainer"));
            s =
                    await(
                            x ->
                                    x.configs().keySet().equals(java.util.Set.of("b"))
                                            && x.errors().isEmpty());
            assertThat(s.configs().get("b").remoteEndpoint()).isEqualTo("/run/b.sock");
            assertThat(d.get()).extracting(RemoteRuntimeHook::name).containsExactly("b");
        }
    }

    /** Makes a named pipe (FIFO) with the system's {@code mkfifo}. */
    static void mkfifo(Path p) throws Exception {
        Process mk = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        assertThat(mk.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(mk.exitValue()).as("mkfifo " + p).isZero();
    }

    /**
     * Opens a FIFO for writing and closes it at once: frees any reader blocked opening it (so a
     * failing test does not leave a thread stuck in open(2)).
     */
    static void unblockReaders(Path fifo) {
        Thread t =
                new Thread(
                        () -> {
                            try (var out = Files.newOutputStream(fifo)) {
                                out.flush();
                            } catch (Exception ignored) {
                                // gone or nobody reading
                            }
                        },
                        "fifo-unblocker");
        t.setDaemon(true);
        t.start();
    }

    @Test
    void aFifoIsRefusedWithoutBlockingTheWatcherOrClose() throws Exception {
        Path fifo = dir.resolve("f.json");
        mkfifo(fifo);
        write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
        try {
            HookConfigDirectory d =
                    org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                            java.time.Duration.ofSeconds(20),
                            () -> HookConfigDirectory.watch(dir),
                            "watching a directory with a FIFO in it returns");
            try {
                d.addListener(snapshots::add);
                assertThat(d.snapshot().errors().get("f")).contains("not a regular file");
                assertThat(d.get()).extracting(RemoteRuntimeHook::name).containsExactly("a");
                // the watcher goes on: later changes apply, with the FIFO still there and once it
                // is gone
                write(dir.resolve("b.json"), config("/run/b.sock", "Ignore", "PreCreateContainer"));
                await(x -> x.configs().containsKey("b"));
                Files.delete(fifo);
                write(dir.resolve("c.json"), config("/run/c.sock", "Ignore", "PreCreateContainer"));
                HookConfigDirectory.Snapshot s = await(x -> x.configs().containsKey("c"));
                assertThat(s.errors()).doesNotContainKey("f");
                // a FIFO made while watching is refused too
                mkfifo(fifo);
                await(x -> x.errors().getOrDefault("f", "").contains("not a regular file"));
                write(
                        dir.resolve("c.json"),
                        config("/run/c2.sock", "Ignore", "PreCreateContainer"));
                await(
                        x ->
                                x.configs().containsKey("c")
                                        && x.configs()
                                                .get("c")
                                                .remoteEndpoint()
                                                .equals("/run/c2.sock"));
            } finally {
                org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                        java.time.Duration.ofSeconds(10),
                        d::close,
                        "close returns with a FIFO present");
            }
        } finally {
            unblockReaders(fifo);
        }
    }

    @Test
    void noFileContentStopsTheWatcher() throws Exception {
        write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
        String good = config("/run/t.sock", "Ignore", "PreCreateContainer");
        write(dir.resolve("t.json"), good.replace("}", ", \"timeout\": \"999999999999999999m\"}"));
        Files.createSymbolicLink(dir.resolve("z.json"), Path.of("/dev/zero"));
        try (var sparse = new java.io.RandomAccessFile(dir.resolve("s.json").toFile(), "rw")) {
            sparse.setLength(3L << 30);
        }
        Files.write(dir.resolve("n.json"), new byte[] {'{', (byte) 0xC3, '}'});
        write(dir.resolve("d.json"), "[".repeat(60_000));
        try (HookConfigDirectory d = HookConfigDirectory.watch(dir)) {
            d.addListener(snapshots::add);
            HookConfigDirectory.Snapshot s = d.snapshot();
            assertThat(s.configs()).containsOnlyKeys("a");
            assertThat(s.errors().get("t")).contains("\"timeout\"", "at most 1h");
            assertThat(s.errors().get("z")).contains("/dev/zero", "not a regular file");
            assertThat(s.errors().get("s")).contains("larger than");
            assertThat(s.errors().get("n")).contains("not UTF-8");
            assertThat(s.errors()).containsKey("d");
            write(
                    dir.resolve("t.json"),
                    good.replace("}", ", \"timeout\": \"9223372036854775807s\"}"));
            await(x -> x.errors().getOrDefault("t", "").contains("9223372036854775807s"));
            write(dir.resolve("t.json"), good.replace("}", ", \"index\": 4294967297}"));
            await(x -> x.errors().getOrDefault("t", "").contains("\"index\""));
            write(dir.resolve("t.json"), good.replace("}", ", \"timeout\": \"1h\"}"));
            s = await(x -> x.configs().containsKey("t"));
            assertThat(s.configs().get("t").timeout()).isEqualTo(java.time.Duration.ofHours(1));
            assertThat(d.get()).extracting(RemoteRuntimeHook::name).containsExactly("a", "t");
        }
    }

    @Test
    void closeIsIdempotentAndDropsHooks() throws Exception {
        write(dir.resolve("a.json"), config("/run/a.sock", "Fail", "PreRunPodSandbox"));
        HookConfigDirectory d = HookConfigDirectory.watch(dir);
        assertThat(d.get()).hasSize(1);
        d.close();
        d.close();
        assertThat(d.get()).isEmpty();
    }
}
