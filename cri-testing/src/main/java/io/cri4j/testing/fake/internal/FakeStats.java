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
 * Plausible, deterministic resource figures: CPU time grows with running time (each container uses a stable
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
                                        .putAllAnnotations(c.annotations))
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

    /** The metrics the fake describes in ListMetricDescriptors, in cAdvisor's names. */
    public static List<MetricDescriptor> descriptors() {
        return List.of(
                MetricDescriptor.newBuilder()
                        .setName("container_cpu_usage_seconds_total")
                        .setHelp("Cumulative cpu time consumed in seconds.")
                        .addLabelKeys("container")
                        .build(),
                MetricDescriptor.newBuilder()
                        .setName("container_memory_working_set_bytes")
                        .setHelp("Current working set in bytes.")
                        .addLabelKeys("container")
                        .build(),
                MetricDescriptor.newBuilder()
                        .setName("container_network_receive_bytes_total")
                        .setHelp("Cumulative count of bytes received.")
                        .addLabelKeys("interface")
                        .build());
    }

    public PodSandboxMetrics podSandboxMetrics(SandboxRecord s, List<ContainerRecord> containers) {
        PodSandboxStats stats = podSandboxStats(s, containers);
        long now = state.now();
        PodSandboxMetrics.Builder b =
                PodSandboxMetrics.newBuilder()
                        .setPodSandboxId(s.id)
                        .addMetrics(
                                Metric.newBuilder()
                                        .setName("container_network_receive_bytes_total")
                                        .setTimestamp(now)
                                        .setMetricType(MetricType.COUNTER)
                                        .addLabelValues("eth0")
                                        .setValue(
                                                stats.getLinux()
                                                        .getNetwork()
                                                        .getDefaultInterface()
                                                        .getRxBytes()));
        for (ContainerStats cs : stats.getLinux().getContainersList()) {
            String name = cs.getAttributes().getMetadata().getName();
            b.addContainerMetrics(
                    ContainerMetrics.newBuilder()
                            .setContainerId(cs.getAttributes().getId())
                            .addMetrics(
                                    Metric.newBuilder()
                                            .setName("container_cpu_usage_seconds_total")
                                            .setTimestamp(now)
                                            .setMetricType(MetricType.COUNTER)
                                            .addLabelValues(name)
                                            .setValue(
                                                    u64(
                                                            cs.getCpu()
                                                                            .getUsageCoreNanoSeconds()
                                                                            .getValue()
                                                                    / 1_000_000_000L)))
                            .addMetrics(
                                    Metric.newBuilder()
                                            .setName("container_memory_working_set_bytes")
                                            .setTimestamp(now)
                                            .setMetricType(MetricType.GAUGE)
                                            .addLabelValues(name)
                                            .setValue(cs.getMemory().getWorkingSetBytes())));
        }
        return b.build();
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
