package io.cri4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.koordinator.HookServer;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.testing.fake.FakeCriServer;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probe that found the hook config directory's faults, kept as a test: the proxy as a real
 * process ({@code cri4j proxy}) with a watched hook config directory, pod lifecycles running
 * through it, and 1,000 random file operations in the directory meanwhile (valid configs written
 * in place and renamed into place, malformed JSON, timeouts that overflow, FIFOs, links to
 * /dev/zero, sparse 3 GB files, bytes that are not UTF-8, directories, deletions). No lifecycle
 * may fail, the configuration in force at the end is that of the last valid files, and SIGTERM
 * ends the proxy within 5 s with a FIFO in the directory.
 */
class HookConfigChurnIT {

    private static final int HOOKS = 4;
    private static final int OPERATIONS = 1_000;

    @TempDir Path dir;

    /** Hook server i marks every container it sees with the annotation seen-h<i>. */
    private static Hook marker(int i) {
        return new Hook() {
            @Override
            public String name() {
                return "h" + i;
            }

            @Override
            public HookResult createContainer(PodSandbox pod, Container c) {
                return HookResult.adjust(
                        Adjustments.create().addAnnotation("seen-h" + i, "1").build());
            }

            @Override
            public void startContainer(PodSandbox pod, Container c) {}

            @Override
            public void postStartContainer(PodSandbox pod, Container c) {}

            @Override
            public HookResult stopContainer(PodSandbox pod, Container c) {
                return HookResult.none();
            }

            @Override
            public PodSandboxAdjustment adjustPodSandbox(PodSandbox pod) {
                return PodSandboxAdjustment.NONE;
            }

            @Override
            public void stopPodSandbox(PodSandbox pod) {}

            @Override
            public void removePodSandbox(PodSandbox pod) {}
        };
    }

    private String validConfig(int i, Random r) {
        List<String> points = new ArrayList<>(List.of("PreCreateContainer"));
        for (String p :
                new String[] {
                    "PreRunPodSandbox",
                    "PostStartContainer",
                    "PostStopContainer",
                    "PreStartContainer",
                    "PreRemovePodSandbox",
                    "PostStopPodSandbox"
                }) {
            if (r.nextBoolean()) {
                points.add(p);
            }
        }
        String[] timeouts = {"5s", "10s", "1m", "30s", "1h"};
        return "{\"remote-endpoint\": \"unix://"
                + dir.resolve("h" + i + ".sock")
                + "\", \"failure-policy\": \""
                + (r.nextBoolean() ? "Fail" : "Ignore")
                + "\", \"runtime-hooks\": [\""
                + String.join("\", \"", points)
                + "\"], \"index\": "
                + r.nextInt(100)
                + ", \"timeout\": \""
                + timeouts[r.nextInt(timeouts.length)]
                + "\"}";
    }

