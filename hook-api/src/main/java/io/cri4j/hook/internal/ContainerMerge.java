package io.cri4j.hook.internal;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.internal.ResourceMerge.Claim;
import io.cri4j.hook.nri.v1alpha1.CDIDevice;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerEviction;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Hooks;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxContainer;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxNamespace;
import io.cri4j.hook.nri.v1alpha1.LinuxNetDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxRdt;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.POSIXRlimit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Merges the answers of the hooks of one event in their order, by NRI's adaptation rules
 * ({@code pkg/adaptation/result.go}): each answer is applied to the container as earlier hooks
 * left it (so the next hook sees that container), every field set is claimed by the hook that set
 * it, and a second claim is a {@link HookConflictException}. Container updates are merged per
 * container and field the same way; an update marked {@code ignore_failure} that conflicts is
 * dropped instead. Evictions are collected (the first reason per container stays).
 *
 * <p>The merged adjustment is normalized: each key (env name, annotation, mount destination,
 * device path, namespace type, sysctl, net device) appears at most once as set, and a removal
 * marker appears when a hook removed the key; apply removals first, then additions. Not
 * thread-safe: one event, applied sequentially.
 */
public final class ContainerMerge {
    private static final Logger LOG = LoggerFactory.getLogger(ContainerMerge.class);

    private final HookEvent event;
    private final Owners owners;

    /** The container being created (CreateContainer only), as it came. */
    private final Container created;

    private final String createdId;

    /**
     * The container as adjusted by the answers applied to it so far ({@link #container()} applies
     * the rest): built only when a hook or the host asks for it.
     */
    private Container.Builder adjusted;

    private Container adjustedBuilt;

    /** Answers not yet applied to {@link #adjusted}, in order. */
    private List<ContainerAdjustment> unapplied;

    /** The container whose update is requested (UpdateContainer only). */
    private final String requestedId;

    private LinuxResources.Builder requestedResources;
    private boolean requestedTouched;
    private boolean requestedIgnoreFailure = true;

    // the merged adjustment, normalized; each part made when first set
    private final Keyed<String> annotations = new Keyed<>();
    private final Keyed<KeyValue> env = new Keyed<>();
    private final Keyed<Mount> mounts = new Keyed<>();
    private final Keyed<LinuxDevice> devices = new Keyed<>();
    private final Keyed<LinuxNamespace> namespaces = new Keyed<>();
    private final Keyed<String> sysctl = new Keyed<>();
    private final Keyed<LinuxNetDevice> netDevices = new Keyed<>();
    private Map<String, POSIXRlimit> rlimits;
    private Map<String, CDIDevice> cdiDevices;
    private Hooks.Builder ociHooks;
    private List<String> args;
    private LinuxContainerAdjustment.Builder linux;
    private LinuxResources.Builder resources;

    private Map<String, ContainerUpdate.Builder> updates;
    private Map<String, ContainerEviction> evictions;

    /** The entries a hook set (last set last) and the keys a hook removed, of one keyed field. */
    private static final class Keyed<V> {
        private LinkedHashMap<String, V> set;
        private LinkedHashSet<String> removed;

        void remove(String key) {
            if (set != null) {
                set.remove(key);
            }
            if (removed == null) {
                removed = new LinkedHashSet<>();
            }
            removed.add(key);
        }

        /** Sets {@code key} last. */
        void put(String key, V value) {
            if (set == null) {
                set = new LinkedHashMap<>();
            } else {
                set.remove(key);
            }
            set.put(key, value);
        }

        /** Sets {@code key} where it is, or last when new. */
        void putInPlace(String key, V value) {
            if (set == null) {
                set = new LinkedHashMap<>();
            }
            set.put(key, value);
        }

        Collection<String> removed() {
            return removed == null ? List.of() : removed;
        }

        Map<String, V> set() {
            return set == null ? Map.of() : set;
        }

        boolean isEmpty() {
            return set == null && removed == null;
        }
    }

    private ContainerMerge(
            HookEvent event, Container created, String requestedId, LinuxResources requested) {
        this.event = event;
        this.owners = new Owners(event);
        this.created = created;
        this.createdId = created == null ? null : created.getId();
        this.requestedId = requestedId;
        this.requestedResources = requested == null ? null : requested.toBuilder();
        if (created != null) {
            owners.describe(created.getId(), "container \"" + name(created) + "\"");
        }
    }

