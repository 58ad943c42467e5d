package io.cri4j.hook;

import io.cri4j.hook.nri.v1alpha1.CDIDevice;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.IOPrioClass;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxDeviceCgroup;
import io.cri4j.hook.nri.v1alpha1.LinuxIOPriority;
import io.cri4j.hook.nri.v1alpha1.LinuxNamespace;
import io.cri4j.hook.nri.v1alpha1.LinuxNetDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.LinuxScheduler;
import io.cri4j.hook.nri.v1alpha1.LinuxSeccomp;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.MpolFlag;
import io.cri4j.hook.nri.v1alpha1.MpolMode;
import io.cri4j.hook.nri.v1alpha1.OptionalBool;
import io.cri4j.hook.nri.v1alpha1.OptionalFileMode;
import io.cri4j.hook.nri.v1alpha1.OptionalInt;
import io.cri4j.hook.nri.v1alpha1.OptionalInt64;
import io.cri4j.hook.nri.v1alpha1.OptionalRepeatedString;
import io.cri4j.hook.nri.v1alpha1.OptionalString;
import io.cri4j.hook.nri.v1alpha1.OptionalUInt64;
import io.cri4j.hook.nri.v1alpha1.POSIXRlimit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Builds an NRI {@link ContainerAdjustment}: what a hook changes on a container being created
 * ({@link HookResult#adjust}). The methods read like NRI's Go helpers ({@code AddEnv},
 * {@code RemoveMount}, {@code SetLinuxCPUShares}, ...) and produce the same messages:
 *
 * <pre>{@code
 * return HookResult.adjust(Adjustments.create()
 *     .addEnv("TEAM", "storage")
 *     .addAnnotation("example.com/seen", "true")
 *     .setLinuxCpuSetCpus("0-1")
 *     .setLinuxMemoryLimit(256L << 20)
 *     .build());
 * }</pre>
 *
 * <p><b>Removals.</b> Every {@code remove...} method records NRI's removal marker: the key
 * (annotation name, env name, mount destination, device path, namespace type, sysctl name, net
 * device) prefixed with {@code "-"} ({@link #markForRemoval}). Touching a field another hook has
 * set is a conflict that fails the event, unless the hook removes it first: {@code
 * removeEnv("X").addEnv("X", "mine")} replaces another hook's {@code X}. Within one builder a
 * later call for the same key replaces the earlier one (adding an env var twice keeps the last
 * value; removing what this builder added drops the addition), so a single hook never conflicts
 * with itself.
 *
 * <p>Not thread-safe; {@link #build()} may be called more than once.
 */
public final class Adjustments {

    /** NRI's removal marker, prefixed to a key. */
    private static final String REMOVAL_MARKER = "-";

    private final ContainerAdjustment.Builder b;

    private Adjustments(ContainerAdjustment.Builder builder) {
        this.b = builder;
    }

    /** An empty adjustment. */
    public static Adjustments create() {
        return new Adjustments(ContainerAdjustment.newBuilder());
    }

    /** Continues editing {@code adjustment} (which is not changed). */
    public static Adjustments from(ContainerAdjustment adjustment) {
        return new Adjustments(adjustment.toBuilder());
    }

    /** {@code key} with NRI's removal marker: {@code "-" + key}. */
    public static String markForRemoval(String key) {
        return REMOVAL_MARKER + Objects.requireNonNull(key, "key");
    }

    /** True if {@code key} carries NRI's removal marker. */
    public static boolean isMarkedForRemoval(String key) {
        return key != null && key.startsWith(REMOVAL_MARKER);
    }

    /** {@code key} without NRI's removal marker (unchanged if it has none). */
    public static String clearRemovalMarker(String key) {
        return isMarkedForRemoval(key) ? key.substring(REMOVAL_MARKER.length()) : key;
    }

    /** The adjustment built so far. */
    public ContainerAdjustment build() {
        return b.build();
    }

    // ---------------------------------------------------------------- annotations, env, args

    /** Adds or overwrites the annotation {@code key=value}. */
    public Adjustments addAnnotation(String key, String value) {
        requireKey(key, "annotation");
        b.putAnnotations(key, Objects.requireNonNull(value, "value"));
        return this;
    }

    /** Removes the annotation {@code key} (and drops this builder's addition of it). */
    public Adjustments removeAnnotation(String key) {
        requireKey(key, "annotation");
        b.removeAnnotations(key);
        b.putAnnotations(markForRemoval(key), "");
        return this;
    }

    /** Adds or overwrites the environment variable {@code key=value}. */
    public Adjustments addEnv(String key, String value) {
        requireKey(key, "environment variable");
        KeyValue kv =
                KeyValue.newBuilder()
                        .setKey(key)
                        .setValue(Objects.requireNonNull(value, "value"))
                        .build();
        for (int i = 0; i < b.getEnvCount(); i++) {
            if (b.getEnv(i).getKey().equals(key)) {
                b.setEnv(i, kv);
                return this;
            }
        }
        b.addEnv(kv);
        return this;
    }

    /** Removes the environment variable {@code key} (and drops this builder's addition of it). */
    public Adjustments removeEnv(String key) {
        requireKey(key, "environment variable");
        String marked = markForRemoval(key);
        for (int i = b.getEnvCount() - 1; i >= 0; i--) {
            String k = b.getEnv(i).getKey();
            if (k.equals(key) || k.equals(marked)) {
                b.removeEnv(i);
            }
        }
        b.addEnv(KeyValue.newBuilder().setKey(marked));
        return this;
    }

    /**
     * Replaces the container's command line (OCI {@code process.args}). Conflicts with another
     * hook that sets the arguments; see {@link #updateArgs} for the form that does not.
     */
    public Adjustments setArgs(List<String> args) {
        requireArgs(args);
        b.clearArgs().addAllArgs(args);
        return this;
    }

    /** {@link #setArgs(List)} with varargs. */
    public Adjustments setArgs(String... args) {
        return setArgs(Arrays.asList(args));
    }

    /**
     * Replaces the container's command line even if another hook has set it (NRI's
     * {@code UpdateArgs}: the arguments are sent after an empty first element).
     */
    public Adjustments updateArgs(List<String> args) {
        requireArgs(args);
        b.clearArgs().addArgs("").addAllArgs(args);
        return this;
    }

    // ---------------------------------------------------------------- mounts, hooks, rlimits

    /** Adds a mount, replacing this builder's earlier mount at the same destination. */
    public Adjustments addMount(Mount mount) {
        requireKey(mount.getDestination(), "mount destination");
        for (int i = 0; i < b.getMountsCount(); i++) {
            if (b.getMounts(i).getDestination().equals(mount.getDestination())) {
                b.setMounts(i, mount);
                return this;
            }
        }
        b.addMounts(mount);
        return this;
    }

    /** Adds a mount of {@code source} ({@code type}, e.g. {@code bind}) at {@code destination}. */
    public Adjustments addMount(String destination, String type, String source, String... options) {
        return addMount(mount(destination, type, source, options));
    }

    /** Removes the mount at {@code destination} (and drops this builder's mount there). */
    public Adjustments removeMount(String destination) {
        requireKey(destination, "mount destination");
        String marked = markForRemoval(destination);
        for (int i = b.getMountsCount() - 1; i >= 0; i--) {
            String d = b.getMounts(i).getDestination();
            if (d.equals(destination) || d.equals(marked)) {
                b.removeMounts(i);
            }
        }
        b.addMounts(Mount.newBuilder().setDestination(marked));
        return this;
    }

    /** Adds OCI hooks (prestart, createRuntime, ... poststop) to the container. */
    public Adjustments addHooks(io.cri4j.hook.nri.v1alpha1.Hooks hooks) {
        io.cri4j.hook.nri.v1alpha1.Hooks.Builder h = b.getHooksBuilder();
        h.addAllPrestart(hooks.getPrestartList())
                .addAllCreateRuntime(hooks.getCreateRuntimeList())
                .addAllCreateContainer(hooks.getCreateContainerList())
                .addAllStartContainer(hooks.getStartContainerList())
                .addAllPoststart(hooks.getPoststartList())
                .addAllPoststop(hooks.getPoststopList());
        return this;
    }

    /**
     * Sets a POSIX resource limit, e.g. {@code addRlimit("RLIMIT_NOFILE", 4096, 1024)}; replaces
     * this builder's earlier limit of the same type.
     */
    public Adjustments addRlimit(String type, long hard, long soft) {
        requireKey(type, "rlimit type");
        POSIXRlimit l = POSIXRlimit.newBuilder().setType(type).setHard(hard).setSoft(soft).build();
        for (int i = 0; i < b.getRlimitsCount(); i++) {
            if (b.getRlimits(i).getType().equals(type)) {
                b.setRlimits(i, l);
                return this;
            }
        }
        b.addRlimits(l);
        return this;
    }

    // ---------------------------------------------------------------- devices, namespaces

    /** Adds a device node, replacing this builder's earlier device at the same path. */
    public Adjustments addDevice(LinuxDevice device) {
        requireKey(device.getPath(), "device path");
        LinuxContainerAdjustment.Builder l = b.getLinuxBuilder();
        for (int i = 0; i < l.getDevicesCount(); i++) {
            if (l.getDevices(i).getPath().equals(device.getPath())) {
                l.setDevices(i, device);
                return this;
            }
        }
        l.addDevices(device);
        return this;
    }

    /** Removes the device at {@code path} (and drops this builder's device there). */
    public Adjustments removeDevice(String path) {
        requireKey(path, "device path");
        String marked = markForRemoval(path);
        LinuxContainerAdjustment.Builder l = b.getLinuxBuilder();
        for (int i = l.getDevicesCount() - 1; i >= 0; i--) {
            String p = l.getDevices(i).getPath();
            if (p.equals(path) || p.equals(marked)) {
                l.removeDevices(i);
            }
        }
        l.addDevices(LinuxDevice.newBuilder().setPath(marked));
        return this;
    }

    /**
     * Injects a CDI device by its fully qualified name, e.g. {@code vendor.com/gpu=0}; resolved by
     * the runtime. CDI devices can be added, not removed (as in NRI).
     */
    public Adjustments addCdiDevice(String name) {
        requireKey(name, "CDI device name");
        for (CDIDevice d : b.getCDIDevicesList()) {
            if (d.getName().equals(name)) {
                return this;
            }
        }
        b.addCDIDevices(CDIDevice.newBuilder().setName(name));
        return this;
    }

    /**
     * Adds or replaces the Linux namespace of {@code type} ({@code network}, {@code ipc}, ...);
     * {@code path} joins an existing one, empty creates a new one.
     */
    public Adjustments addOrReplaceNamespace(String type, String path) {
        requireKey(type, "namespace type");
        LinuxNamespace ns =
                LinuxNamespace.newBuilder()
                        .setType(type)
                        .setPath(Objects.requireNonNull(path, "path"))
                        .build();
        LinuxContainerAdjustment.Builder l = b.getLinuxBuilder();
        for (int i = 0; i < l.getNamespacesCount(); i++) {
            if (l.getNamespaces(i).getType().equals(type)) {
                l.setNamespaces(i, ns);
                return this;
            }
        }
        l.addNamespaces(ns);
        return this;
    }

    /** Removes the Linux namespace of {@code type} (the container shares the runtime's). */
    public Adjustments removeNamespace(String type) {
        requireKey(type, "namespace type");
        String marked = markForRemoval(type);
        LinuxContainerAdjustment.Builder l = b.getLinuxBuilder();
        for (int i = l.getNamespacesCount() - 1; i >= 0; i--) {
            String t = l.getNamespaces(i).getType();
            if (t.equals(type) || t.equals(marked)) {
                l.removeNamespaces(i);
            }
        }
        l.addNamespaces(LinuxNamespace.newBuilder().setType(marked));
        return this;
    }

    /** Sets the namespaced sysctl {@code key=value}. */
    public Adjustments addLinuxSysctl(String key, String value) {
        requireKey(key, "sysctl");
        b.getLinuxBuilder().putSysctl(key, Objects.requireNonNull(value, "value"));
        return this;
    }

    /** Removes the sysctl {@code key}. */
    public Adjustments removeLinuxSysctl(String key) {
        requireKey(key, "sysctl");
        b.getLinuxBuilder().removeSysctl(key).putSysctl(markForRemoval(key), "");
        return this;
    }

    /** Moves the host network interface {@code hostInterface} into the container as {@code name}. */
    public Adjustments addLinuxNetDevice(String hostInterface, String name) {
        requireKey(hostInterface, "host network interface");
        b.getLinuxBuilder()
                .putNetDevices(
                        hostInterface,
                        LinuxNetDevice.newBuilder()
                                .setName(Objects.requireNonNull(name, "name"))
                                .build());
        return this;
    }

    /** Removes the network device moved in from {@code hostInterface}. */
    public Adjustments removeLinuxNetDevice(String hostInterface) {
        requireKey(hostInterface, "host network interface");
        b.getLinuxBuilder()
                .removeNetDevices(hostInterface)
                .putNetDevices(markForRemoval(hostInterface), LinuxNetDevice.getDefaultInstance());
        return this;
    }

    // ---------------------------------------------------------------- Linux process settings

    /** Sets the cgroups path of the container. */
    public Adjustments setLinuxCgroupsPath(String path) {
        requireKey(path, "cgroups path");
        b.getLinuxBuilder().setCgroupsPath(path);
        return this;
    }

    /** Sets the OOM killer score adjustment of the container's processes (-1000..1000). */
    public Adjustments setLinuxOomScoreAdj(int value) {
        if (value < -1000 || value > 1000) {
            throw new IllegalArgumentException("oom_score_adj must be -1000..1000, got " + value);
        }
        b.getLinuxBuilder().setOomScoreAdj(OptionalInt.newBuilder().setValue(value));
        return this;
    }

    /** Sets the I/O priority (class and level 0..7) of the container's processes. */
    public Adjustments setLinuxIoPriority(IOPrioClass ioClass, int priority) {
        b.getLinuxBuilder()
                .setIoPriority(
                        LinuxIOPriority.newBuilder()
                                .setClass_(Objects.requireNonNull(ioClass, "ioClass"))
                                .setPriority(priority));
        return this;
    }

    /** Replaces the container's seccomp policy. */
    public Adjustments setLinuxSeccompPolicy(LinuxSeccomp policy) {
        b.getLinuxBuilder().setSeccompPolicy(Objects.requireNonNull(policy, "policy"));
        return this;
    }

    /** Sets the scheduling policy and attributes of the container's processes. */
    public Adjustments setLinuxScheduler(LinuxScheduler scheduler) {
        b.getLinuxBuilder().setScheduler(Objects.requireNonNull(scheduler, "scheduler"));
        return this;
    }

    /** Sets the NUMA memory policy of the container's processes. */
    public Adjustments setLinuxMemoryPolicy(MpolMode mode, String nodes, MpolFlag... flags) {
        b.getLinuxBuilder()
                .getMemoryPolicyBuilder()
                .setMode(Objects.requireNonNull(mode, "mode"))
                .setNodes(Objects.requireNonNull(nodes, "nodes"))
                .clearFlags()
                .addAllFlags(Arrays.asList(flags));
        return this;
    }

    /** Assigns the container to the RDT class of service {@code closId}. */
    public Adjustments setLinuxRdtClosId(String closId) {
        b.getLinuxBuilder()
                .getRdtBuilder()
                .setClosId(
                        OptionalString.newBuilder()
                                .setValue(Objects.requireNonNull(closId, "closId")));
        return this;
    }

    /** Sets the RDT schemata lines of the container. */
    public Adjustments setLinuxRdtSchemata(List<String> schemata) {
        b.getLinuxBuilder()
                .getRdtBuilder()
                .setSchemata(OptionalRepeatedString.newBuilder().addAllValue(schemata));
        return this;
    }

    /** Enables or disables RDT monitoring of the container. */
    public Adjustments setLinuxRdtEnableMonitoring(boolean enable) {
        b.getLinuxBuilder()
                .getRdtBuilder()
                .setEnableMonitoring(OptionalBool.newBuilder().setValue(enable));
        return this;
    }

    /** Removes the container's RDT settings (a later set in this builder wins over it). */
    public Adjustments removeLinuxRdt() {
        b.getLinuxBuilder().getRdtBuilder().setRemove(true);
        return this;
    }

    // ---------------------------------------------------------------- Linux resources

    /** Sets the memory limit in bytes. */
    public Adjustments setLinuxMemoryLimit(long bytes) {
        res().getMemoryBuilder().setLimit(i64(bytes));
        return this;
    }

    /** Sets the memory reservation (soft limit) in bytes. */
    public Adjustments setLinuxMemoryReservation(long bytes) {
        res().getMemoryBuilder().setReservation(i64(bytes));
        return this;
    }

    /** Sets the memory + swap limit in bytes. */
    public Adjustments setLinuxMemorySwap(long bytes) {
        res().getMemoryBuilder().setSwap(i64(bytes));
        return this;
    }

    /** Sets the kernel memory limit in bytes (cgroup v1). */
    public Adjustments setLinuxMemoryKernel(long bytes) {
        res().getMemoryBuilder().setKernel(i64(bytes));
        return this;
    }

    /** Sets the kernel TCP buffer memory limit in bytes (cgroup v1). */
    public Adjustments setLinuxMemoryKernelTcp(long bytes) {
        res().getMemoryBuilder().setKernelTcp(i64(bytes));
        return this;
    }

    /** Sets the memory swappiness (0..100). */
    public Adjustments setLinuxMemorySwappiness(long swappiness) {
        res().getMemoryBuilder().setSwappiness(u64(swappiness));
        return this;
    }

    /** Disables the OOM killer for the container. */
    public Adjustments setLinuxMemoryDisableOomKiller() {
        res().getMemoryBuilder().setDisableOomKiller(OptionalBool.newBuilder().setValue(true));
        return this;
    }

    /** Enables hierarchical memory accounting (cgroup v1). */
    public Adjustments setLinuxMemoryUseHierarchy() {
        res().getMemoryBuilder().setUseHierarchy(OptionalBool.newBuilder().setValue(true));
        return this;
    }

    /** Sets the CPU shares (relative weight). */
    public Adjustments setLinuxCpuShares(long shares) {
        res().getCpuBuilder().setShares(u64(shares));
        return this;
    }

    /** Sets the CFS quota in microseconds per period. */
    public Adjustments setLinuxCpuQuota(long micros) {
        res().getCpuBuilder().setQuota(i64(micros));
        return this;
    }

    /** Sets the CFS period in microseconds. */
    public Adjustments setLinuxCpuPeriod(long micros) {
        res().getCpuBuilder().setPeriod(u64(micros));
        return this;
    }

    /** Sets the realtime runtime in microseconds per period. */
    public Adjustments setLinuxCpuRealtimeRuntime(long micros) {
        res().getCpuBuilder().setRealtimeRuntime(i64(micros));
        return this;
    }

    /** Sets the realtime period in microseconds. */
    public Adjustments setLinuxCpuRealtimePeriod(long micros) {
        res().getCpuBuilder().setRealtimePeriod(u64(micros));
        return this;
    }

    /** Sets the CPUs the container may run on, e.g. {@code 0-1,4}. */
    public Adjustments setLinuxCpuSetCpus(String cpus) {
        requireKey(cpus, "cpuset cpus");
        res().getCpuBuilder().setCpus(cpus);
        return this;
    }

    /** Sets the memory nodes the container may use, e.g. {@code 0}. */
    public Adjustments setLinuxCpuSetMems(String mems) {
        requireKey(mems, "cpuset mems");
        res().getCpuBuilder().setMems(mems);
        return this;
    }

    /** Sets the maximum number of processes. */
    public Adjustments setLinuxPidLimits(long limit) {
        res().getPidsBuilder().setLimit(limit);
        return this;
    }

    /**
     * Sets the hugepage limit in bytes for {@code pageSize} (e.g. {@code 2MB}, {@code 1GB});
     * replaces this builder's earlier limit of that size.
     */
    public Adjustments addLinuxHugepageLimit(String pageSize, long limit) {
        requireKey(pageSize, "hugepage size");
        LinuxResources.Builder r = res();
        HugepageLimit l = HugepageLimit.newBuilder().setPageSize(pageSize).setLimit(limit).build();
        for (int i = 0; i < r.getHugepageLimitsCount(); i++) {
            if (r.getHugepageLimits(i).getPageSize().equals(pageSize)) {
                r.setHugepageLimits(i, l);
                return this;
            }
        }
        r.addHugepageLimits(l);
        return this;
    }

    /**
     * Appends a device cgroup rule ({@code linux.resources.devices}, OCI's {@code
     * LinuxDeviceCgroup}): allows or denies {@code access} to devices of {@code type} with {@code
     * major}:{@code minor}.
     *
     * <p>Rules are an ordered list, the later rule winning where two match, as in the OCI spec:
     * the rules of every hook are appended in hook order, after the container's own, and never
     * conflict (NRI has no field ownership for them, as for OCI hooks). A CRI host cannot carry
     * them and reports them ({@link io.cri4j.hook.host.CriAdjuster}); an NRI runtime gets them in
     * the adjustment.
     *
     * @param allow true to allow, false to deny
     * @param type {@code a} (all), {@code c} (character) or {@code b} (block)
     * @param major the major number, or null for all ({@code *})
     * @param minor the minor number, or null for all ({@code *})
     * @param access a non-empty combination of {@code r} (read), {@code w} (write), {@code m}
     *     (mknod)
     */
    public Adjustments addLinuxDeviceCgroupRule(
            boolean allow, String type, Long major, Long minor, String access) {
        res().addDevices(deviceCgroupRule(allow, type, major, minor, access));
        return this;
    }

    /** Appends a device cgroup rule message; see {@link #addLinuxDeviceCgroupRule}. */
    public Adjustments addLinuxDeviceCgroupRule(LinuxDeviceCgroup rule) {
        res().addDevices(
                        deviceCgroupRule(
                                rule.getAllow(),
                                rule.getType(),
                                rule.hasMajor() ? rule.getMajor().getValue() : null,
                                rule.hasMinor() ? rule.getMinor().getValue() : null,
                                rule.getAccess()));
        return this;
    }

    /** A device cgroup rule message, checked; see {@link #addLinuxDeviceCgroupRule}. */
    public static LinuxDeviceCgroup deviceCgroupRule(
            boolean allow, String type, Long major, Long minor, String access) {
        if (!"a".equals(type) && !"c".equals(type) && !"b".equals(type)) {
            throw new IllegalArgumentException(
                    "device cgroup rule type must be a, c or b, got \"" + type + "\"");
        }
        if (access == null
                || access.isEmpty()
                || !access.chars().allMatch(c -> c == 'r' || c == 'w' || c == 'm')
                || access.chars().distinct().count() != access.length()) {
            throw new IllegalArgumentException(
                    "device cgroup rule access must combine r, w and m, got \"" + access + "\"");
        }
        if ((major != null && major < 0) || (minor != null && minor < 0)) {
            throw new IllegalArgumentException(
                    "device numbers must not be negative (null means all), got "
                            + major
                            + ":"
                            + minor);
        }
        LinuxDeviceCgroup.Builder r =
                LinuxDeviceCgroup.newBuilder().setAllow(allow).setType(type).setAccess(access);
        if (major != null) {
            r.setMajor(i64(major));
        }
        if (minor != null) {
            r.setMinor(i64(minor));
        }
        return r.build();
    }

    /** Sets the block I/O class (of the runtime's blockio configuration). */
    public Adjustments setLinuxBlockIoClass(String ioClass) {
        res().setBlockioClass(
                        OptionalString.newBuilder()
                                .setValue(Objects.requireNonNull(ioClass, "ioClass")));
        return this;
    }

    /** Sets the RDT class (of the runtime's RDT configuration). */
    public Adjustments setLinuxRdtClass(String rdtClass) {
        res().setRdtClass(
                        OptionalString.newBuilder()
                                .setValue(Objects.requireNonNull(rdtClass, "rdtClass")));
        return this;
    }

    /** Sets a cgroup v2 unified resource, e.g. {@code memory.high}. */
    public Adjustments addLinuxUnified(String key, String value) {
        requireKey(key, "unified resource");
        res().putUnified(key, Objects.requireNonNull(value, "value"));
        return this;
    }

    // ---------------------------------------------------------------- helpers

    /** A mount message, as {@link #addMount(String, String, String, String...)} adds it. */
    public static Mount mount(String destination, String type, String source, String... options) {
        requireKey(destination, "mount destination");
        return Mount.newBuilder()
                .setDestination(destination)
                .setType(Objects.requireNonNull(type, "type"))
                .setSource(Objects.requireNonNull(source, "source"))
                .addAllOptions(Arrays.asList(options))
                .build();
    }

    /**
     * A device node message: {@code type} is {@code c} (character), {@code b} (block) or
     * {@code p} (FIFO), as OCI and NRI spell it.
     */
    public static LinuxDevice device(String path, String type, long major, long minor) {
        requireKey(path, "device path");
        if (!type.equals("c") && !type.equals("b") && !type.equals("u") && !type.equals("p")) {
            throw new IllegalArgumentException(
                    "device type must be c, b, u or p, got \"" + type + "\"");
        }
        return LinuxDevice.newBuilder()
                .setPath(path)
                .setType(type)
                .setMajor(major)
                .setMinor(minor)
                .build();
    }

    /** {@link #device} with a file mode (e.g. {@code 0666}). */
    public static LinuxDevice device(
            String path, String type, long major, long minor, int fileMode) {
        return device(path, type, major, minor).toBuilder()
                .setFileMode(OptionalFileMode.newBuilder().setValue(fileMode))
                .build();
    }

    private LinuxResources.Builder res() {
        return b.getLinuxBuilder().getResourcesBuilder();
    }

    static OptionalInt64 i64(long v) {
        return OptionalInt64.newBuilder().setValue(v).build();
    }

    static OptionalUInt64 u64(long v) {
        return OptionalUInt64.newBuilder().setValue(v).build();
    }

    private static void requireKey(String key, String what) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException(what + " must not be empty");
        }
        if (isMarkedForRemoval(key)) {
            throw new IllegalArgumentException(
                    what
                            + " must not start with \"-\" (NRI's removal"
                            + " marker; use the remove method): "
                            + key);
        }
    }

    private static void requireArgs(List<String> args) {
        List<String> copy = new ArrayList<>(args);
        if (copy.isEmpty() || copy.get(0) == null || copy.get(0).isEmpty()) {
            throw new IllegalArgumentException(
                    "args must start with a non-empty program, got " + args);
        }
    }
}