    /** Removes whatever {@code p} is (file, link, FIFO or directory). */
    private static void remove(Path p) throws IOException {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            try (var s = Files.list(p)) {
                for (Path c : (Iterable<Path>) s::iterator) {
                    Files.delete(c);
                }
            }
        }
        Files.deleteIfExists(p);
    }

    private static void mkfifo(Path p) throws Exception {
        Process mk = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        assertThat(mk.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(mk.exitValue()).isZero();
    }

    /** One random operation on {@code name}; true when it left a valid config there. */
    private boolean operate(Path conf, String name, int hook, Random r) throws Exception {
        Path f = conf.resolve(name + ".json");
        int kind = r.nextInt(10);
        remove(f);
        switch (kind) {
            case 0 -> {
                if (hook < 0) {
                    return false;
                }
                Files.writeString(
                        f,
                        validConfig(hook, r),
                        StandardCharsets.UTF_8); // in place: seen half written
                return true;
            }
            case 1 -> {
                if (hook < 0) {
                    return false;
                }
                Path tmp = conf.resolve("." + name + ".tmp");
                Files.writeString(tmp, validConfig(hook, r), StandardCharsets.UTF_8);
                Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE);
                return true;
            }
            case 2 -> Files.writeString(f, "{\"remote-endpoint\": ", StandardCharsets.UTF_8);
            case 3 ->
                    Files.writeString(
                            f,
                            validConfig(Math.max(hook, 0), r)
                                    .replaceFirst(
                                            "\"timeout\": \"[^\"]*\"",
                                            r.nextBoolean()
                                                    ? "\"timeout\": \"999999999999999999m\""
                                                    : "\"timeout\": \"9223372036854775807s\""),
                            StandardCharsets.UTF_8);
            case 4 -> mkfifo(f);
            case 5 -> Files.createSymbolicLink(f, Path.of("/dev/zero"));
            case 6 -> {
                try (RandomAccessFile sparse = new RandomAccessFile(f.toFile(), "rw")) {
                    sparse.setLength(3L << 30);
                }
            }
            case 7 -> Files.write(f, new byte[] {'{', '"', (byte) 0xC3, (byte) 0x28, '"', '}'});
            case 8 -> Files.createDirectory(f);
            default -> {
                // deleted
            }
        }
        return false;
    }

    @Test
    void aThousandFileOperationsDuringPodLifecyclesFailNoLifecycle() throws Exception {
        long seed = System.nanoTime();
        Random r = new Random(seed);
        Path conf = dir.resolve("hookserver.d");
        Files.createDirectories(conf);
        List<HookServer> servers = new ArrayList<>();
        ExecutorService lifecycles = Executors.newFixedThreadPool(2);
        try (FakeCriServer fake =
                FakeCriServer.builder()
                        .listen(CriEndpoint.unix(dir.resolve("fake.sock")))
                        .build()
                        .start()) {
            for (int i = 0; i < HOOKS; i++) {
                servers.add(HookServer.start(dir.resolve("h" + i + ".sock"), List.of(marker(i))));
            }
            Path proxySock = dir.resolve("proxy.sock");
            CliProcess proxy =
                    CliProcess.start(
                            "proxy",
                            "--listen",
                            "unix://" + proxySock,
                            "--backend",
                            "unix://" + dir.resolve("fake.sock"),
                            "--hook-config-dir",
                            conf.toString());
            boolean terminated = false;
            try {
                for (String line = proxy.nextLine();
                        !line.startsWith("cri4j proxy: serving");
                        line = proxy.nextLine()) {
                    assertThat(line).doesNotContain("\tat ");
                }
                proxy.drain(); // it warns about every bad file version
                ManagedChannel ch = CriChannels.newChannel(CriEndpoint.unix(proxySock));
                try {
                    ImageServiceGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(20, TimeUnit.SECONDS)
                            .pullImage(
                                    PullImageRequest.newBuilder()
                                            .setImage(ImageSpec.newBuilder().setImage("busybox"))
                                            .build());
                    AtomicBoolean churning = new AtomicBoolean(true);
                    AtomicInteger done = new AtomicInteger();
                    java.util.concurrent.Semaphore finished = new java.util.concurrent.Semaphore(0);
                    List<String> failures = new CopyOnWriteArrayList<>();
                    List<Future<?>> runners = new ArrayList<>();
                    for (int t = 0; t < 2; t++) {
                        int runner = t;
                        runners.add(
                                lifecycles.submit(
                                        () -> {
                                            // bounded: stops with the churn, and after 5,000
                                            // lifecycles at most
                                            for (int n = 0; churning.get() && n < 5_000; n++) {
                                                try {
                                                    lifecycle(ch, runner + "-" + n);
                                                    done.incrementAndGet();
                                                } catch (StatusRuntimeException e) {
                                                    failures.add(e.getStatus().toString());
                                                } finally {
                                                    finished.release();
                                                }
                                            }
                                        }));
                    }
                    String[] names = {"f0", "f1", "f2", "f3", "noise0", "noise1"};
                    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
                    for (int op = 0; op < OPERATIONS; op++) {
                        assertThat(System.nanoTime()).as("churn within 5 min").isLessThan(deadline);
                        int which = r.nextInt(names.length);
                        operate(conf, names[which], which < HOOKS ? which : -1, r);
                        if (op % 2 == 1) {
                            // the churn keeps pace with the lifecycles: one ends for every two
                            // operations
                            assertThat(finished.tryAcquire(60, TimeUnit.SECONDS))
                                    .as("a lifecycle ended")
                                    .isTrue();
                        }
                    }
                    // the last valid files: each hook file written valid or removed, noise removed
                    Map<String, String> expected = new TreeMap<>();
                    for (int i = 0; i < names.length; i++) {
                        Path f = conf.resolve(names[i] + ".json");
                        remove(f);
                        if (i < HOOKS && r.nextBoolean()) {
                            Path tmp = conf.resolve("." + names[i] + ".tmp");
                            Files.writeString(tmp, validConfig(i, r), StandardCharsets.UTF_8);
                            Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE);
                            expected.put("seen-h" + i, "1");
                        }
                    }
                    mkfifo(conf.resolve("zz-fifo.json")); // still there at SIGTERM
                    Map<String, String> seen = awaitAnnotations(ch, expected);
                    churning.set(false);
                    for (Future<?> f : runners) {
                        f.get(2, TimeUnit.MINUTES);
                    }
                    assertThat(failures)
                            .as(
                                    "failed lifecycles of %d (seed %d)",
                                    done.get() + failures.size(), seed)
                            .isEmpty();
                    assertThat(done.get()).as("lifecycles run during the churn").isPositive();
                    System.out.printf(
                            "HookConfigChurnIT: %d file operations, %d pod lifecycles, 0 failed (seed %d)%n",
                            OPERATIONS, done.get(), seed);
                    assertThat(seen)
                            .as("hooks in force at the end (seed %d)", seed)
                            .isEqualTo(expected);
                } finally {
                    ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
                long t0 = System.nanoTime();
                proxy.process().destroy();
                terminated = proxy.process().waitFor(5, TimeUnit.SECONDS);
                assertThat(terminated)
                        .as("the proxy exits within 5 s of SIGTERM, a FIFO in its directory")
                        .isTrue();
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                        .isLessThanOrEqualTo(5_000);
                String log = proxy.drained();
                assertThat(log).as("the proxy's log").doesNotContain("\tat ", "OutOfMemoryError");
                long warnings =
                        log.lines()
                                .filter(l -> l.contains("WARN") && l.contains("hook config"))
                                .count();
                assertThat(warnings)
                        .as("one warning per bad file version, not per rescan")
                        .isLessThanOrEqualTo(OPERATIONS);
            } finally {
                if (!terminated) {
                    proxy.process().destroyForcibly();
                }
            }
        } finally {
            lifecycles.shutdownNow();
            for (HookServer s : servers) {
                s.close();
            }
        }
    }

    /** The hook annotations a container created now gets, once they equal {@code expected} (≤ 30 s). */
    private static Map<String, String> awaitAnnotations(
            ManagedChannel ch, Map<String, String> expected) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Map<String, String> seen;
        int n = 0;
        do {
            seen = new TreeMap<>(lifecycle(ch, "final-" + n++));
        } while (!seen.equals(expected) && System.nanoTime() < end);
        return seen;
    }

    /** One pod with one container through its whole life; the hook annotations its container got. */
    private static Map<String, String> lifecycle(ManagedChannel ch, String name) {
        var rt = RuntimeServiceGrpc.newBlockingStub(ch).withDeadlineAfter(30, TimeUnit.SECONDS);
        PodSandboxConfig pod =
                PodSandboxConfig.newBuilder()
                        .setMetadata(
                                PodSandboxMetadata.newBuilder()
                                        .setName("p" + name)
                                        .setNamespace("churn")
                                        .setUid("u" + name))
                        .build();
        String sandbox =
                rt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                        .getPodSandboxId();
        String id =
                rt.createContainer(
                                CreateContainerRequest.newBuilder()
                                        .setPodSandboxId(sandbox)
                                        .setSandboxConfig(pod)
                                        .setConfig(
                                                ContainerConfig.newBuilder()
                                                        .setMetadata(
                                                                ContainerMetadata.newBuilder()
                                                                        .setName("c"))
                                                        .setImage(
                                                                ImageSpec.newBuilder()
                                                                        .setImage("busybox")))
                                        .build())
                        .getContainerId();
        Map<String, String> marks = new TreeMap<>();
        rt.containerStatus(ContainerStatusRequest.newBuilder().setContainerId(id).build())
                .getStatus()
                .getAnnotationsMap()
                .forEach(
                        (k, v) -> {
                            if (k.startsWith("seen-h")) {
                                marks.put(k, v);
                            }
                        });
        rt.startContainer(StartContainerRequest.newBuilder().setContainerId(id).build());
        rt.stopContainer(StopContainerRequest.newBuilder().setContainerId(id).build());
        rt.removeContainer(RemoveContainerRequest.newBuilder().setContainerId(id).build());
        rt.stopPodSandbox(StopPodSandboxRequest.newBuilder().setPodSandboxId(sandbox).build());
        rt.removePodSandbox(RemovePodSandboxRequest.newBuilder().setPodSandboxId(sandbox).build());
        return marks;
    }
}
