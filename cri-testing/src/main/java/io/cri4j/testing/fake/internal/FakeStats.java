package io.cri4j.testing.fake.internal;

import io.cri4j.cri.v1.ContainerAttributes;
import io.cri4j.cri.v1.ContainerMetrics;
import io.cri4j.cri.v1.ContainerState;
import io.cri4j.cri.v1.ContainerStats;
import io.cri4j.cri.v1.CpuUsage;
import io.cri4j.cri.v1.FilesystemIdentifier;
import io.cri4j.cri.v1.FilesystemUsage;
import io.cri4j.cri.v1.LinuxPodSandboxStats;
import io.cri4j.cri.v1.MemoryUsage;
import io.cri4j.cri.v1.Metric;
import io.cri4j.cri.v1.MetricDescriptor;
import io.cri4j.cri.v1.MetricType;
import io.cri4j.cri.v1.NetworkInterfaceUsage;
import io.cri4j.cri.v1.NetworkUsage;
import io.cri4j.cri.v1.PodSandboxAttributes;
import io.cri4j.cri.v1.PodSandboxMetrics;
import io.cri4j.cri.v1.PodSandboxStats;
import io.cri4j.cri.v1.ProcessUsage;
import io.cri4j.cri.v1.UInt64Value;
import io.cri4j.testing.fake.internal.FakeState.ContainerRecord;
import io.cri4j.testing.fake.internal.FakeState.SandboxRecord;
import java.util.List;

/**
 * Plausible, deterministic resource figures, the fake's own accounting (no process is measured): CPU time grows with running time (each container uses a stable
 * 0.5–5 % of a core), memory is a stable 4–36 MiB per container capped by its memory limit, the network
 * counters of a pod grow with its age. Only running containers use CPU and memory, as with a real runtime.
 */
public final class FakeStats {

    static final String ROOT = "/var/lib/cri4j-fake";
    private static final long MIB = 1024 * 1024;

    private final FakeState state;

    public FakeStats(FakeState state) {
        this.state = state;
    }

    public ContainerStats containerStats(ContainerRecord c) {
        long now = state.now();
        long seed = seed(c.id);
        ContainerStats.Builder b =
                ContainerStats.newBuilder()
                        .setAttributes(
                                ContainerAttributes.newBuilder()
                                        .setId(c.id)
                                        .setMetadata(c.config.getMetadata())
                                        .putAllLabels(c.config.getLabelsMap())
                                        .putAllAnnotations(c.statusAnnotations))
                        .setWritableLayer(
                                FilesystemUsage.newBuilder()
                                        .setTimestamp(now)
                                        .setFsId(
                                                FilesystemIdentifier.newBuilder()
                                                        .setMountpoint(ROOT + "/snapshots"))
                                        .setUsedBytes(
                                                u64(12 * 1024 + Math.floorMod(seed, 256 * 1024)))
                                        .setInodesUsed(u64(8 + Math.floorMod(seed >>> 8, 64))));
        boolean running = c.state == ContainerState.CONTAINER_RUNNING;
        long nanoCores = running ? nanoCores(seed) : 0;
        long ranNanos =
                c.startedAt == 0 ? 0 : Math.max(0, (running ? now : c.finishedAt) - c.startedAt);
        // 30 ms of start-up CPU plus the steady share for the time it ran
        long cpuTotal =
                c.startedAt == 0
                        ? 0
                        : 30_000_000L
                                + ranNanos / 1_000_000_000L * nanoCores(seed)
                                + (ranNanos % 1_000_000_000L) * nanoCores(seed) / 1_000_000_000L;
        b.setCpu(
                CpuUsage.newBuilder()
                        .setTimestamp(now)
                        .setUsageCoreNanoSeconds(u64(cpuTotal))
                        .setUsageNanoCores(u64(nanoCores)));
        long ws = running ? workingSet(c, seed) : 0;
        MemoryUsage.Builder mem =
                MemoryUsage.newBuilder()
                        .setTimestamp(now)
                        .setWorkingSetBytes(u64(ws))
                        .setUsageBytes(u64(running ? ws + MIB : 0))
                        .setRssBytes(u64(ws * 4 / 5))
                        .setPageFaults(u64(running ? 1000 + Math.floorMod(seed >>> 16, 5000) : 0))
                        .setMajorPageFaults(u64(running ? Math.floorMod(seed >>> 24, 10) : 0));
        long limit = c.resources == null ? 0 : c.resources.getMemoryLimitInBytes();
        if (limit > 0) {
            mem.setAvailableBytes(u64(Math.max(0, limit - ws)));
        }
        b.setMemory(mem);
        return b.build();
    }