    /** A merge of CreateContainer answers for {@code container}. */
    public static ContainerMerge forCreate(Container container) {
        return new ContainerMerge(HookEvent.CREATE_CONTAINER, container, null, null);
    }

    /** A merge of UpdateContainer answers for {@code container}, asked to get {@code resources}. */
    public static ContainerMerge forUpdate(Container container, LinuxResources resources) {
        ContainerMerge m =
                new ContainerMerge(HookEvent.UPDATE_CONTAINER, null, container.getId(), resources);
        m.owners.describe(container.getId(), "container \"" + name(container) + "\"");
        return m;
    }

    /** A merge of answers carrying only updates and evictions (StopContainer, Synchronize). */
    public static ContainerMerge forUpdatesOnly(HookEvent event) {
        return new ContainerMerge(event, null, null, null);
    }

    /** Names a container in messages: its name, else its id. */
    public static String name(Container c) {
        return c.getName().isEmpty() ? c.getId() : c.getName();
    }

    /**
     * Checks what a hook's answer asks for that NRI forbids, before anything is applied.
     *
     * @return an error message, or null when the answer is acceptable
     */
    public String invalid(HookResult result) {
        if (createdId == null
                && !result.adjustment().equals(ContainerAdjustment.getDefaultInstance())) {
            return "answered with a container adjustment, which only"
                    + " CreateContainer can carry";
        }
        for (ContainerUpdate u : result.updates()) {
            if (u.getContainerId().isEmpty()) {
                return "asked for a container update without a container id";
            }
            if (u.getContainerId().equals(createdId)) {
                return "asked to update container " + createdId + " during its creation";
            }
        }
        for (ContainerEviction e : result.evictions()) {
            if (e.getContainerId().isEmpty()) {
                return "asked to evict a container without a container id";
            }
            if (e.getContainerId().equals(createdId)) {
                return "asked to evict container " + createdId + " during its creation";
            }
        }
        return null;
    }

    /** Applies one hook's answer; throws {@link HookConflictException} on a conflict. */
    public void apply(String hook, HookResult result) {
        if (created != null) {
            ContainerAdjustment a = result.adjustment();
            if (!a.equals(ContainerAdjustment.getDefaultInstance())) {
                adjust(hook, a);
                if (unapplied == null) {
                    unapplied = new ArrayList<>(2);
                }
                unapplied.add(a);
            }
        }
        for (ContainerUpdate u : result.updates()) {
            update(hook, u);
        }
        for (ContainerEviction e : result.evictions()) {
            if (evictions == null) {
                evictions = new LinkedHashMap<>();
            }
            evictions.putIfAbsent(e.getContainerId(), e);
        }
    }

    /** Applies a list of updates (Synchronize, unsolicited updates). */
    public void applyUpdates(String hook, List<ContainerUpdate> list) {
        for (ContainerUpdate u : list) {
            update(hook, u);
        }
    }

    /** The container being created as the hooks adjusted it (CreateContainer only). */
    public Container container() {
        if (unapplied == null || unapplied.isEmpty()) {
            return adjustedBuilt != null ? adjustedBuilt : created;
        }
        if (adjusted == null) {
            adjusted = created.toBuilder();
        }
        for (ContainerAdjustment a : unapplied) {
            applyTo(adjusted, a);
        }
        unapplied.clear();
        adjustedBuilt = adjusted.build();
        return adjustedBuilt;
    }

    /** The id of the container being created (CreateContainer only). */
    public String containerId() {
        return createdId;
    }

    /** The resources of the container being updated as the hooks left them (UpdateContainer). */
    public LinuxResources requestedResources() {
        return requestedResources.build();
    }

    /** Who set what. */
    public Owners owners() {
        return owners;
    }

    /** The merged adjustment, updates and evictions. */
    public HookResult result() {
        if (updates == null && !requestedTouched && evictions == null) {
            return new HookResult(adjustment(), List.of(), List.of());
        }
        List<ContainerUpdate> list = new ArrayList<>();
        if (updates != null) {
            updates.values().forEach(b -> list.add(b.build()));
        }
        if (requestedTouched) {
            list.add(
                    ContainerUpdate.newBuilder()
                            .setContainerId(requestedId)
                            .setLinux(
                                    io.cri4j.hook.nri.v1alpha1.LinuxContainerUpdate.newBuilder()
                                            .setResources(requestedResources))
                            .setIgnoreFailure(requestedIgnoreFailure)
                            .build());
        }
        return new HookResult(
                adjustment(),
                list,
                evictions == null ? List.of() : new ArrayList<>(evictions.values()));
    }

