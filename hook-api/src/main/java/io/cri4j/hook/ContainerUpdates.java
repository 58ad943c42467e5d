package io.cri4j.hook;

import io.cri4j.hook.internal.Keys;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.OptionalBool;
import io.cri4j.hook.nri.v1alpha1.OptionalString;
import java.util.Objects;

/**
 * Builds an NRI {@link ContainerUpdate}: a change of an existing container's Linux resources
 * that a hook asks for ({@link HookResult#update}, {@link HookResult.Builder#addUpdate}, {@link
 * RuntimeHandle#updateContainers}). The setters mirror NRI's Go helpers on {@code
 * ContainerUpdate} and {@link Adjustments}' resource setters:
 *
 * <pre>{@code
 * ContainerUpdate u = ContainerUpdates.of(otherContainerId)
 *     .setLinuxCpuShares(512)
 *     .setLinuxMemoryLimit(512L << 20)
 *     .setIgnoreFailure()
 *     .build();
 * }</pre>
 *
 * <p>Not thread-safe; {@link #build()} may be called more than once.
 */
public final class ContainerUpdates {
    private final ContainerUpdate.Builder b;

    private ContainerUpdates(ContainerUpdate.Builder builder) {
        this.b = builder;
    }

    /** An update of the container {@code containerId} that changes nothing yet. */
    public static ContainerUpdates of(String containerId) {
        if (containerId == null || containerId.isEmpty()) {
            throw new IllegalArgumentException("container id must not be empty");
        }
        return new ContainerUpdates(ContainerUpdate.newBuilder().setContainerId(containerId));
    }

    /** Continues editing {@code update} (which is not changed). */
    public static ContainerUpdates from(ContainerUpdate update) {
        return new ContainerUpdates(update.toBuilder());
    }

    /** The update built so far. */
    public ContainerUpdate build() {
        return b.build();
    }

    /**
     * Marks the update as optional: if the runtime fails to apply it, the operation that asked
     * for it still succeeds.
     */
    public ContainerUpdates setIgnoreFailure() {
        b.setIgnoreFailure(true);
        return this;
    }

    /** Replaces all resources of the update with {@code resources}. */
    public ContainerUpdates setLinuxResources(LinuxResources resources) {
        b.getLinuxBuilder().setResources(Objects.requireNonNull(resources, "resources"));
        return this;
    }

    /** Sets the memory limit in bytes. */
    public ContainerUpdates setLinuxMemoryLimit(long bytes) {
        res().getMemoryBuilder().setLimit(Adjustments.i64(bytes));
        return this;
    }

    /** Sets the memory reservation (soft limit) in bytes. */
    public ContainerUpdates setLinuxMemoryReservation(long bytes) {
        res().getMemoryBuilder().setReservation(Adjustments.i64(bytes));
        return this;
    }

    /** Sets the memory + swap limit in bytes. */
    public ContainerUpdates setLinuxMemorySwap(long bytes) {
        res().getMemoryBuilder().setSwap(Adjustments.i64(bytes));
        return this;
    }

    /** Sets the kernel memory limit in bytes (cgroup v1). */
    public ContainerUpdates setLinuxMemoryKernel(long bytes) {
        res().getMemoryBuilder().setKernel(Adjustments.i64(bytes));
        return this;
    }

    /** Sets the kernel TCP buffer memory limit in bytes (cgroup v1). */
    public ContainerUpdates setLinuxMemoryKernelTcp(long bytes) {
        res().getMemoryBuilder().setKernelTcp(Adjustments.i64(bytes));
        return this;
    }

    /** Sets the memory swappiness (0..100). */
    public ContainerUpdates setLinuxMemorySwappiness(long swappiness) {
        res().getMemoryBuilder().setSwappiness(Adjustments.u64(swappiness));
        return this;
    }

    /** Disables the OOM killer for the container. */
    public ContainerUpdates setLinuxMemoryDisableOomKiller() {
        res().getMemoryBuilder().setDisableOomKiller(OptionalBool.newBuilder().setValue(true));
        return this;
    }