    public PodSandboxStats podSandboxStats(SandboxRecord s, List<ContainerRecord> containers) {
        long now = state.now();
        long seed = seed(s.id);
        boolean ready = s.ready();
        // the pause process: 0.1 % CPU, ~1 MiB
        long cpuTotal = 5_000_000L;
        long nanoCores = ready ? 1_000_000L : 0;
        long ws = ready ? MIB : 0;
        long processes = ready ? 1 : 0;
        LinuxPodSandboxStats.Builder linux = LinuxPodSandboxStats.newBuilder();
        for (ContainerRecord c : containers) {
            ContainerStats cs = containerStats(c);
            linux.addContainers(cs);
            cpuTotal += cs.getCpu().getUsageCoreNanoSeconds().getValue();
            nanoCores += cs.getCpu().getUsageNanoCores().getValue();
            ws += cs.getMemory().getWorkingSetBytes().getValue();
            if (c.state == ContainerState.CONTAINER_RUNNING) {
                processes++;
            }
        }
        long ageSeconds = Math.max(0, (now - s.createdAt) / 1_000_000_000L);
        NetworkInterfaceUsage eth0 =
                NetworkInterfaceUsage.newBuilder()
                        .setName("eth0")
                        .setRxBytes(u64(4096 + ageSeconds * (200 + Math.floorMod(seed, 800))))
                        .setRxErrors(u64(0))
                        .setTxBytes(
                                u64(2048 + ageSeconds * (100 + Math.floorMod(seed >>> 10, 400))))
                        .setTxErrors(u64(0))
                        .build();
        linux.setCpu(
                        CpuUsage.newBuilder()
                                .setTimestamp(now)
                                .setUsageCoreNanoSeconds(u64(cpuTotal))
                                .setUsageNanoCores(u64(nanoCores)))
                .setMemory(
                        MemoryUsage.newBuilder()
                                .setTimestamp(now)
                                .setWorkingSetBytes(u64(ws))
                                .setUsageBytes(u64(ws + (ready ? MIB : 0)))
                                .setRssBytes(u64(ws * 4 / 5)))
                .setNetwork(
                        NetworkUsage.newBuilder()
                                .setTimestamp(now)
                                .setDefaultInterface(eth0)
                                .addInterfaces(eth0))
                .setProcess(
                        ProcessUsage.newBuilder()
                                .setTimestamp(now)
                                .setProcessCount(u64(processes)));
        return PodSandboxStats.newBuilder()
                .setAttributes(
                        PodSandboxAttributes.newBuilder()
                                .setId(s.id)
                                .setMetadata(s.config.getMetadata())
                                .putAllLabels(s.config.getLabelsMap())
                                .putAllAnnotations(s.config.getAnnotationsMap()))
                .setLinux(linux)
                .build();
    }

    /** Label keys every container metric starts with, as containerd's: the container's id and name. */
    static final List<String> BASE_LABELS = List.of("id", "name");

    /** Which object a metric is reported for: the pod (network) or each of its containers. */
    private enum Scope {
        POD,
        CONTAINER
    }

