package io.cri4j.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgress;
import io.cri4j.proxy.CriProxy;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.LocalRegistry;
import io.cri4j.testing.real.PushedImage;
import io.cri4j.testing.real.TestImage;
import io.grpc.ManagedChannel;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * Observed pulls (a timed harness, not JMH: each sample is a real pull through a real containerd from a real
 * registry): the wall time of a {@code PullImage} relayed by a proxy that follows it ({@code observePulls}, a
 * {@link PullObserver} polling containerd's content service every 200 ms) as a ratio to the same call
 * through a proxy that does not, and to the call made directly; and the CPU the following costs the proxy's
 * process per pull (JVM CPU per pull, following minus not following, both proxies in one JVM with the
 * client) and containerd. Per round the three variants run in random order, each after removing the image.
 * Needs root and the harness's Debian packages. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ObservedPullBenchmark [rounds] [large|small] [warm-up]}.
 */
public final class ObservedPullBenchmark {

    private ObservedPullBenchmark() {}

    /**
     * @param args rounds (default 15), image: {@code large} (busybox + 64 MiB random, default) or {@code small}
     *             (busybox), warm-up rounds (default 5)
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        boolean small = args.length > 1 && args[1].equals("small");
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        OperatingSystemMXBean os =
                (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        Path dir = Files.createTempDirectory("cri4j-observed-pulls");
        try (LocalRegistry registry = LocalRegistry.builder().start();
                LocalContainerd containerd = LocalContainerd.builder().registry(registry).start();
                PullObserver observer = PullObserver.builder(containerd.endpoint()).build();
                CriProxy plain =
                        CriProxy.builder()
                                .listen(dir.resolve("plain.sock"))
                                .backend(containerd.endpoint())
                                .build()
                                .start();
                CriProxy following =
                        CriProxy.builder()
                                .listen(dir.resolve("following.sock"))
                                .backend(containerd.endpoint())
                                .observePulls(observer)
                                .build()
                                .start()) {
            PushedImage image = registry.push(small ? TestImage.busybox() : TestImage.large());
            System.out.printf(
                    Locale.ROOT,
                    "image: %s, %d layers, %d bytes%n",
                    image.reference(),
                    image.layers().size(),
                    image.layersSize());
            String[] names = {
                "direct (no proxy)", "proxy, not following", "proxy, following (observePulls)"
            };
            List<ManagedChannel> channels =
                    List.of(
                            KubeletLikeChannels.newChannel(containerd.endpoint()),
                            KubeletLikeChannels.newChannel(plain.listenEndpoint()),
                            KubeletLikeChannels.newChannel(following.listenEndpoint()));
            ManagedChannel admin = CriChannels.newChannel(containerd.endpoint());
            var images = ImageServiceGrpc.newBlockingStub(admin);
            PullImageRequest pull =
                    PullImageRequest.newBuilder()
                            .setImage(ImageSpec.newBuilder().setImage(image.reference()))
                            .build();
            long[][] wall = new long[3][rounds];
            long[][] jvmCpu = new long[3][rounds];
            long[][] ctrdCpu = new long[3][rounds];
            Random random = new Random(42);
            java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            List<java.util.Map<String, Long>> byThread =
                    List.of(
                            new java.util.TreeMap<>(),
                            new java.util.TreeMap<>(),
                            new java.util.TreeMap<>());
            for (int i = -warmup;
                    i < rounds;
                    i++) { // warm-up rounds: JIT compiles every variant's code first
                List<Integer> order = new ArrayList<>(List.of(0, 1, 2));
                Collections.shuffle(order, random);
                for (int v : order) {
                    remove(images, image.reference());
                    awaitQuiet(observer);
                    java.util.Map<Long, Long> thread0 = new java.util.HashMap<>();
                    for (long id : threads.getAllThreadIds()) {
                        thread0.put(id, threads.getThreadCpuTime(id));
                    }
                    long cpu0 = os.getProcessCpuTime();
                    long ctrd0 = cpuOf(containerd.pid());
                    long t0 = System.nanoTime();
                    ImageServiceGrpc.newBlockingStub(channels.get(v))
                            .withDeadlineAfter(2, TimeUnit.MINUTES)
                            .pullImage(pull);
                    long t1 = System.nanoTime();
                    if (v == 2) {
                        awaitQuiet(
                                observer); // the observer's last work (final layers) counts for its
                        // CPU
                    }
                    if (i >= 0) {
                        wall[v][i] = t1 - t0;
                        jvmCpu[v][i] = os.getProcessCpuTime() - cpu0;
                        ctrdCpu[v][i] = cpuOf(containerd.pid()) - ctrd0;
                        for (java.lang.management.ThreadInfo t :
                                threads.getThreadInfo(threads.getAllThreadIds())) {
                            if (t != null) {
                                long used =
                                        threads.getThreadCpuTime(t.getThreadId())
                                                - thread0.getOrDefault(t.getThreadId(), 0L);
                                byThread.get(v)
                                        .merge(
                                                t.getThreadName().replaceAll("[-#]?\\d+$", ""),
                                                used,
                                                Long::sum);
                            }
                        }
                    }
                }
            }
            for (int v = 0; v < 3; v++) {
                System.out.printf(
                        Locale.ROOT,
                        "%-34s wall median %5.0f ms  ratio to not following %.3f  to direct %.3f"
                                + "  JVM CPU %4.1f ms  containerd CPU %4.0f ms%n",
                        names[v],
                        median(wall[v]) / 1e6,
                        median(wall[v]) / median(wall[1]),
                        median(wall[v]) / median(wall[0]),
                        median(jvmCpu[v]) / 1e6,
                        median(ctrdCpu[v]) / 1e6);
            }
            System.out.println(
                    "per-round ratio following/not following " + ratios(wall[2], wall[1]));
            System.out.println(
                    "JVM threads' CPU per pull, by thread name (ms), not following -> following:");
            java.util.Set<String> names2 = new java.util.TreeSet<>(byThread.get(1).keySet());
            names2.addAll(byThread.get(2).keySet());
            for (String n : names2) {
                double a = byThread.get(1).getOrDefault(n, 0L) / 1e6 / rounds;
                double b = byThread.get(2).getOrDefault(n, 0L) / 1e6 / rounds;
                if (a >= 0.05 || b >= 0.05) {
                    System.out.printf(Locale.ROOT, "  %-36s %6.2f -> %6.2f%n", n, a, b);
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "proxy CPU per followed pull (JVM CPU median, following - not following):"
                            + " %.1f ms%n",
                    (median(jvmCpu[2]) - median(jvmCpu[1])) / 1e6);
            PullProgress last = observer.pulls().get(0);
            System.out.printf(
                    Locale.ROOT,
                    "last followed pull: %s %d%% %d/%d bytes, %d layers%n",
                    last.phase(),
                    last.percent(),
                    last.bytesDone(),
                    last.bytesTotal(),
                    last.layers().size());
            for (ManagedChannel c : channels) {
                c.shutdownNow();
            }
            admin.shutdownNow();
        }
    }

    /** Waits until the observer follows no pull (its final snapshot went out). */
    private static void awaitQuiet(PullObserver observer) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (observer.pulls().stream().anyMatch(p -> !p.phase().terminal())
                && System.nanoTime() < end) {
            TimeUnit.MILLISECONDS.sleep(5);
        }
    }

    private static void remove(ImageServiceGrpc.ImageServiceBlockingStub images, String ref) {
        var st =
                images.imageStatus(
                        ImageStatusRequest.newBuilder()
                                .setImage(ImageSpec.newBuilder().setImage(ref))
                                .build());
        if (st.hasImage() && !st.getImage().getId().isEmpty()) {
            images.removeImage(
                    RemoveImageRequest.newBuilder()
                            .setImage(ImageSpec.newBuilder().setImage(ref))
                            .build());
        }
    }

    /** CPU time (user + system) of a process in nanoseconds, from /proc/PID/stat. */
    private static long cpuOf(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        return ticks * 10_000_000L; // USER_HZ = 100
    }

    private static double median(long[] xs) {
        long[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
    }

    private static String ratios(long[] a, long[] b) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < a.length; i++) {
            sb.append(i == 0 ? "" : ", ")
                    .append(String.format(Locale.ROOT, "%.2f", (double) a[i] / b[i]));
        }
        return sb.append(']').toString();
    }
}