    // ------------------------------------------------------- CreateContainer: the merge

    private LinuxContainerAdjustment.Builder linux() {
        if (linux == null) {
            linux = LinuxContainerAdjustment.newBuilder();
        }
        return linux;
    }

    /** Claims what {@code a} sets and merges it into the normalized adjustment. */
    private void adjust(String hook, ContainerAdjustment a) {
        adjustMap(hook, "Annotations", a.getAnnotationsMap(), annotations);
        adjustKeyed(hook, "Mounts", a.getMountsList(), Mount::getDestination, mounts);
        adjustKeyed(hook, "Env", a.getEnvList(), KeyValue::getKey, env);
        adjustArgs(hook, a.getArgsList());
        adjustHooks(hook, a);
        if (a.hasLinux()) {
            LinuxContainerAdjustment l = a.getLinux();
            adjustKeyed(hook, "Devices", l.getDevicesList(), LinuxDevice::getPath, devices);
            if (l.hasResources()) {
                adjustResources(hook, l.getResources());
            }
            String id = createdId;
            if (!l.getCgroupsPath().isEmpty()) {
                owners.claim(id, "CgroupsPath", hook);
                linux().setCgroupsPath(l.getCgroupsPath());
            }
            if (l.hasOomScoreAdj()) {
                owners.claim(id, "OomScoreAdj", hook);
                linux().setOomScoreAdj(l.getOomScoreAdj());
            }
            if (l.hasIoPriority()) {
                owners.claim(id, "IoPriority", hook);
                linux().setIoPriority(l.getIoPriority());
            }
            if (l.hasSeccompPolicy()) {
                owners.claim(id, "SeccompPolicy", hook);
                linux().setSeccompPolicy(l.getSeccompPolicy());
            }
            adjustKeyed(
                    hook, "Namespace", l.getNamespacesList(), LinuxNamespace::getType, namespaces);
            adjustMap(hook, "Sysctl", l.getSysctlMap(), sysctl);
            adjustMap(hook, "LinuxNetDevices", l.getNetDevicesMap(), netDevices);
            if (l.hasScheduler()) {
                owners.claim(id, "LinuxSched", hook);
                linux().setScheduler(l.getScheduler());
            }
            if (l.hasRdt()) {
                adjustRdt(hook, l.getRdt());
            }
            if (l.hasMemoryPolicy()) {
                owners.claim(id, "MemoryPolicy", hook);
                linux().setMemoryPolicy(l.getMemoryPolicy());
            }
        }
        for (POSIXRlimit r : a.getRlimitsList()) {
            owners.claim(createdId, "Rlimits", r.getType(), hook);
            if (rlimits == null) {
                rlimits = new LinkedHashMap<>();
            }
            rlimits.put(r.getType(), r);
        }
        for (CDIDevice d : a.getCDIDevicesList()) {
            owners.claim(createdId, "CdiDevices", d.getName(), hook);
            if (cdiDevices == null) {
                cdiDevices = new LinkedHashMap<>();
            }
            cdiDevices.put(d.getName(), d);
        }
    }

    /** Annotations, sysctls, net devices: a map with removal-marked keys. */
    private <V> void adjustMap(String hook, String field, Map<String, V> in, Keyed<V> out) {
        if (in.isEmpty()) {
            return;
        }
        for (String k : in.keySet()) {
            if (Adjustments.isMarkedForRemoval(k)) {
                String key = Adjustments.clearRemovalMarker(k);
                owners.clear(createdId, field, key, hook);
                out.remove(key);
            }
        }
        for (Map.Entry<String, V> e : in.entrySet()) {
            if (!Adjustments.isMarkedForRemoval(e.getKey())) {
                owners.claim(createdId, field, e.getKey(), hook);
                out.putInPlace(e.getKey(), e.getValue());
            }
        }
    }

    /** Env, mounts, devices, namespaces: a list keyed by one field, with removal-marked keys. */
    private <T> void adjustKeyed(
            String hook, String field, List<T> in, Function<T, String> key, Keyed<T> out) {
        if (in.isEmpty()) {
            return;
        }
        Changes<T> c = Changes.of(in, key);
        for (String k : c.del) {
            owners.clear(createdId, field, k, hook);
            out.remove(k);
        }
        for (Map.Entry<String, T> e : c.add.entrySet()) {
            owners.claim(createdId, field, e.getKey(), hook);
        }
        for (Map.Entry<String, T> e : c.add.entrySet()) {
            out.put(e.getKey(), e.getValue());
        }
    }

