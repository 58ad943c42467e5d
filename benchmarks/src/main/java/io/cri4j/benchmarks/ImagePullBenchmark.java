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

    private ImagePullBenchmark() {
    }

    /**
     * @param args optional number of rounds (default 7)
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (LocalRegistry registry = LocalRegistry.builder().start();
             LocalContainerd containerd = LocalContainerd.builder().registry(registry).start()) {
            ManagedChannel channel = CriChannels.newChannel(containerd.endpoint());
            var images = ImageServiceGrpc.newBlockingStub(channel);
            PushedImage large = registry.push(TestImage.large());
            System.out.printf(Locale.ROOT, "large image: %s, %d layers, %d bytes%n", large.reference(),
                    large.layers().size(), large.layersSize());

            long[] bare = new long[rounds];
            long[] puller = new long[rounds];
            long[] bareCpu = new long[rounds];
            long[] pullerCpu = new long[rounds];
            long[] bareCtrd = new long[rounds];
            long[] pullerCtrd = new long[rounds];
            try (ImagePuller p = ImagePuller.builder(CriImagePullBackend.builder(containerd.endpoint()).build()).build()) {
                // warm-up of both paths (class loading, connections)
                remove(images, large.reference());
                images.pullImage(PullImageRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(large.reference())).build());
                remove(images, large.reference());
                p.pull(large.reference()).result().get(120, TimeUnit.SECONDS);
                for (int i = 0; i < rounds; i++) {
                    for (int order = 0; order < 2; order++) {
                        boolean usePuller = (i + order) % 2 == 1;
                        remove(images, large.reference());
                        long cpu0 = os.getProcessCpuTime();
                        long ctrd0 = cpuOf(containerd.pid());
                        long t0 = System.nanoTime();
                        if (usePuller) {
                            p.pull(large.reference()).result().get(120, TimeUnit.SECONDS);
                        } else {
                            images.pullImage(PullImageRequest.newBuilder()
                                    .setImage(ImageSpec.newBuilder().setImage(large.reference())).build());
                        }
                        long wall = System.nanoTime() - t0;
                        long cpu = os.getProcessCpuTime() - cpu0;
                        long ctrd = cpuOf(containerd.pid()) - ctrd0;
                        if (usePuller) {
                            puller[i] = wall;
                            pullerCpu[i] = cpu;
                            pullerCtrd[i] = ctrd;
                        } else {
                            bare[i] = wall;
                            bareCpu[i] = cpu;
                            bareCtrd[i] = ctrd;
                        }
                    }
                }
            }
            double ratio = median(puller) / median(bare);
            System.out.printf(Locale.ROOT, "64 MiB pull wall time, median of %d: bare CRI %.0f ms, puller %.0f ms,"
                    + " ratio %.3f (per-round ratios %s)%n", rounds, median(bare) / 1e6, median(puller) / 1e6, ratio,
                    ratios(puller, bare));
            System.out.printf(Locale.ROOT, "CPU per pull, median: JVM bare %.0f ms, JVM puller %.0f ms;"
                    + " containerd bare %.0f ms, containerd with polling %.0f ms%n",
                    median(bareCpu) / 1e6, median(pullerCpu) / 1e6, median(bareCtrd) / 1e6, median(pullerCtrd) / 1e6);

            // 20 distinct images, pool of 4 vs pool of 1
            List<PushedImage> twenty = new ArrayList<>();
            long b0 = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                twenty.add(registry.push(TestImage.large(2L * 1024 * 1024 + i * 4096L)));
            }
            System.out.printf(Locale.ROOT, "built and pushed 20 images of 2 MiB random + busybox in %.1f s%n",
                    (System.nanoTime() - b0) / 1e9);
            for (int pool : new int[] {1, 4}) {
                for (PushedImage im : twenty) {
                    remove(images, im.reference());
                }
                try (ImagePuller p = ImagePuller.builder(CriImagePullBackend.builder(containerd.endpoint()).build())
                        .workers(pool).build()) {
                    long t0 = System.nanoTime();
                    List<PullJob> jobs = twenty.stream().map(im -> p.pull(im.reference())).toList();
                    CompletableFuture.allOf(jobs.stream().map(PullJob::result).toArray(CompletableFuture[]::new))
                            .get(300, TimeUnit.SECONDS);
                    System.out.printf(Locale.ROOT, "20 images, pool of %d: %.0f ms%n", pool, (System.nanoTime() - t0) / 1e6);
                }
            }
            channel.shutdownNow();
        }
    }

    private static void remove(ImageServiceGrpc.ImageServiceBlockingStub images, String ref) {
        var st = images.imageStatus(ImageStatusRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(ref)).build());
        if (st.hasImage() && !st.getImage().getId().isEmpty()) {
            images.removeImage(RemoveImageRequest.newBuilder().setImage(ImageSpec.newBuilder().setImage(ref)).build());
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
            sb.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2f", (double) a[i] / b[i]));
        }
        return sb.append(']').toString();
    }
}
