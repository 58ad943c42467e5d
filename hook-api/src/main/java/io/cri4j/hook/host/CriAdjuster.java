package io.cri4j.hook.host;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.MountPropagation;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.ContainerCreation;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.host.DeviceNodes.DeviceNode;
import io.cri4j.hook.internal.Keys;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.FieldOwners;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.KeyValueOrBuilder;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxMemory;
import io.cri4j.hook.nri.v1alpha1.LinuxNamespace;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.OwningPlugins;
import io.cri4j.hook.nri.v1alpha1.POSIXRlimit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies hooks' answers to CRI requests, for hosts that see CRI (the CRI proxy, the fake
 * runtime): a merged {@link ContainerAdjustment} to a {@code ContainerConfig}, a {@link
 * PodSandboxAdjustment} to a {@code RunPodSandboxRequest}, an NRI {@link ContainerUpdate} to an
 * {@code UpdateContainerResourcesRequest}.
 *
 * <p>What CRI carries is applied: annotations, env, command line ({@code args} become CRI's
 * {@code command}, CRI's {@code args} are cleared), bind mounts (options {@code ro}, {@code rro},
 * propagation and SELinux relabelling map to CRI's fields; other options go to {@code
 * mount_options}), devices (the host node of the NRI device's type and major/minor becomes the
 * CRI device's host path, see {@link DeviceNodes}), CDI devices, CPU shares, quota, period and
 * cpusets, memory and swap limits, hugepage limits, unified cgroup v2 entries and {@code
 * oom_score_adj}. Removals (NRI's {@code "-"} marker) apply first, then additions.
 *
 * <p>What CRI cannot carry is never dropped silently: it is listed in {@link
 * Adjusted#unsupported()} with the hook that asked for it (OCI hooks, rlimits, the container's
 * cgroups path, I/O priority, seccomp policy, namespaces, sysctls, net devices, scheduler, RDT,
 * memory policy, memory reservation/kernel/TCP/swappiness/OOM-killer/hierarchy, realtime CPU,
 * block I/O and RDT classes, pids limit, device cgroup rules, non-bind mounts, devices without
 * a host node); {@link #enforce} fails the call or logs it, per the hook's failure policy.
 * Thread-safe.
 */
public final class CriAdjuster {
    private static final Logger LOG = LoggerFactory.getLogger(CriAdjuster.class);

    private final DeviceNodes devices;
    private final RuntimeFeatures features;

    private CriAdjuster(DeviceNodes devices, RuntimeFeatures features) {
        this.devices = Objects.requireNonNull(devices, "devices");
        this.features = Objects.requireNonNull(features, "features");
    }

    /** An adjuster resolving devices in the host's {@code /dev}. */
    public static CriAdjuster create() {
        return new CriAdjuster(DeviceNodes.system(), RuntimeFeatures.ALL);
    }

    /** An adjuster resolving devices with {@code devices}. */
    public static CriAdjuster create(DeviceNodes devices) {
        return new CriAdjuster(devices, RuntimeFeatures.ALL);
    }

    /**
     * An adjuster resolving devices with {@code devices} for a runtime that honours {@code
     * features}: the fields it would drop are reported like those CRI cannot carry.
     */
    public static CriAdjuster create(DeviceNodes devices, RuntimeFeatures features) {
        return new CriAdjuster(devices, features);
    }

    // ---------------------------------------------------------------- containers

    /** Applies a {@link io.cri4j.hook.HookChain}'s merged {@code CreateContainer} answer. */
    public Adjusted<ContainerConfig> apply(ContainerConfig config, ContainerCreation creation) {
        return apply(
                config,
                creation.result().adjustment(),
                new Owner() {
                    @Override
                    String simple(Field f) {
                        return Adjustments.clearRemovalMarker(creation.owner(f).orElse(""));
                    }

                    @Override
                    String compound(Field f, String key) {
                        return Adjustments.clearRemovalMarker(creation.owner(f, key).orElse(""));
                    }

                    @Override
                    List<String> deviceCgroupRules() {
                        return creation.deviceCgroupRuleOwners();
                    }
                });
    }

    /**
     * Applies a merged adjustment; {@code owners} (NRI's, by container id) names the hook behind
     * each unsupported field (may be empty).
     */
    public Adjusted<ContainerConfig> apply(
            ContainerConfig config,
            ContainerAdjustment a,
            OwningPlugins owners,
            String containerId) {
        return apply(
                config,
                a,
                Owner.of(
                        owners.getOwnersMap()
                                .getOrDefault(containerId, FieldOwners.getDefaultInstance())));
    }

    private Adjusted<ContainerConfig> apply(
            ContainerConfig config, ContainerAdjustment a, Owner owner) {
        if (a.equals(ContainerAdjustment.getDefaultInstance())) {
            return new Adjusted<>(config, List.of());
        }
        List<UnsupportedAdjustment> out = new ArrayList<>();
        ContainerConfig.Builder b = config.toBuilder();

        Keys.applyMarked(a.getAnnotationsMap(), b::removeAnnotations, b::putAnnotations);

        applyEnv(b, a.getEnvList());

        if (a.getArgsCount() > 0) {
            b.clearCommand().addAllCommand(a.getArgsList()).clearArgs();
        }

        for (Mount m : a.getMountsList()) {
            if (Adjustments.isMarkedForRemoval(m.getDestination())) {
                removeMount(b, Adjustments.clearRemovalMarker(m.getDestination()));
            }
        }
        for (Mount m : a.getMountsList()) {
            if (!Adjustments.isMarkedForRemoval(m.getDestination())) {
                applyMount(b, m, owner, out);
            }
        }

        for (io.cri4j.hook.nri.v1alpha1.CDIDevice d : a.getCDIDevicesList()) {
            if (!features.cdiDevices()) {
                out.add(
                        new UnsupportedAdjustment(
                                owner.compound(Field.CdiDevices, d.getName()),
                                "CDIDevices " + d.getName(),
                                features.cdiReason()));
            } else if (b.getCDIDevicesList().stream()
                    .noneMatch(x -> x.getName().equals(d.getName()))) {
                b.addCDIDevices(io.cri4j.cri.v1.CDIDevice.newBuilder().setName(d.getName()));
            }
        }

        if (!a.getHooks().equals(io.cri4j.hook.nri.v1alpha1.Hooks.getDefaultInstance())) {
            for (String hook : owner.simple(Field.OciHooks).split(",")) {
                out.add(new UnsupportedAdjustment(hook, "OciHooks", "CRI has no OCI hooks"));
            }
        }
        for (POSIXRlimit r : a.getRlimitsList()) {
            out.add(
                    new UnsupportedAdjustment(
                            owner.compound(Field.Rlimits, r.getType()),
                            "Rlimits " + r.getType(),
                            "CRI has no rlimits"));
        }

        if (a.hasLinux()) {
            applyLinux(b, a.getLinux(), owner, out);
        }
        return new Adjusted<>(b.build(), out);
    }

    private static void applyEnv(ContainerConfig.Builder b, List<? extends KeyValueOrBuilder> env) {
        for (KeyValueOrBuilder kv : env) {
            if (Adjustments.isMarkedForRemoval(kv.getKey())) {
                String key = Adjustments.clearRemovalMarker(kv.getKey());
                for (int i = b.getEnvsCount() - 1; i >= 0; i--) {
                    if (b.getEnvs(i).getKey().equals(key)) {
                        b.removeEnvs(i);
                    }
                }
            }
        }
        for (KeyValueOrBuilder kv : env) {
            if (Adjustments.isMarkedForRemoval(kv.getKey())) {
                continue;
            }
            KeyValue v =
                    KeyValue.newBuilder()
                            .setKey(kv.getKey())
                            .setValue(ByteString.copyFromUtf8(kv.getValue()))
                            .build();
            boolean replaced = false;
            for (int i = 0; i < b.getEnvsCount(); i++) {
                if (b.getEnvs(i).getKey().equals(kv.getKey())) {
                    if (replaced) {
                        b.removeEnvs(i--);
                    } else {
                        b.setEnvs(i, v);
                        replaced = true;
                    }
                }
            }
            if (!replaced) {
                b.addEnvs(v);
            }
        }
    }

    private static void removeMount(ContainerConfig.Builder b, String containerPath) {
        for (int i = b.getMountsCount() - 1; i >= 0; i--) {
            if (b.getMounts(i).getContainerPath().equals(containerPath)) {
                b.removeMounts(i);
            }
        }
    }

    private static void applyMount(
            ContainerConfig.Builder b, Mount m, Owner owner, List<UnsupportedAdjustment> out) {
        String field = "Mounts " + m.getDestination();
        String hook = owner.compound(Field.Mounts, m.getDestination());
        boolean bind =
                m.getType().equals("bind")
                        || m.getOptionsList().contains("bind")
                        || m.getOptionsList().contains("rbind");
        if (!bind || (!m.getType().isEmpty() && !m.getType().equals("bind"))) {
            out.add(
                    new UnsupportedAdjustment(
                            hook,
                            field,
                            "CRI mounts are bind mounts, not type \"" + m.getType() + "\""));
            return;
        }
        if (m.getSource().isEmpty()) {
            out.add(new UnsupportedAdjustment(hook, field, "a bind mount needs a source"));
            return;
        }
        io.cri4j.cri.v1.Mount.Builder c =
                io.cri4j.cri.v1.Mount.newBuilder()
                        .setContainerPath(m.getDestination())
                        .setHostPath(m.getSource());
        for (String o : m.getOptionsList()) {
            switch (o) {
                case "bind", "rbind", "rw" -> {}
                case "ro" -> c.setReadonly(true);
                case "rro" -> c.setReadonly(true).setRecursiveReadOnly(true);
                case "private", "rprivate" ->
                        c.setPropagation(MountPropagation.PROPAGATION_PRIVATE);
                case "slave", "rslave" ->
                        c.setPropagation(MountPropagation.PROPAGATION_HOST_TO_CONTAINER);
                case "shared", "rshared" ->
                        c.setPropagation(MountPropagation.PROPAGATION_BIDIRECTIONAL);
                case "z", "Z" -> c.setSelinuxRelabel(true);
                default -> c.addMountOptions(o);
            }
        }
        removeMount(b, m.getDestination());
        b.addMounts(c);
    }

    private void applyLinux(
            ContainerConfig.Builder b,
            LinuxContainerAdjustment l,
            Owner owner,
            List<UnsupportedAdjustment> out) {
        for (LinuxDevice d : l.getDevicesList()) {
            if (Adjustments.isMarkedForRemoval(d.getPath())) {
                removeDevice(b, Adjustments.clearRemovalMarker(d.getPath()));
            }
        }
        for (LinuxDevice d : l.getDevicesList()) {
            if (!Adjustments.isMarkedForRemoval(d.getPath())) {
                applyDevice(b, d, owner, out);
            }
        }
        if (l.hasResources() || l.hasOomScoreAdj()) {
            LinuxContainerResources.Builder r = b.getLinuxBuilder().getResourcesBuilder();
            if (l.hasResources()) {
                resources(r, l.getResources(), owner::simple, owner::compound, features, out);
                deviceCgroupRules(l.getResources(), owner.deviceCgroupRules(), out);
            }
            if (l.hasOomScoreAdj()) {
                r.setOomScoreAdj(l.getOomScoreAdj().getValue());
            }
        }
        unsupported(
                !l.getCgroupsPath().isEmpty(),
                Field.CgroupsPath,
                "CRI has no container cgroups path (the pod's cgroup parent can be adjusted)",
                owner::simple,
                out);
        unsupported(
                l.hasIoPriority(), Field.IoPriority, "CRI has no I/O priority", owner::simple, out);
        unsupported(
                l.hasSeccompPolicy(),
                Field.SeccompPolicy,
                "CRI has no seccomp policy, only profiles",
                owner::simple,
                out);
        unsupported(
                l.getNamespacesList().stream().map(LinuxNamespace::getType).toList(),
                Field.Namespace,
                "CRI has no per-container namespace paths",
                owner,
                out);
        unsupported(
                l.getSysctlMap().keySet(),
                Field.Sysctl,
                "CRI has no container sysctls",
                owner,
                out);
        unsupported(
                l.getNetDevicesMap().keySet(),
                Field.LinuxNetDevices,
                "CRI has no network devices",
                owner,
                out);
        unsupported(
                l.hasScheduler(),
                Field.LinuxSched,
                "CRI has no scheduler settings",
                owner::simple,
                out);
        if (l.hasRdt()) {
            String hook = owner.simple(Field.RdtClosID);
            if (hook.isEmpty()) {
                hook = owner.simple(Field.RdtSchemata);
            }
            if (hook.isEmpty()) {
                hook = owner.simple(Field.RdtEnableMonitoring);
            }
            out.add(new UnsupportedAdjustment(hook, "Rdt", "CRI has no RDT settings"));
        }
        unsupported(
                l.hasMemoryPolicy(),
                Field.MemoryPolicy,
                "CRI has no memory policy",
                owner::simple,
                out);
    }

    private static void removeDevice(ContainerConfig.Builder b, String containerPath) {
        for (int i = b.getDevicesCount() - 1; i >= 0; i--) {
            if (b.getDevices(i).getContainerPath().equals(containerPath)) {
                b.removeDevices(i);
            }
        }
    }

    private void applyDevice(
            ContainerConfig.Builder b,
            LinuxDevice d,
            Owner owner,
            List<UnsupportedAdjustment> out) {
        String hook = owner.compound(Field.Devices, d.getPath());
        String field = "Devices " + d.getPath();
        String number = d.getType() + " " + d.getMajor() + ":" + d.getMinor();
        Optional<DeviceNode> node = devices.find(d.getType(), d.getMajor(), d.getMinor());
        if (node.isEmpty()) {
            out.add(new UnsupportedAdjustment(hook, field, "no host device node " + number));
            return;
        }
        DeviceNode n = node.get();
        List<String> differs = new ArrayList<>();
        if (d.hasFileMode() && (d.getFileMode().getValue() & 07777) != n.fileMode()) {
            differs.add("file mode " + Integer.toOctalString(d.getFileMode().getValue()));
        }
        if (d.hasUid() && d.getUid().getValue() != n.uid()) {
            differs.add("uid " + d.getUid().getValue());
        }
        if (d.hasGid() && d.getGid().getValue() != n.gid()) {
            differs.add("gid " + d.getGid().getValue());
        }
        if (!differs.isEmpty()) {
            out.add(
                    new UnsupportedAdjustment(
                            hook,
                            field,
                            "CRI devices take the host node's mode and"
                                    + " owner ("
                                    + n.path()
                                    + "), not "
                                    + String.join(", ", differs)));
        }
        removeDevice(b, d.getPath());
        b.addDevices(
                io.cri4j.cri.v1.Device.newBuilder()
                        .setContainerPath(d.getPath())
                        .setHostPath(n.path().toString())
                        .setPermissions("rwm"));
    }

    // ---------------------------------------------------------------- resources

    /**
     * CRI resources: {@code base} with the fields {@code r} sets. What CRI has no field for is
     * listed in the result, without a hook.
     */
    public Adjusted<LinuxContainerResources> resources(
            LinuxContainerResources base, LinuxResources r) {
        List<UnsupportedAdjustment> out = new ArrayList<>();
        LinuxContainerResources.Builder b = base.toBuilder();
        resources(b, r, f -> "", (f, k) -> "", features, out);
        deviceCgroupRules(r, List.of(), out);
        return new Adjusted<>(b.build(), out);
    }

    private static void resources(
            LinuxContainerResources.Builder b,
            LinuxResources r,
            Function<Field, String> simple,
            java.util.function.BiFunction<Field, String, String> keyed,
            RuntimeFeatures features,
            List<UnsupportedAdjustment> out) {
        if (r.hasCpu()) {
            LinuxCPU c = r.getCpu();
            if (c.hasShares()) {
                b.setCpuShares(c.getShares().getValue());
            }
            if (c.hasQuota()) {
                b.setCpuQuota(c.getQuota().getValue());
            }
            if (c.hasPeriod()) {
                b.setCpuPeriod(c.getPeriod().getValue());
            }
            if (!c.getCpus().isEmpty()) {
                b.setCpusetCpus(c.getCpus());
            }
            if (!c.getMems().isEmpty()) {
                b.setCpusetMems(c.getMems());
            }
            unsupported(c.hasRealtimeRuntime(), Field.CPURealtimeRuntime, simple, out);
            unsupported(c.hasRealtimePeriod(), Field.CPURealtimePeriod, simple, out);
        }
        if (r.hasMemory()) {
            LinuxMemory m = r.getMemory();
            if (m.hasLimit()) {
                b.setMemoryLimitInBytes(m.getLimit().getValue());
            }
            if (m.hasSwap()) {
                b.setMemorySwapLimitInBytes(m.getSwap().getValue());
            }
            unsupported(m.hasReservation(), Field.MemReservation, simple, out);
            unsupported(m.hasKernel(), Field.MemKernelLimit, simple, out);
            unsupported(m.hasKernelTcp(), Field.MemTCPLimit, simple, out);
            unsupported(m.hasSwappiness(), Field.MemSwappiness, simple, out);
            unsupported(m.hasDisableOomKiller(), Field.MemDisableOomKiller, simple, out);
            unsupported(m.hasUseHierarchy(), Field.MemUseHierarchy, simple, out);
        }
        for (HugepageLimit h : r.getHugepageLimitsList()) {
            if (!features.hugepageLimits()) {
                out.add(
                        new UnsupportedAdjustment(
                                keyed.apply(Field.HugepageLimits, h.getPageSize()),
                                "HugepageLimits " + h.getPageSize(),
                                features.hugepageReason()));
                continue;
            }
            io.cri4j.cri.v1.HugepageLimit l =
                    io.cri4j.cri.v1.HugepageLimit.newBuilder()
                            .setPageSize(h.getPageSize())
                            .setLimit(h.getLimit())
                            .build();
            Keys.replaceOrAdd(
                    b.getHugepageLimitsCount(),
                    i -> b.getHugepageLimits(i).getPageSize(),
                    h.getPageSize(),
                    i -> b.setHugepageLimits(i, l),
                    () -> b.addHugepageLimits(l));
        }
        b.putAllUnified(r.getUnifiedMap());
        unsupported(r.hasBlockioClass(), Field.BlockioClass, simple, out);
        unsupported(r.hasRdtClass(), Field.RdtClass, simple, out);
        unsupported(r.hasPids(), Field.PidsLimit, simple, out);
    }

    /**
     * Device cgroup rules CRI cannot carry: one entry per hook that added some (all of them
     * without a hook when the host cannot tell who did).
     */
    private static void deviceCgroupRules(
            LinuxResources r, List<String> hooks, List<UnsupportedAdjustment> out) {
        if (r.getDevicesCount() == 0) {
            return;
        }
        String reason = "CRI has no device cgroup rules";
        if (hooks.isEmpty()) {
            out.add(new UnsupportedAdjustment("", DEVICE_CGROUP_RULES + " " + rules(r), reason));
            return;
        }
        for (String hook : hooks) {
            out.add(new UnsupportedAdjustment(hook, DEVICE_CGROUP_RULES + " " + rules(r), reason));
        }
    }

    /** The field name reports use for device cgroup rules (NRI has no {@code Field} for them). */
    static final String DEVICE_CGROUP_RULES = "DeviceCgroupRules";

    /** The rules as {@code runc} and the cgroup files spell them, e.g. {@code [allow c 1:3 rwm]}. */
    private static String rules(LinuxResources r) {
        List<String> out = new ArrayList<>();
        for (io.cri4j.hook.nri.v1alpha1.LinuxDeviceCgroup d : r.getDevicesList()) {
            out.add(
                    (d.getAllow() ? "allow " : "deny ")
                            + (d.getType().isEmpty() ? "a" : d.getType())
                            + " "
                            + (d.hasMajor() ? Long.toString(d.getMajor().getValue()) : "*")
                            + ":"
                            + (d.hasMinor() ? Long.toString(d.getMinor().getValue()) : "*")
                            + " "
                            + d.getAccess());
        }
        return out.toString();
    }

    /** A resource field CRI has no place for. */
    private static void unsupported(
            boolean set,
            Field field,
            Function<Field, String> simple,
            List<UnsupportedAdjustment> out) {
        unsupported(set, field, "CRI has no " + field.name() + " resource", simple, out);
    }

    /** A plain field CRI cannot carry, when set, named with the hook that set it. */
    private static void unsupported(
            boolean set,
            Field field,
            String reason,
            Function<Field, String> simple,
            List<UnsupportedAdjustment> out) {
        if (set) {
            out.add(new UnsupportedAdjustment(simple.apply(field), field.name(), reason));
        }
    }

    /** The entries of a keyed field CRI cannot carry (set or removed), each with its hook. */
    private static void unsupported(
            Collection<String> keys,
            Field field,
            String reason,
            Owner owner,
            List<UnsupportedAdjustment> out) {
        for (String k : keys) {
            String key = Adjustments.clearRemovalMarker(k);
            out.add(
                    new UnsupportedAdjustment(
                            owner.compound(field, key), field.name() + " " + key, reason));
        }
    }

    // ---------------------------------------------------------------- pods and updates

    /**
     * Applies a merged {@link PodSandboxAdjustment}: labels, annotations, cgroup parent and the
     * pod's resources ({@code linux.resources}). The adjustment does not say which hook set a
     * field, so unsupported resource fields carry no hook.
     */
    public Adjusted<RunPodSandboxRequest> apply(
            RunPodSandboxRequest request, PodSandboxAdjustment a) {
        if (a.isEmpty()) {
            return new Adjusted<>(request, List.of());
        }
        List<UnsupportedAdjustment> out = new ArrayList<>();
        PodSandboxConfig.Builder c =
                request.getConfig().toBuilder()
                        .putAllLabels(a.labels())
                        .putAllAnnotations(a.annotations());
        LinuxPodSandboxConfig.Builder l = c.getLinuxBuilder();
        if (!a.cgroupParent().isEmpty()) {
            l.setCgroupParent(a.cgroupParent());
        }
        if (!a.resources().equals(LinuxResources.getDefaultInstance())) {
            Adjusted<LinuxContainerResources> r = resources(l.getResources(), a.resources());
            l.setResources(r.value());
            out.addAll(r.unsupported());
        }
        return new Adjusted<>(request.toBuilder().setConfig(c).build(), out);
    }

    /**
     * Applies an NRI update to a CRI {@code UpdateContainerResources} request: the request's
     * resources with the fields the update sets (for an update of another container, build the
     * request with its current resources first).
     */
    public Adjusted<UpdateContainerResourcesRequest> apply(
            UpdateContainerResourcesRequest request, ContainerUpdate update) {
        Adjusted<LinuxContainerResources> r =
                resources(request.getLinux(), update.getLinux().getResources());
        return new Adjusted<>(
                request.toBuilder()
                        .setContainerId(update.getContainerId())
                        .setLinux(r.value())
                        .build(),
                r.unsupported());
    }

    // ---------------------------------------------------------------- enforcing

    /**
     * Decides over the unsupported changes per hook: a hook under {@link FailurePolicy#FAIL} (or a
     * change no hook is known for) fails with an {@link UnsupportedAdjustmentException} naming the
     * hook and its fields; under {@link FailurePolicy#IGNORE} the changes are logged as dropped.
     *
     * @param adjusted what was applied and what was not
     * @param event the event, for messages
     * @param policyOf a hook's policy by name (e.g. {@link io.cri4j.hook.HookChain#policyOf})
     * @return the applied value, when nothing fails
     */
    public static <T> T enforce(
            Adjusted<T> adjusted,
            HookEvent event,
            Function<String, Optional<HookPolicy>> policyOf) {
        UnsupportedAdjustmentException first = null;
        Map<String, List<UnsupportedAdjustment>> byHook = new LinkedHashMap<>();
        adjusted.unsupported()
                .forEach(u -> byHook.computeIfAbsent(u.hook(), k -> new ArrayList<>()).add(u));
        for (Map.Entry<String, List<UnsupportedAdjustment>> e : byHook.entrySet()) {
            Optional<HookPolicy> p =
                    e.getKey().isEmpty() ? Optional.empty() : policyOf.apply(e.getKey());
            if (p.isPresent() && p.get().failurePolicy() == FailurePolicy.IGNORE) {
                LOG.warn(
                        "{}: dropped what hook {} asked for and CRI cannot carry (failure policy"
                                + " Ignore): {}",
                        event == null ? "-" : event.displayName(),
                        e.getKey(),
                        String.join(
                                ", ",
                                e.getValue().stream()
                                        .map(UnsupportedAdjustment::describe)
                                        .toList()));
                continue;
            }
            UnsupportedAdjustmentException ex =
                    new UnsupportedAdjustmentException(e.getKey(), event, e.getValue());
            if (first == null) {
                first = ex;
            } else {
                first.addSuppressed(ex);
            }
        }
        if (first != null) {
            throw first;
        }
        return adjusted.value();
    }

    /** Looks up the hook behind a field of one container; empty when unknown. */
    private abstract static class Owner {
        abstract String simple(Field f);

        abstract String compound(Field f, String key);

        /** The hooks that added device cgroup rules; empty when the host cannot tell. */
        List<String> deviceCgroupRules() {
            return List.of();
        }

        static Owner of(FieldOwners owners) {
            return new Owner() {
                @Override
                String simple(Field f) {
                    return Adjustments.clearRemovalMarker(
                            owners.getSimpleMap().getOrDefault(f.getNumber(), ""));
                }

                @Override
                String compound(Field f, String key) {
                    io.cri4j.hook.nri.v1alpha1.CompoundFieldOwners c =
                            owners.getCompoundMap().get(f.getNumber());
                    return c == null
                            ? ""
                            : Adjustments.clearRemovalMarker(
                                    c.getOwnersMap().getOrDefault(key, ""));
                }
            };
        }
    }
}