    /** The keys one answer removes and the entries it sets (the last per key), in order. */
    private record Changes<T>(Set<String> del, Map<String, T> add) {
        static <T> Changes<T> of(List<T> in, Function<T, String> key) {
            Set<String> del = new LinkedHashSet<>();
            Map<String, T> add = new LinkedHashMap<>();
            for (T t : in) {
                String k = key.apply(t);
                if (Adjustments.isMarkedForRemoval(k)) {
                    del.add(Adjustments.clearRemovalMarker(k));
                } else {
                    add.put(k, t);
                }
            }
            return new Changes<>(del, add);
        }

        boolean touches(String k) {
            return del.contains(k) || add.containsKey(k);
        }
    }

    private void adjustArgs(String hook, List<String> in) {
        if (in.isEmpty()) {
            return;
        }
        List<String> a = in;
        if (a.get(0).isEmpty()) {
            owners.clear(createdId, "Args", hook);
            a = a.subList(1, a.size());
        }
        owners.claim(createdId, "Args", hook);
        args = List.copyOf(a);
    }

    private void adjustHooks(String hook, ContainerAdjustment a) {
        if (!a.hasHooks() || a.getHooks().equals(Hooks.getDefaultInstance())) {
            return;
        }
        owners.claimAppending(createdId, "OciHooks", hook);
        if (ociHooks == null) {
            ociHooks = Hooks.newBuilder();
        }
        ociHooks.mergeFrom(a.getHooks());
    }

    private void adjustResources(String hook, LinuxResources r) {
        List<Claim> claims = ResourceMerge.claims(r);
        for (Claim c : claims) {
            if (c.key().isEmpty()) {
                owners.claim(createdId, c.field(), hook);
            } else {
                owners.claim(createdId, c.field(), c.key(), hook);
            }
        }
        if (r.getDevicesCount() > 0) {
            owners.claimAppending(createdId, ResourceMerge.DEVICE_CGROUP_RULES, hook);
        }
        if (!claims.isEmpty() || r.getDevicesCount() > 0) {
            if (resources == null) {
                resources = LinuxResources.newBuilder();
            }
            ResourceMerge.apply(r, resources);
        }
    }

    private void adjustRdt(String hook, LinuxRdt rdt) {
        LinuxRdt.Builder out = linux().getRdtBuilder();
        if (rdt.getRemove()) {
            owners.clear(createdId, "RdtClosID", hook);
            owners.clear(createdId, "RdtSchemata", hook);
            owners.clear(createdId, "RdtEnableMonitoring", hook);
            out.clear().setRemove(true);
        }
        if (rdt.hasClosId()) {
            owners.claim(createdId, "RdtClosID", hook);
            out.setClosId(rdt.getClosId()).setRemove(false);
        }
        if (rdt.hasSchemata()) {
            owners.claim(createdId, "RdtSchemata", hook);
            out.setSchemata(rdt.getSchemata()).setRemove(false);
        }
        if (rdt.hasEnableMonitoring()) {
            owners.claim(createdId, "RdtEnableMonitoring", hook);
            out.setEnableMonitoring(rdt.getEnableMonitoring()).setRemove(false);
        }
    }

