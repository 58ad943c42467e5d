package io.cri4j.benchmarks;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.ExecRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.streaming.CommandOptions;
import io.cri4j.streaming.RemoteCommand;
import io.cri4j.streaming.StreamingClient;
import io.cri4j.testing.fake.FakeCriServer;
import io.cri4j.testing.real.LocalContainerd;
import io.cri4j.testing.real.TestImage;
import io.cri4j.testing.real.TestPods;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Exec stdout of a large command, containerd's own streaming server (Go, the CRI plugin's) against
 * ours, read by the same client ({@link StreamingClient}, SPDY and WebSocket), measured
 * <em>interleaved</em>: each round runs the four series (containerd SPDY, containerd WebSocket,
 * cri4j SPDY, cri4j WebSocket) in a rotating order.
 *
 * <p>Both sides get the exec URL from CRI {@code Exec} and run {@code dd if=/dev/zero bs=32768
 * count=N} (32 KiB writes, as Go's {@code io.Copy} copies): containerd (a private {@link
 * LocalContainerd}, 1.6 or 2.3) in a busybox container of a pod on the node's network, ours in
 * cri-testing's {@link FakeCriServer}, whose built-in streaming server runs it as a host process.
 * The WebSocket client offers {@code v5.channel.k8s.io} and {@code v4.channel.k8s.io}: ours
 * takes v5, containerd's (1.6 and 2.3) knows up to v4.
 * The command's own CPU is left out on both sides: what is counted is this JVM (client, and for
 * ours also the server), and for containerd its daemon and its shims ({@code /proc/PID/stat}
 * utime + stime, without their children's). Run (starts containerd: hold the peers' lock):
 * {@code java -cp benchmarks/target/benchmarks.jar io.cri4j.benchmarks.StreamingVsContainerd [rounds] [mib] [1.6|2.3]}
 * (defaults 5, 1024, 1.6; one warm-up round of each series first, not counted).
 */
public final class StreamingVsContainerd {
    private StreamingVsContainerd() {}

    private static final String[] SERIES = {
        "containerd, SPDY", "containerd, WebSocket", "cri4j, SPDY", "cri4j, WebSocket"
    };

