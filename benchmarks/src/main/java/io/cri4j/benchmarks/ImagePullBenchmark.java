package io.cri4j.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ImageStatusRequest;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveImageRequest;
import io.cri4j.imagepull.CriImagePullBackend;
import io.cri4j.imagepull.ImagePuller;
import io.cri4j.imagepull.PullJob;
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
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A timed harness (not JMH: each sample is a real pull through a real containerd from a real
 * registry, seconds long) for the image puller:
 * <ol>
 *   <li>wall time of the puller pulling the 64 MiB test image as a ratio to a bare CRI PullImage
 *       of the same image in the same run (alternating, image removed before each pull);</li>
 *   <li>CPU cost of the content-service progress polling: JVM and containerd CPU time per pull,
 *       bare vs puller;</li>
 *   <li>20 distinct images pulled concurrently through a pool of 4 workers, against a pool of 1.</li>
 * </ol>
 * Needs root and the harness's Debian packages. Run:
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.ImagePullBenchmark [rounds]}.
 */
public final class ImagePullBenchmark {

    private ImagePullBenchmark() {}

    /**
     * @param args optional number of rounds (default 7)
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        OperatingSystemMXBean os =
                (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (LocalRegistry registry = LocalRegistry.builder().start();
                LocalContainerd containerd = LocalContainerd.builder().registry(registry).start()) {
            ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
            var images = ImageServiceGrpc.newBlockingStub(channel);
            PushedImage large = registry.push(TestImage.large());
            System.out.printf(
                    Locale.ROOT,
                    "large image: %s, %d layers, %d bytes%n",
                    large.reference(),
                    large.layers().size(),
                    large.layersSize());

            String[] names = {
                "bare CRI PullImage",
                "puller (content polling 200 ms)",
                "puller without content polling"
            };
            long[][] wall = new long[3][rounds];
            long[][] jvmCpu = new long[3][rounds];
            long[][] ctrdCpu = new long[3][rounds];
            try (ImagePuller polling =
                            ImagePuller.builder(
                                            CriImagePullBackend.builder(containerd.endpoint())
                                                    .build())
                                    .build();
                    ImagePuller plain =
                            ImagePuller.builder(
                                            CriImagePullBackend.builder(containerd.endpoint())
                                                    .contentProgress(false)
                                                    .build())
                                    .build()) {
                java.util.Random random = new java.util.Random(42);
                for (int i = -2; i < rounds; i++) { // two warm-up rounds
                    List<Integer> order = new ArrayList<>(List.of(0, 1, 2));
                    java.util.Collections.shuffle(order, random);
                    for (int v : order) {
                        remove(images, large.reference());
                        long cpu0 = os.getProcessCpuTime();
                        long ctrd0 = cpuOf(containerd.pid());
                        long t0 = System.nanoTime();
                        switch (v) {
                            case 0 ->
                                    images.pullImage(
                                            PullImageRequest.newBuilder()
                                                    .setImage(
                                                            ImageSpec.newBuilder()
                                                                    .setImage(large.reference()))
                                                    .build());
                            case 1 ->
                                    polling.pull(large.reference())
                                            .result()
                                            .get(120, TimeUnit.SECONDS);
                            default ->
                                    plain.pull(large.reference())
                                            .result()
                                            .get(120, TimeUnit.SECONDS);
                        }
                        if (i >= 0) {
                            wall[v][i] = System.nanoTime() - t0;
                            jvmCpu[v][i] = os.getProcessCpuTime() - cpu0;
                            ctrdCpu[v][i] = cpuOf(containerd.pid()) - ctrd0;
                        }
                    }
                }
            }
            for (int v = 0; v < 3; v++) {
                System.out.printf(
                        Locale.ROOT,
                        "%-34s wall median %4.0f ms (ratio to bare %.3f)  JVM CPU %3.0f ms"
                                + "  containerd CPU %3.0f ms%n",
                        names[v],
                        median(wall[v]) / 1e6,
                        median(wall[v]) / median(wall[0]),
                        median(jvmCpu[v]) / 1e6,
                        median(ctrdCpu[v]) / 1e6);
            }
            System.out.println("per-round ratio puller/bare " + ratios(wall[1], wall[0]));

            // 20 distinct images, pool of 4 vs pool of 1
            List<PushedImage> twenty = new ArrayList<>();
            long b0 = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                twenty.add(registry.push(TestImage.large(2L * 1024 * 1024 + i * 4096L)));
            }
            System.out.printf(
                    Locale.ROOT,
                    "built and pushed 20 images of 2 MiB random + busybox in %.1f s%n",
                    (System.nanoTime() - b0) / 1e9);
            for (int pool : new int[] {1, 4}) {
                for (PushedImage im : twenty) {
                    remove(images, im.reference());
                }
                try (ImagePuller p =
                        ImagePuller.builder(
                                        CriImagePullBackend.builder(containerd.endpoint()).build())
                                .workers(pool)
                                .build()) {
                    long t0 = System.nanoTime();
                    List<PullJob> jobs = twenty.stream().map(im -> p.pull(im.reference())).toList();
                    CompletableFuture.allOf(
                                    jobs.stream()
                                            .map(PullJob::result)
                                            .toArray(CompletableFuture[]::new))
                            .get(300, TimeUnit.SECONDS);
                    System.out.printf(
                            Locale.ROOT,
                            "20 images, pool of %d: %.0f ms%n",
                            pool,
                            (System.nanoTime() - t0) / 1e6);
                }
            }
            channel.shutdownNow();
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