    private ContainerAdjustment adjustment() {
        if (created == null || (unapplied == null && adjustedBuilt == null)) {
            return ContainerAdjustment.getDefaultInstance();
        }
        ContainerAdjustment.Builder b = ContainerAdjustment.newBuilder();
        if (!annotations.isEmpty()) {
            annotations.removed().forEach(k -> b.putAnnotations(Adjustments.markForRemoval(k), ""));
            b.putAllAnnotations(annotations.set());
        }
        if (!mounts.isEmpty()) {
            mounts.removed()
                    .forEach(
                            k ->
                                    b.addMounts(
                                            Mount.newBuilder()
                                                    .setDestination(
                                                            Adjustments.markForRemoval(k))));
            b.addAllMounts(mounts.set().values());
        }
        if (!env.isEmpty()) {
            env.removed()
                    .forEach(
                            k ->
                                    b.addEnv(
                                            KeyValue.newBuilder()
                                                    .setKey(Adjustments.markForRemoval(k))));
            b.addAllEnv(env.set().values());
        }
        if (ociHooks != null && !ociHooks.build().equals(Hooks.getDefaultInstance())) {
            b.setHooks(ociHooks);
        }
        if (rlimits != null) {
            b.addAllRlimits(rlimits.values());
        }
        if (cdiDevices != null) {
            b.addAllCDIDevices(cdiDevices.values());
        }
        if (args != null) {
            b.addAllArgs(args);
        }
        if (linux != null
                || resources != null
                || !devices.isEmpty()
                || !namespaces.isEmpty()
                || !sysctl.isEmpty()
                || !netDevices.isEmpty()) {
            LinuxContainerAdjustment l = linuxAdjustment();
            if (!l.equals(LinuxContainerAdjustment.getDefaultInstance())) {
                b.setLinux(l);
            }
        }
        return b.build();
    }

    private LinuxContainerAdjustment linuxAdjustment() {
        LinuxContainerAdjustment.Builder l =
                linux == null ? LinuxContainerAdjustment.newBuilder() : linux.clone();
        devices.removed()
                .forEach(
                        k ->
                                l.addDevices(
                                        LinuxDevice.newBuilder()
                                                .setPath(Adjustments.markForRemoval(k))));
        l.addAllDevices(devices.set().values());
        if (resources != null) {
            l.setResources(resources);
        }
        namespaces
                .removed()
                .forEach(
                        k ->
                                l.addNamespaces(
                                        LinuxNamespace.newBuilder()
                                                .setType(Adjustments.markForRemoval(k))));
        l.addAllNamespaces(namespaces.set().values());
        sysctl.removed().forEach(k -> l.putSysctl(Adjustments.markForRemoval(k), ""));
        l.putAllSysctl(sysctl.set());
        netDevices
                .removed()
                .forEach(
                        k ->
                                l.putNetDevices(
                                        Adjustments.markForRemoval(k),
                                        LinuxNetDevice.getDefaultInstance()));
        l.putAllNetDevices(netDevices.set());
        return l.build();
    }

    // ------------------------------------------------------- CreateContainer: the container

    /** Applies one answer to the container as earlier answers left it. */
    private static void applyTo(Container.Builder c, ContainerAdjustment a) {
        Keys.applyMarked(a.getAnnotationsMap(), c::removeAnnotations, c::putAnnotations);
        if (a.getMountsCount() > 0) {
            List<Mount> list =
                    replaceKeyed(c.getMountsList(), a.getMountsList(), Mount::getDestination);
            c.clearMounts().addAllMounts(list);
        }
        if (a.getEnvCount() > 0) {
            Changes<KeyValue> ch = Changes.of(a.getEnvList(), KeyValue::getKey);
            List<String> kept = new ArrayList<>();
            for (String e : c.getEnvList()) {
                if (!ch.touches(e.split("=", 2)[0])) {
                    kept.add(e);
                }
            }
            c.clearEnv().addAllEnv(kept);
            for (KeyValue kv : ch.add.values()) {
                c.addEnv(kv.getKey() + "=" + kv.getValue());
            }
        }
        if (a.getArgsCount() > 0) {
            List<String> args = a.getArgsList();
            c.clearArgs().addAllArgs(args.get(0).isEmpty() ? args.subList(1, args.size()) : args);
        }
        if (a.hasHooks() && !a.getHooks().equals(Hooks.getDefaultInstance())) {
            c.getHooksBuilder().mergeFrom(a.getHooks());
        }
        if (a.hasLinux()) {
            LinuxContainerAdjustment l = a.getLinux();
            LinuxContainer.Builder cl = c.getLinuxBuilder();
            if (l.getDevicesCount() > 0) {
                List<LinuxDevice> list =
                        replaceKeyed(cl.getDevicesList(), l.getDevicesList(), LinuxDevice::getPath);
                cl.clearDevices().addAllDevices(list);
            }
            if (l.hasResources()) {
                LinuxResources r = l.getResources();
                if (!ResourceMerge.claims(r).isEmpty() || r.getDevicesCount() > 0) {
                    ResourceMerge.apply(r, cl.getResourcesBuilder());
                }
            }
            if (!l.getCgroupsPath().isEmpty()) {
                cl.setCgroupsPath(l.getCgroupsPath());
            }
            if (l.hasOomScoreAdj()) {
                cl.setOomScoreAdj(l.getOomScoreAdj());
            }
            if (l.hasIoPriority()) {
                cl.setIoPriority(l.getIoPriority());
            }
            if (l.hasSeccompPolicy()) {
                cl.setSeccompPolicy(l.getSeccompPolicy());
            }
            if (l.getNamespacesCount() > 0) {
                List<LinuxNamespace> list =
                        replaceKeyed(
                                cl.getNamespacesList(),
                                l.getNamespacesList(),
                                LinuxNamespace::getType);
                cl.clearNamespaces().addAllNamespaces(list);
            }
            Keys.applyMarked(l.getSysctlMap(), cl::removeSysctl, cl::putSysctl);
            Keys.applyMarked(l.getNetDevicesMap(), cl::removeNetDevices, cl::putNetDevices);
            if (l.hasScheduler()) {
                cl.setScheduler(l.getScheduler());
            }
            if (l.hasRdt()) {
                LinuxRdt rdt = l.getRdt();
                LinuxRdt.Builder cur = cl.getRdtBuilder();
                if (rdt.getRemove()) {
                    cur.clear();
                }
                if (rdt.hasClosId()) {
                    cur.setClosId(rdt.getClosId());
                }
                if (rdt.hasSchemata()) {
                    cur.setSchemata(rdt.getSchemata());
                }
                if (rdt.hasEnableMonitoring()) {
                    cur.setEnableMonitoring(rdt.getEnableMonitoring());
                }
            }
        }
        for (POSIXRlimit r : a.getRlimitsList()) {
            Keys.replaceOrAdd(
                    c.getRlimitsCount(),
                    i -> c.getRlimits(i).getType(),
                    r.getType(),
                    i -> c.setRlimits(i, r),
                    () -> c.addRlimits(r));
        }
        c.addAllCDIDevices(a.getCDIDevicesList());
    }