    /** Enables hierarchical memory accounting (cgroup v1). */
    public ContainerUpdates setLinuxMemoryUseHierarchy() {
        res().getMemoryBuilder().setUseHierarchy(OptionalBool.newBuilder().setValue(true));
        return this;
    }

    /** Sets the CPU shares (relative weight). */
    public ContainerUpdates setLinuxCpuShares(long shares) {
        res().getCpuBuilder().setShares(Adjustments.u64(shares));
        return this;
    }

    /** Sets the CFS quota in microseconds per period. */
    public ContainerUpdates setLinuxCpuQuota(long micros) {
        res().getCpuBuilder().setQuota(Adjustments.i64(micros));
        return this;
    }

    /** Sets the CFS period in microseconds. */
    public ContainerUpdates setLinuxCpuPeriod(long micros) {
        res().getCpuBuilder().setPeriod(Adjustments.u64(micros));
        return this;
    }

    /** Sets the realtime runtime in microseconds per period. */
    public ContainerUpdates setLinuxCpuRealtimeRuntime(long micros) {
        res().getCpuBuilder().setRealtimeRuntime(Adjustments.i64(micros));
        return this;
    }

    /** Sets the realtime period in microseconds. */
    public ContainerUpdates setLinuxCpuRealtimePeriod(long micros) {
        res().getCpuBuilder().setRealtimePeriod(Adjustments.u64(micros));
        return this;
    }

    /** Sets the CPUs the container may run on, e.g. {@code 0-1,4}. */
    public ContainerUpdates setLinuxCpuSetCpus(String cpus) {
        res().getCpuBuilder().setCpus(requireValue(cpus, "cpuset cpus"));
        return this;
    }

    /** Sets the memory nodes the container may use. */
    public ContainerUpdates setLinuxCpuSetMems(String mems) {
        res().getCpuBuilder().setMems(requireValue(mems, "cpuset mems"));
        return this;
    }

    /** Sets the maximum number of processes. */
    public ContainerUpdates setLinuxPidLimits(long limit) {
        res().getPidsBuilder().setLimit(limit);
        return this;
    }

    /** Sets the hugepage limit in bytes for {@code pageSize}, replacing an earlier one. */
    public ContainerUpdates addLinuxHugepageLimit(String pageSize, long limit) {
        requireValue(pageSize, "hugepage size");
        LinuxResources.Builder r = res();
        HugepageLimit l = HugepageLimit.newBuilder().setPageSize(pageSize).setLimit(limit).build();
        Keys.replaceOrAdd(
                r.getHugepageLimitsCount(),
                i -> r.getHugepageLimits(i).getPageSize(),
                pageSize,
                i -> r.setHugepageLimits(i, l),
                () -> r.addHugepageLimits(l));
        return this;
    }

    /** Sets the block I/O class. */
    public ContainerUpdates setLinuxBlockIoClass(String ioClass) {
        res().setBlockioClass(
                        OptionalString.newBuilder()
                                .setValue(Objects.requireNonNull(ioClass, "ioClass")));
        return this;
    }

    /** Sets the RDT class. */
    public ContainerUpdates setLinuxRdtClass(String rdtClass) {
        res().setRdtClass(
                        OptionalString.newBuilder()
                                .setValue(Objects.requireNonNull(rdtClass, "rdtClass")));
        return this;
    }

    /** Sets a cgroup v2 unified resource, e.g. {@code memory.high}. */
    public ContainerUpdates addLinuxUnified(String key, String value) {
        res().putUnified(
                        requireValue(key, "unified resource"),
                        Objects.requireNonNull(value, "value"));
        return this;
    }

    private LinuxResources.Builder res() {
        return b.getLinuxBuilder().getResourcesBuilder();
    }

    private static String requireValue(String v, String what) {
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException(what + " must not be empty");
        }
        return v;
    }
}