    /**
     * @param args optional rounds (default 5), MiB per exec (default 1024, a multiple of 1/32 MiB)
     *     and containerd version ({@code 1.6}, Debian's; or {@code 2.3}, /opt/cri4j's 2.3.4)
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        long mib = args.length > 1 ? Long.parseLong(args[1]) : 1024;
        String version = args.length > 2 ? args[2] : "1.6";
        long bytes = mib << 20;
        List<String> cmd =
                List.of(
                        "dd",
                        "if=/dev/zero",
                        "bs=" + StreamingFixture.CHUNK,
                        "count=" + bytes / StreamingFixture.CHUNK);
        LocalContainerd.Builder cb = LocalContainerd.builder();
        if (version.equals("2.3")) {
            cb.containerd23WithNri();
        } else if (!version.equals("1.6")) {
            throw new IllegalArgumentException("containerd version: 1.6 or 2.3, not " + version);
        }
        Path logs = Files.createTempDirectory("cri4j-stream-vs-containerd");
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean();
        try (LocalContainerd containerd = cb.start();
                FakeCriServer fake = FakeCriServer.builder().containerProcesses(false).build();
                StreamingClient spdy = StreamingClient.builder().build();
                // v4 as well: containerd's server knows v1-v4 only (it answers a v5-only offer 403)
                StreamingClient ws =
                        StreamingClient.builder()
                                .transport(StreamingClient.Transport.WEBSOCKET)
                                .webSocketProtocols(
                                        List.of("v5.channel.k8s.io", "v4.channel.k8s.io"))
                                .build()) {
            fake.start();
            ManagedChannel cch = CriChannels.newChannel(containerd.endpoint());
            ManagedChannel fch = fake.newChannel();
            try {
                RuntimeServiceGrpc.RuntimeServiceBlockingStub crt =
                        RuntimeServiceGrpc.newBlockingStub(cch);
                RuntimeServiceGrpc.RuntimeServiceBlockingStub frt =
                        RuntimeServiceGrpc.newBlockingStub(fch);
                String image = containerd.registry().push(TestImage.busybox()).reference();
                ImageServiceGrpc.newBlockingStub(cch)
                        .pullImage(
                                PullImageRequest.newBuilder()
                                        .setImage(ImageSpec.newBuilder().setImage(image))
                                        .build());
                PodSandboxConfig pod = TestPods.hostNetwork("stream-bench", "bench", logs).build();
                ContainerConfig container = TestPods.sleeper("source", image).build();
                String cPod =
                        crt.runPodSandbox(RunPodSandboxRequest.newBuilder().setConfig(pod).build())
                                .getPodSandboxId();
                String cId =
                        crt.createContainer(
                                        CreateContainerRequest.newBuilder()
                                                .setPodSandboxId(cPod)
                                                .setSandboxConfig(pod)
                                                .setConfig(container)
                                                .build())
                                .getContainerId();
                crt.startContainer(StartContainerRequest.newBuilder().setContainerId(cId).build());
                String fPod = fake.runtime().runPodSandbox(pod);
                String fId = fake.runtime().runContainer(fPod, container);
                List<Long> daemons = new ArrayList<>();
                daemons.add(containerd.pid());
                daemons.addAll(shims(containerd.socketPath()));
                if (daemons.size() < 2) {
                    throw new IllegalStateException(
                            "no containerd-shim of " + containerd.socketPath() + " found");
                }
                System.out.printf(
                        "containerd %s (streaming server of its CRI plugin), cri4j %s%n",
                        containerd.socketPath(), fake.streamingBaseUrl().orElseThrow());
                Exec[] series = {
                    () -> exec(spdy, crt, cId, cmd),
                    () -> exec(ws, crt, cId, cmd),
                    () -> exec(spdy, frt, fId, cmd),
                    () -> exec(ws, frt, fId, cmd),
                };
                for (Exec e : series) { // warm-up
                    StreamingFixture.check(bytes, e.run());
                }
                double[][] seconds = new double[4][rounds];
                long[] jvmCpu = new long[4];
                long[] daemonCpu = new long[4];
                for (int r = 0; r < rounds; r++) {
                    for (int k = 0; k < 4; k++) {
                        int which = (r + k) % 4;
                        long d0 = cpuNanos(daemons);
                        long c0 = os.getProcessCpuTime();
                        long t0 = System.nanoTime();
                        StreamingFixture.check(bytes, series[which].run());
                        seconds[which][r] = (System.nanoTime() - t0) / 1e9;
                        jvmCpu[which] += os.getProcessCpuTime() - c0;
                        daemonCpu[which] += cpuNanos(daemons) - d0;
                    }
                }
                System.out.printf(
                        "%d rounds of a %d MiB exec (%s), containerd %s against cri4j's StreamingServer"
                                + " (cri-testing's fake runtime), both read by cri4j's StreamingClient%n",
                        rounds, mib, String.join(" ", cmd), version);
                System.out.println(
                        "series                  MiB/s median (min..max)   CPU ms/MiB: all (this JVM + containerd and shims)");
                for (int s = 0; s < 4; s++) {
                    double[] rate = new double[rounds];
                    for (int r = 0; r < rounds; r++) {
                        rate[r] = mib / seconds[s][r];
                    }
                    double perMib = 1e6 * rounds * mib;
                    System.out.printf(
                            "%-22s  %6.0f (%5.0f..%5.0f)        %.2f (%.2f + %.2f)%n",
                            SERIES[s],
                            q(rate, .5),
                            q(rate, 0),
                            q(rate, 1),
                            (jvmCpu[s] + daemonCpu[s]) / perMib,
                            jvmCpu[s] / perMib,
                            daemonCpu[s] / perMib);
                }
                for (int t = 0; t < 2; t++) {
                    double[] speed = new double[rounds];
                    for (int r = 0; r < rounds; r++) {
                        speed[r] = seconds[t][r] / seconds[t + 2][r];
                    }
                    System.out.printf(
                            "%s: cri4j %.2fx containerd's speed (per-round wall-time ratio, median; min %.2f, max %.2f), %.2fx its CPU per MiB%n",
                            t == 0 ? "SPDY" : "WebSocket",
                            q(speed, .5),
                            q(speed, 0),
                            q(speed, 1),
                            (double) (jvmCpu[t + 2] + daemonCpu[t + 2])
                                    / (jvmCpu[t] + daemonCpu[t]));
                }
            } finally {
                cch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                fch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        } finally {
            try (var files = Files.walk(logs)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private interface Exec {
        long run() throws Exception;
    }

    private static long exec(
            StreamingClient client,
            RuntimeServiceGrpc.RuntimeServiceBlockingStub rt,
            String containerId,
            List<String> cmd)
            throws IOException, InterruptedException {
        String url =
                rt.exec(
                                ExecRequest.newBuilder()
                                        .setContainerId(containerId)
                                        .addAllCmd(cmd)
                                        .setStdout(true)
                                        .build())
                        .getUrl();
        RemoteCommand opened;
        try {
            opened = client.exec(URI.create(url), new CommandOptions(false, true, false, false));
        } catch (IOException | RuntimeException e) {
            throw new IOException("exec at " + url + ": " + e.getMessage(), e);
        }
        try (RemoteCommand c = opened) {
            long got = StreamingFixture.drain(c.stdout());
            int code = c.waitFor();
            if (code != 0) {
                throw new IOException("exec exited with " + code + " (" + url + ")");
            }
            return got;
        }
    }

    /** The shims containerd at {@code socket} started ({@code -address SOCKET} on their command line). */
    private static List<Long> shims(Path socket) throws IOException {
        List<Long> pids = new ArrayList<>();
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : (Iterable<Path>) procs::iterator) {
                String name = p.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String cmdline =
                            new String(
                                            Files.readAllBytes(p.resolve("cmdline")),
                                            StandardCharsets.UTF_8)
                                    .replace('\0', ' ');
                    if (cmdline.contains("containerd-shim")
                            && cmdline.contains(socket.toString())) {
                        pids.add(Long.parseLong(name));
                    }
                } catch (IOException e) {
                    // exited meanwhile
                }
            }
        }
        return pids;
    }

    /** utime + stime of {@code pids} (not of their children), from {@code /proc/PID/stat}. */
    private static long cpuNanos(List<Long> pids) throws IOException {
        long ticks = 0;
        for (long pid : pids) {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15
        }
        return ticks * (1_000_000_000L / 100); // USER_HZ is 100 on Linux
    }

    private static double q(double[] values, double q) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
    }
}