    /** One value of a metric: the label values after the base ones, and the value. */
    private record Sample(List<String> labels, long value) {}

    /** A metric the fake describes and reports, in cAdvisor's name as kubelet's CRI stats path reads it. */
    private record Def(
            String name,
            String help,
            MetricType type,
            Scope scope,
            List<String> extraLabels,
            java.util.function.Function<Source, List<Sample>> values) {}

    /** What a metric's value is computed from: the fake's own accounting of one container or pod. */
    private record Source(
            long now, ContainerRecord container, ContainerStats stats, PodSandboxStats podStats) {

        long cpuSeconds() {
            return stats.getCpu().getUsageCoreNanoSeconds().getValue() / 1_000_000_000L;
        }

        long ranSeconds() {
            if (container.startedAt == 0) {
                return 0;
            }
            long end =
                    container.state == ContainerState.CONTAINER_RUNNING
                            ? now
                            : container.finishedAt;
            return Math.max(0, (end - container.startedAt) / 1_000_000_000L);
        }

        boolean running() {
            return container.state == ContainerState.CONTAINER_RUNNING;
        }

        io.cri4j.cri.v1.LinuxContainerResources resources() {
            return container.resources == null
                    ? io.cri4j.cri.v1.LinuxContainerResources.getDefaultInstance()
                    : container.resources;
        }

        NetworkInterfaceUsage eth0() {
            return podStats.getLinux().getNetwork().getDefaultInterface();
        }
    }

    private static Def container(
            String name,
            String help,
            MetricType type,
            java.util.function.ToLongFunction<Source> v) {
        return new Def(
                name,
                help,
                type,
                Scope.CONTAINER,
                List.of(),
                s -> List.of(new Sample(List.of(), v.applyAsLong(s))));
    }

    private static Def device(
            String name,
            String help,
            MetricType type,
            java.util.function.ToLongFunction<Source> v) {
        return new Def(
                name,
                help,
                type,
                Scope.CONTAINER,
                List.of("device"),
                s -> List.of(new Sample(List.of(DEVICE), v.applyAsLong(s))));
    }

    private static Def network(
            String name, String help, java.util.function.ToLongFunction<Source> v) {
        return new Def(
                name,
                help,
                MetricType.COUNTER,
                Scope.POD,
                List.of("interface"),
                s -> List.of(new Sample(List.of("eth0"), v.applyAsLong(s))));
    }

    /** The device the fake's container filesystems are on (its writable layers' mount point). */
    static final String DEVICE = ROOT + "/snapshots";

    private static final long FS_LIMIT = 10L * 1024 * 1024 * 1024;
    private static final long FS_INODES = 1_000_000;