    /** {@code current} without the entries {@code in} removes or sets, then what it sets. */
    private static <T> List<T> replaceKeyed(List<T> current, List<T> in, Function<T, String> key) {
        Changes<T> ch = Changes.of(in, key);
        List<T> out = new ArrayList<>();
        for (T t : current) {
            if (!ch.touches(key.apply(t))) {
                out.add(t);
            }
        }
        out.addAll(ch.add.values());
        return out;
    }

    // ---------------------------------------------------------------- updates

    private void update(String hook, ContainerUpdate u) {
        String id = u.getContainerId();
        LinuxResources r = u.getLinux().getResources();
        List<Claim> claims = ResourceMerge.claims(r);
        try {
            for (Claim c : claims) {
                if (c.key().isEmpty()) {
                    owners.checkClaim(id, c.field(), hook);
                } else {
                    owners.checkClaim(id, c.field(), c.key(), hook);
                }
            }
        } catch (HookConflictException e) {
            if (u.getIgnoreFailure()) {
                LOG.debug(
                        "dropped hook {}'s update of container {} marked ignore_failure: {}",
                        hook,
                        id,
                        e.getMessage());
                return;
            }
            throw e;
        }
        for (Claim c : claims) {
            if (c.key().isEmpty()) {
                owners.claim(id, c.field(), hook);
            } else {
                owners.claim(id, c.field(), c.key(), hook);
            }
        }
        if (id.equals(requestedId)) {
            requestedIgnoreFailure = requestedIgnoreFailure && u.getIgnoreFailure();
            requestedTouched = true;
            ResourceMerge.apply(r, requestedResources);
            return;
        }
        if (updates == null) {
            updates = new LinkedHashMap<>();
        }
        ContainerUpdate.Builder merged = updates.get(id);
        if (merged == null) {
            merged =
                    ContainerUpdate.newBuilder()
                            .setContainerId(id)
                            .setIgnoreFailure(u.getIgnoreFailure());
            updates.put(id, merged);
        } else {
            merged.setIgnoreFailure(merged.getIgnoreFailure() && u.getIgnoreFailure());
        }
        ResourceMerge.apply(r, merged.getLinuxBuilder().getResourcesBuilder());
    }

    @Override
    public String toString() {
        return "ContainerMerge["
                + (event == null ? "Synchronize" : event.displayName())
                + ", "
                + Objects.toString(createdId, Objects.toString(requestedId, "-"))
                + "]";
    }
}
