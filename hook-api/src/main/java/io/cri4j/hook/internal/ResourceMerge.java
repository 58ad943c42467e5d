package io.cri4j.hook.internal;

import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxMemory;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import java.util.ArrayList;
import java.util.List;

/**
 * The fields a {@link LinuxResources} sets, as NRI claims them ({@code Field} names, keyed for
 * hugepage limits and unified entries), and copying the set fields onto another resources
 * message. A field is set when its optional wrapper is present, or for cpuset strings when
 * non-empty, as in NRI's adaptation.
 */
public final class ResourceMerge {
    private ResourceMerge() {}

    /**
     * How the owners of device cgroup rules ({@code LinuxResources.devices}) are recorded: NRI has
     * no {@code Field} for them, so every hook adding rules is listed, comma-separated, as for OCI
     * hooks, and {@code OwningPlugins} does not carry them.
     */
    public static final String DEVICE_CGROUP_RULES = "DeviceCgroupRules";

    /** A claim on a field, with the key of a keyed field or empty. */
    public record Claim(String field, String key) {}

    /**
     * The claims setting {@code r} makes. Device cgroup rules are appended in hook order and never
     * conflict ({@link #DEVICE_CGROUP_RULES}).
     */
    public static List<Claim> claims(LinuxResources r) {
        List<Claim> out = new ArrayList<>();
        if (r.hasMemory()) {
            LinuxMemory m = r.getMemory();
            add(out, m.hasLimit(), "MemLimit");
            add(out, m.hasReservation(), "MemReservation");
            add(out, m.hasSwap(), "MemSwapLimit");
            add(out, m.hasKernel(), "MemKernelLimit");
            add(out, m.hasKernelTcp(), "MemTCPLimit");
            add(out, m.hasSwappiness(), "MemSwappiness");
            add(out, m.hasDisableOomKiller(), "MemDisableOomKiller");
            add(out, m.hasUseHierarchy(), "MemUseHierarchy");
        }
        if (r.hasCpu()) {
            LinuxCPU c = r.getCpu();
            add(out, c.hasShares(), "CPUShares");
            add(out, c.hasQuota(), "CPUQuota");
            add(out, c.hasPeriod(), "CPUPeriod");
            add(out, c.hasRealtimeRuntime(), "CPURealtimeRuntime");
            add(out, c.hasRealtimePeriod(), "CPURealtimePeriod");
            add(out, !c.getCpus().isEmpty(), "CPUSetCPUs");
            add(out, !c.getMems().isEmpty(), "CPUSetMems");
        }
        for (HugepageLimit h : r.getHugepageLimitsList()) {
            out.add(new Claim("HugepageLimits", h.getPageSize()));
        }
        r.getUnifiedMap().keySet().forEach(k -> out.add(new Claim("CgroupsUnified", k)));
        add(out, r.hasBlockioClass(), "BlockioClass");
        add(out, r.hasRdtClass(), "RdtClass");
        add(out, r.hasPids(), "PidsLimit");
        return out;
    }

    /** Copies the fields {@code src} sets onto {@code dst}. */
    public static void apply(LinuxResources src, LinuxResources.Builder dst) {
        if (src.hasMemory()) {
            LinuxMemory m = src.getMemory();
            LinuxMemory.Builder d = dst.getMemoryBuilder();
            if (m.hasLimit()) {
                d.setLimit(m.getLimit());
            }
            if (m.hasReservation()) {
                d.setReservation(m.getReservation());
            }
            if (m.hasSwap()) {
                d.setSwap(m.getSwap());
            }
            if (m.hasKernel()) {
                d.setKernel(m.getKernel());
            }
            if (m.hasKernelTcp()) {
                d.setKernelTcp(m.getKernelTcp());
            }
            if (m.hasSwappiness()) {
                d.setSwappiness(m.getSwappiness());
            }
            if (m.hasDisableOomKiller()) {
                d.setDisableOomKiller(m.getDisableOomKiller());
            }
            if (m.hasUseHierarchy()) {
                d.setUseHierarchy(m.getUseHierarchy());
            }
        }
        if (src.hasCpu()) {
            LinuxCPU c = src.getCpu();
            LinuxCPU.Builder d = dst.getCpuBuilder();
            if (c.hasShares()) {
                d.setShares(c.getShares());
            }
            if (c.hasQuota()) {
                d.setQuota(c.getQuota());
            }
            if (c.hasPeriod()) {
                d.setPeriod(c.getPeriod());
            }
            if (c.hasRealtimeRuntime()) {
                d.setRealtimeRuntime(c.getRealtimeRuntime());
            }
            if (c.hasRealtimePeriod()) {
                d.setRealtimePeriod(c.getRealtimePeriod());
            }
            if (!c.getCpus().isEmpty()) {
                d.setCpus(c.getCpus());
            }
            if (!c.getMems().isEmpty()) {
                d.setMems(c.getMems());
            }
        }
        for (HugepageLimit h : src.getHugepageLimitsList()) {
            Keys.replaceOrAdd(
                    dst.getHugepageLimitsCount(),
                    i -> dst.getHugepageLimits(i).getPageSize(),
                    h.getPageSize(),
                    i -> dst.setHugepageLimits(i, h),
                    () -> dst.addHugepageLimits(h));
        }
        dst.putAllUnified(src.getUnifiedMap());
        dst.addAllDevices(src.getDevicesList());
        if (src.hasBlockioClass()) {
            dst.setBlockioClass(src.getBlockioClass());
        }
        if (src.hasRdtClass()) {
            dst.setRdtClass(src.getRdtClass());
        }
        if (src.hasPids()) {
            dst.setPids(src.getPids());
        }
    }

    private static void add(List<Claim> out, boolean set, String field) {
        if (set) {
            out.add(new Claim(field, ""));
        }
    }
}