    private static final List<Def> DEFS =
            List.of(
                    container(
                            "container_cpu_user_seconds_total",
                            "Cumulative user CPU time consumed in seconds.",
                            MetricType.COUNTER,
                            s -> s.cpuSeconds() * 4 / 5),
                    container(
                            "container_cpu_system_seconds_total",
                            "Cumulative system CPU time consumed in seconds.",
                            MetricType.COUNTER,
                            s -> s.cpuSeconds() - s.cpuSeconds() * 4 / 5),
                    container(
                            "container_cpu_usage_seconds_total",
                            "Cumulative CPU time consumed in seconds.",
                            MetricType.COUNTER,
                            Source::cpuSeconds),
                    container(
                            "container_cpu_cfs_periods_total",
                            "Number of elapsed enforcement period intervals.",
                            MetricType.COUNTER,
                            s -> cfsPeriods(s)),
                    container(
                            "container_cpu_cfs_throttled_periods_total",
                            "Number of throttled period intervals.",
                            MetricType.COUNTER,
                            s -> 0),
                    container(
                            "container_cpu_cfs_throttled_seconds_total",
                            "Total time duration the container has been throttled.",
                            MetricType.COUNTER,
                            s -> 0),
                    container(
                            "container_memory_cache",
                            "Number of bytes of page cache memory.",
                            MetricType.GAUGE,
                            s ->
                                    s.stats.getMemory().getUsageBytes().getValue()
                                            - s.stats.getMemory().getWorkingSetBytes().getValue()),
                    container(
                            "container_memory_rss",
                            "Size of RSS in bytes.",
                            MetricType.GAUGE,
                            s -> s.stats.getMemory().getRssBytes().getValue()),
                    container(
                            "container_memory_kernel_usage",
                            "Size of kernel memory allocated in bytes.",
                            MetricType.GAUGE,
                            s -> 0),
                    container(
                            "container_memory_mapped_file",
                            "Size of memory mapped files in bytes.",
                            MetricType.GAUGE,
                            s -> 0),
                    container(
                            "container_memory_swap",
                            "Container swap usage in bytes.",
                            MetricType.GAUGE,
                            s -> 0),
                    container(
                            "container_memory_failcnt",
                            "Number of times container memory usage has hit its limit.",
                            MetricType.COUNTER,
                            s -> 0),
                    container(
                            "container_memory_usage_bytes",
                            "Current memory usage in bytes, including all memory regardless of when"
                                    + " it was accessed",
                            MetricType.GAUGE,
                            s -> s.stats.getMemory().getUsageBytes().getValue()),
                    container(
                            "container_memory_max_usage_bytes",
                            "Maximum memory usage recorded in bytes",
                            MetricType.GAUGE,
                            s -> s.stats.getMemory().getUsageBytes().getValue()),
                    container(
                            "container_memory_working_set_bytes",
                            "Current working set in bytes.",
                            MetricType.GAUGE,
                            s -> s.stats.getMemory().getWorkingSetBytes().getValue()),
                    new Def(
                            "container_memory_failures_total",
                            "Cumulative count of memory allocation failures.",
                            MetricType.COUNTER,
                            Scope.CONTAINER,
                            List.of("failure_type", "scope"),
                            s -> {
                                long faults = s.stats.getMemory().getPageFaults().getValue();
                                long major = s.stats.getMemory().getMajorPageFaults().getValue();
                                return List.of(
                                        new Sample(List.of("pgfault", "container"), faults),
                                        new Sample(List.of("pgmajfault", "container"), major),
                                        new Sample(List.of("pgfault", "hierarchy"), faults),
                                        new Sample(List.of("pgmajfault", "hierarchy"), major));
                            }),
                    container(
                            "container_oom_events_total",
                            "Count of out of memory events observed for the container",
                            MetricType.COUNTER,
                            s -> 0),
                    network(
                            "container_network_receive_bytes_total",
                            "Cumulative count of bytes received",
                            s -> s.eth0().getRxBytes().getValue()),
                    network(
                            "container_network_receive_packets_total",
                            "Cumulative count of packets received",
                            s -> s.eth0().getRxBytes().getValue() / 512),
                    network(
                            "container_network_receive_packets_dropped_total",
                            "Cumulative count of packets dropped while receiving",
                            s -> 0),
                    network(
                            "container_network_receive_errors_total",
                            "Cumulative count of errors encountered while receiving",
                            s -> s.eth0().getRxErrors().getValue()),
                    network(
                            "container_network_transmit_bytes_total",
                            "Cumulative count of bytes transmitted",
                            s -> s.eth0().getTxBytes().getValue()),
                    network(
                            "container_network_transmit_packets_total",
                            "Cumulative count of packets transmitted",
                            s -> s.eth0().getTxBytes().getValue() / 512),
                    network(
                            "container_network_transmit_packets_dropped_total",
                            "Cumulative count of packets dropped while transmitting",
                            s -> 0),
                    network(
                            "container_network_transmit_errors_total",
                            "Cumulative count of errors encountered while transmitting",
                            s -> s.eth0().getTxErrors().getValue()),
                    device(
                            "container_fs_inodes_free",
                            "Number of available Inodes",
                            MetricType.GAUGE,
                            s -> FS_INODES - s.stats.getWritableLayer().getInodesUsed().getValue()),
                    device(
                            "container_fs_inodes_total",
                            "Number of Inodes",
                            MetricType.GAUGE,
                            s -> FS_INODES),
                    device(
                            "container_fs_limit_bytes",
                            "Number of bytes that can be consumed by the container on this"
                                    + " filesystem.",
                            MetricType.GAUGE,
                            s -> FS_LIMIT),
                    device(
                            "container_fs_usage_bytes",
                            "Number of bytes that are consumed by the container on this"
                                    + " filesystem.",
                            MetricType.GAUGE,
                            s -> s.stats.getWritableLayer().getUsedBytes().getValue()),
                    device(
                            "container_fs_reads_bytes_total",
                            "Cumulative count of bytes read",
                            MetricType.COUNTER,
                            s -> 0),
                    device(
                            "container_fs_reads_total",
                            "Cumulative count of reads completed",
                            MetricType.COUNTER,
                            s -> 0),
                    device(
                            "container_fs_writes_bytes_total",
                            "Cumulative count of bytes written",
                            MetricType.COUNTER,
                            s -> s.stats.getWritableLayer().getUsedBytes().getValue()),
                    device(
                            "container_fs_writes_total",
                            "Cumulative count of writes completed",
                            MetricType.COUNTER,
                            s -> s.stats.getWritableLayer().getInodesUsed().getValue()),
                    new Def(
                            "container_blkio_device_usage_total",
                            "Blkio device bytes usage",
                            MetricType.COUNTER,
                            Scope.CONTAINER,
                            List.of("device", "major", "minor", "operation"),
                            s -> {
                                long written = s.stats.getWritableLayer().getUsedBytes().getValue();
                                return List.of(
                                        new Sample(List.of(DEVICE, "0", "0", "Read"), 0),
                                        new Sample(List.of(DEVICE, "0", "0", "Write"), written));
                            }),
                    container(
                            "container_processes",
                            "Number of processes running inside the container.",
                            MetricType.GAUGE,
                            s -> s.running() ? 1 : 0),
                    container(
                            "container_threads",
                            "Number of threads running inside the container",
                            MetricType.GAUGE,
                            s -> s.running() ? 1 : 0),
                    container(
                            "container_threads_max",
                            "Maximum number of threads allowed inside the container, infinity if"
                                    + " value is zero",
                            MetricType.GAUGE,
                            s -> 0),
                    container(
                            "container_file_descriptors",
                            "Number of open file descriptors for the container.",
                            MetricType.GAUGE,
                            s -> s.running() ? 3 : 0),
                    container(
                            "container_sockets",
                            "Number of open sockets for the container.",
                            MetricType.GAUGE,
                            s -> 0),
                    container(
                            "container_last_seen",
                            "Last time a container was seen by the exporter",
                            MetricType.GAUGE,
                            s -> s.now / 1_000_000_000L),
                    container(
                            "container_start_time_seconds",
                            "Start time of the container since unix epoch in seconds.",
                            MetricType.GAUGE,
                            s -> s.container.startedAt / 1_000_000_000L),
                    container(
                            "container_spec_cpu_period",
                            "CPU period of the container.",
                            MetricType.GAUGE,
                            s -> s.resources().getCpuPeriod()),
                    container(
                            "container_spec_cpu_shares",
                            "CPU share of the container.",
                            MetricType.GAUGE,
                            s -> s.resources().getCpuShares()),
                    container(
                            "container_spec_memory_limit_bytes",
                            "Memory limit for the container.",
                            MetricType.GAUGE,
                            s -> s.resources().getMemoryLimitInBytes()),
                    container(
                            "container_spec_memory_swap_limit_bytes",
                            "Memory swap limit for the container.",
                            MetricType.GAUGE,
                            s -> s.resources().getMemorySwapLimitInBytes()));

    private static long cfsPeriods(Source s) {
        long period = s.resources().getCpuPeriod();
        if (s.resources().getCpuQuota() <= 0 || period <= 0) {
            return 0;
        }
        return s.ranSeconds() * 1_000_000L / period;
    }

    /**
     * The metrics the fake describes in ListMetricDescriptors: cAdvisor's names, the ones kubelet's
     * CRI stats path (PodAndContainerStatsFromCRI) turns into its {@code /metrics/cadvisor}, with
     * containerd's label keys ({@code id}, {@code name}, then {@code interface}, {@code device}, ...).
     */
    public static List<MetricDescriptor> descriptors() {
        List<MetricDescriptor> out = new java.util.ArrayList<>();
        for (Def d : DEFS) {
            out.add(
                    MetricDescriptor.newBuilder()
                            .setName(d.name())
                            .setHelp(d.help())
                            .addAllLabelKeys(BASE_LABELS)
                            .addAllLabelKeys(d.extraLabels())
                            .build());
        }
        return out;
    }

    /**
     * A pod's metrics from the fake's own accounting ({@link #podSandboxStats}): network counters for
     * the pod (label values the sandbox's id and name, {@code eth0}), everything else for each
     * container (its id and name first).
     */
    public PodSandboxMetrics podSandboxMetrics(SandboxRecord s, List<ContainerRecord> containers) {
        PodSandboxStats stats = podSandboxStats(s, containers);
        long now = state.now();
        PodSandboxMetrics.Builder b = PodSandboxMetrics.newBuilder().setPodSandboxId(s.id);
        ContainerStats none = ContainerStats.getDefaultInstance();
        Source podSource = new Source(now, null, none, stats);
        for (Def d : DEFS) {
            if (d.scope() == Scope.POD) {
                addSamples(
                        d,
                        podSource,
                        List.of(s.id, s.config.getMetadata().getName()),
                        now,
                        b::addMetrics);
            }
        }
        int i = 0;
        for (ContainerRecord c : containers) {
            ContainerStats cs = stats.getLinux().getContainers(i++);
            Source source = new Source(now, c, cs, stats);
            ContainerMetrics.Builder cm = ContainerMetrics.newBuilder().setContainerId(c.id);
            for (Def d : DEFS) {
                if (d.scope() == Scope.CONTAINER) {
                    addSamples(
                            d,
                            source,
                            List.of(c.id, c.config.getMetadata().getName()),
                            now,
                            cm::addMetrics);
                }
            }
            b.addContainerMetrics(cm);
        }
        return b.build();
    }

    private static void addSamples(
            Def d,
            Source source,
            List<String> base,
            long now,
            java.util.function.Consumer<Metric> sink) {
        for (Sample sample : d.values().apply(source)) {
            sink.accept(
                    Metric.newBuilder()
                            .setName(d.name())
                            .setTimestamp(now)
                            .setMetricType(d.type())
                            .addAllLabelValues(base)
                            .addAllLabelValues(sample.labels())
                            .setValue(u64(Math.max(0, sample.value())))
                            .build());
        }
    }

    private static long nanoCores(long seed) {
        return 5_000_000L + Math.floorMod(seed >>> 4, 45_000_000L);
    }

    private static long workingSet(ContainerRecord c, long seed) {
        long ws = 4 * MIB + Math.floorMod(seed >>> 12, 32 * MIB);
        long limit = c.resources == null ? 0 : c.resources.getMemoryLimitInBytes();
        return limit > 0 ? Math.min(ws, limit * 9 / 10) : ws;
    }

    private static long seed(String id) {
        return Long.parseUnsignedLong(id.substring(0, 15), 16);
    }

    static UInt64Value u64(long v) {
        return UInt64Value.newBuilder().setValue(v).build();
    }
}
