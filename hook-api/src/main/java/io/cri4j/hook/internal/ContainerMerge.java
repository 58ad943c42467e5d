package io.cri4j.hook.internal;

import io.cri4j.hook.Adjustments;
import io.cri4j.hook.HookConflictException;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookResult;
import io.cri4j.hook.internal.ResourceMerge.Claim;
import io.cri4j.nri.api.CDIDevice;
import io.cri4j.nri.api.Container;
import io.cri4j.nri.api.ContainerAdjustment;
import io.cri4j.nri.api.ContainerEviction;
import io.cri4j.nri.api.ContainerUpdate;
import io.cri4j.nri.api.Hooks;
import io.cri4j.nri.api.KeyValue;
import io.cri4j.nri.api.LinuxContainer;
import io.cri4j.nri.api.LinuxContainerAdjustment;
import io.cri4j.nri.api.LinuxDevice;
import io.cri4j.nri.api.LinuxNamespace;
import io.cri4j.nri.api.LinuxNetDevice;
import io.cri4j.nri.api.LinuxRdt;
import io.cri4j.nri.api.LinuxResources;
import io.cri4j.nri.api.Mount;
import io.cri4j.nri.api.POSIXRlimit;
import java.util.ArrayList;
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

    /** The container being created (CreateContainer only), as adjusted so far. */
    private final Container.Builder container;

    private final String createdId;

    /** The container whose update is requested (UpdateContainer only). */
    private final String requestedId;

    private LinuxResources.Builder requestedResources;
    private boolean requestedTouched;
    private boolean requestedIgnoreFailure = true;

    // the merged adjustment, normalized
    private final Map<String, String> annotations = new LinkedHashMap<>();
    private final Set<String> annotationRemovals = new LinkedHashSet<>();
    private final Map<String, KeyValue> env = new LinkedHashMap<>();
    private final Set<String> envRemovals = new LinkedHashSet<>();
    private final Map<String, Mount> mounts = new LinkedHashMap<>();
    private final Set<String> mountRemovals = new LinkedHashSet<>();
    private final Map<String, LinuxDevice> devices = new LinkedHashMap<>();
    private final Set<String> deviceRemovals = new LinkedHashSet<>();
    private final Map<String, LinuxNamespace> namespaces = new LinkedHashMap<>();
    private final Set<String> namespaceRemovals = new LinkedHashSet<>();
    private final Map<String, String> sysctl = new LinkedHashMap<>();
    private final Set<String> sysctlRemovals = new LinkedHashSet<>();
    private final Map<String, LinuxNetDevice> netDevices = new LinkedHashMap<>();
    private final Set<String> netDeviceRemovals = new LinkedHashSet<>();
    private final Map<String, POSIXRlimit> rlimits = new LinkedHashMap<>();
    private final Map<String, CDIDevice> cdiDevices = new LinkedHashMap<>();
    private final Hooks.Builder ociHooks = Hooks.newBuilder();
    private List<String> args;
    private final LinuxContainerAdjustment.Builder linux = LinuxContainerAdjustment.newBuilder();
    private final LinuxResources.Builder resources = LinuxResources.newBuilder();
    private boolean resourcesSet;

    private final Map<String, ContainerUpdate.Builder> updates = new LinkedHashMap<>();
    private final Map<String, ContainerEviction> evictions = new LinkedHashMap<>();

    private ContainerMerge(
            HookEvent event, Container created, String requestedId, LinuxResources requested) {
        this.event = event;
        this.owners = new Owners(event);
        this.container = created == null ? null : created.toBuilder();
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
        if (container != null) {
            adjust(hook, result.adjustment());
        }
        for (ContainerUpdate u : result.updates()) {
            update(hook, u);
        }
        for (ContainerEviction e : result.evictions()) {
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
        return container.build();
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
        List<ContainerUpdate> list = new ArrayList<>();
        updates.values().forEach(b -> list.add(b.build()));
        if (requestedTouched) {
            list.add(
                    ContainerUpdate.newBuilder()
                            .setContainerId(requestedId)
                            .setLinux(
                                    io.cri4j.nri.api.LinuxContainerUpdate.newBuilder()
                                            .setResources(requestedResources))
                            .setIgnoreFailure(requestedIgnoreFailure)
                            .build());
        }
        return new HookResult(adjustment(), list, new ArrayList<>(evictions.values()));
    }

    // ---------------------------------------------------------------- CreateContainer

    private void adjust(String hook, ContainerAdjustment a) {
        adjustMap(
                hook,
                "Annotations",
                a.getAnnotationsMap(),
                annotations,
                annotationRemovals,
                k -> container.removeAnnotations(k),
                (k, v) -> container.putAnnotations(k, v));
        adjustMounts(hook, a.getMountsList());
        adjustEnv(hook, a.getEnvList());
        adjustArgs(hook, a.getArgsList());
        adjustHooks(hook, a.getHooks());
        if (a.hasLinux()) {
            LinuxContainerAdjustment l = a.getLinux();
            adjustDevices(hook, l.getDevicesList());
            if (l.hasResources()) {
                adjustResources(hook, l.getResources());
            }
            String id = createdId;
            LinuxContainer.Builder cl = container.getLinuxBuilder();
            if (!l.getCgroupsPath().isEmpty()) {
                owners.claim(id, "CgroupsPath", hook);
                cl.setCgroupsPath(l.getCgroupsPath());
                linux.setCgroupsPath(l.getCgroupsPath());
            }
            if (l.hasOomScoreAdj()) {
                owners.claim(id, "OomScoreAdj", hook);
                cl.setOomScoreAdj(l.getOomScoreAdj());
                linux.setOomScoreAdj(l.getOomScoreAdj());
            }
            if (l.hasIoPriority()) {
                owners.claim(id, "IoPriority", hook);
                cl.setIoPriority(l.getIoPriority());
                linux.setIoPriority(l.getIoPriority());
            }
            if (l.hasSeccompPolicy()) {
                owners.claim(id, "SeccompPolicy", hook);
                cl.setSeccompPolicy(l.getSeccompPolicy());
                linux.setSeccompPolicy(l.getSeccompPolicy());
            }
            adjustNamespaces(hook, l.getNamespacesList());
            adjustMap(
                    hook,
                    "Sysctl",
                    l.getSysctlMap(),
                    sysctl,
                    sysctlRemovals,
                    k -> cl.removeSysctl(k),
                    (k, v) -> cl.putSysctl(k, v));
            adjustMap(
                    hook,
                    "LinuxNetDevices",
                    l.getNetDevicesMap(),
                    netDevices,
                    netDeviceRemovals,
                    k -> cl.removeNetDevices(k),
                    (k, v) -> cl.putNetDevices(k, v));
            if (l.hasScheduler()) {
                owners.claim(id, "LinuxSched", hook);
                cl.setScheduler(l.getScheduler());
                linux.setScheduler(l.getScheduler());
            }
            if (l.hasRdt()) {
                adjustRdt(hook, l.getRdt());
            }
            if (l.hasMemoryPolicy()) {
                owners.claim(id, "MemoryPolicy", hook);
                linux.setMemoryPolicy(l.getMemoryPolicy());
            }
        }
        for (POSIXRlimit r : a.getRlimitsList()) {
            owners.claim(createdId, "Rlimits", r.getType(), hook);
            rlimits.put(r.getType(), r);
            replace(
                    container.getRlimitsCount(),
                    i -> container.getRlimits(i).getType(),
                    r.getType(),
                    i -> container.setRlimits(i, r),
                    () -> container.addRlimits(r));
        }
        for (CDIDevice d : a.getCDIDevicesList()) {
            owners.claim(createdId, "CdiDevices", d.getName(), hook);
            cdiDevices.put(d.getName(), d);
            container.addCDIDevices(d);
        }
    }

    /** Annotations, sysctls, net devices: a map with removal-marked keys. */
    private <V> void adjustMap(
            String hook,
            String field,
            Map<String, V> in,
            Map<String, V> out,
            Set<String> removals,
            java.util.function.Consumer<String> remove,
            java.util.function.BiConsumer<String, V> put) {
        if (in.isEmpty()) {
            return;
        }
        for (String k : in.keySet()) {
            if (Adjustments.isMarkedForRemoval(k)) {
                String key = Adjustments.clearRemovalMarker(k);
                owners.clear(createdId, field, key, hook);
                out.remove(key);
                removals.add(key);
                remove.accept(key);
            }
        }
        for (Map.Entry<String, V> e : in.entrySet()) {
            if (!Adjustments.isMarkedForRemoval(e.getKey())) {
                owners.claim(createdId, field, e.getKey(), hook);
                out.put(e.getKey(), e.getValue());
                put.accept(e.getKey(), e.getValue());
            }
        }
    }

    private void adjustEnv(String hook, List<KeyValue> in) {
        if (in.isEmpty()) {
            return;
        }
        Set<String> del = new LinkedHashSet<>();
        Map<String, KeyValue> add = new LinkedHashMap<>();
        for (KeyValue kv : in) {
            if (Adjustments.isMarkedForRemoval(kv.getKey())) {
                del.add(Adjustments.clearRemovalMarker(kv.getKey()));
            } else {
                add.put(kv.getKey(), kv);
            }
        }
        for (String k : del) {
            owners.clear(createdId, "Env", k, hook);
            env.remove(k);
            envRemovals.add(k);
        }
        for (String k : add.keySet()) {
            owners.claim(createdId, "Env", k, hook);
        }
        List<String> kept = new ArrayList<>();
        for (String e : container.getEnvList()) {
            String k = e.split("=", 2)[0];
            if (!del.contains(k) && !add.containsKey(k)) {
                kept.add(e);
            }
        }
        container.clearEnv().addAllEnv(kept);
        for (KeyValue kv : add.values()) {
            env.remove(kv.getKey());
            env.put(kv.getKey(), kv);
            container.addEnv(kv.getKey() + "=" + kv.getValue());
        }
    }

    private void adjustMounts(String hook, List<Mount> in) {
        adjustKeyed(
                hook,
                "Mounts",
                in,
                Mount::getDestination,
                mounts,
                mountRemovals,
                container.getMountsList(),
                list -> container.clearMounts().addAllMounts(list));
    }

    private void adjustDevices(String hook, List<LinuxDevice> in) {
        LinuxContainer.Builder cl = container.getLinuxBuilder();
        adjustKeyed(
                hook,
                "Devices",
                in,
                LinuxDevice::getPath,
                devices,
                deviceRemovals,
                cl.getDevicesList(),
                list -> cl.clearDevices().addAllDevices(list));
    }

    private void adjustNamespaces(String hook, List<LinuxNamespace> in) {
        LinuxContainer.Builder cl = container.getLinuxBuilder();
        adjustKeyed(
                hook,
                "Namespace",
                in,
                LinuxNamespace::getType,
                namespaces,
                namespaceRemovals,
                cl.getNamespacesList(),
                list -> cl.clearNamespaces().addAllNamespaces(list));
    }

    /** Mounts, devices, namespaces: a list keyed by one field, with removal-marked keys. */
    private <T> void adjustKeyed(
            String hook,
            String field,
            List<T> in,
            Function<T, String> key,
            Map<String, T> out,
            Set<String> removals,
            List<T> current,
            java.util.function.Consumer<List<T>> replaceCurrent) {
        if (in.isEmpty()) {
            return;
        }
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
        for (String k : del) {
            owners.clear(createdId, field, k, hook);
            out.remove(k);
            removals.add(k);
        }
        for (String k : add.keySet()) {
            owners.claim(createdId, field, k, hook);
        }
        List<T> kept = new ArrayList<>();
        for (T t : current) {
            String k = key.apply(t);
            if (!del.contains(k) && !add.containsKey(k)) {
                kept.add(t);
            }
        }
        kept.addAll(add.values());
        replaceCurrent.accept(kept);
        for (Map.Entry<String, T> e : add.entrySet()) {
            out.remove(e.getKey());
            out.put(e.getKey(), e.getValue());
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
        container.clearArgs().addAllArgs(args);
    }

    private void adjustHooks(String hook, Hooks h) {
        if (h.equals(Hooks.getDefaultInstance())) {
            return;
        }
        owners.claimAppending(createdId, "OciHooks", hook);
        ociHooks.mergeFrom(h);
        container.getHooksBuilder().mergeFrom(h);
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
        if (!claims.isEmpty() || r.getDevicesCount() > 0) {
            ResourceMerge.apply(r, resources);
            ResourceMerge.apply(r, container.getLinuxBuilder().getResourcesBuilder());
            resourcesSet = true;
        }
    }

    private void adjustRdt(String hook, LinuxRdt rdt) {
        LinuxRdt.Builder out = linux.getRdtBuilder();
        LinuxRdt.Builder cur = container.getLinuxBuilder().getRdtBuilder();
        if (rdt.getRemove()) {
            owners.clear(createdId, "RdtClosID", hook);
            owners.clear(createdId, "RdtSchemata", hook);
            owners.clear(createdId, "RdtEnableMonitoring", hook);
            out.clear().setRemove(true);
            cur.clear();
        }
        if (rdt.hasClosId()) {
            owners.claim(createdId, "RdtClosID", hook);
            out.setClosId(rdt.getClosId()).setRemove(false);
            cur.setClosId(rdt.getClosId());
        }
        if (rdt.hasSchemata()) {
            owners.claim(createdId, "RdtSchemata", hook);
            out.setSchemata(rdt.getSchemata()).setRemove(false);
            cur.setSchemata(rdt.getSchemata());
        }
        if (rdt.hasEnableMonitoring()) {
            owners.claim(createdId, "RdtEnableMonitoring", hook);
            out.setEnableMonitoring(rdt.getEnableMonitoring()).setRemove(false);
            cur.setEnableMonitoring(rdt.getEnableMonitoring());
        }
    }

    private static void replace(
            int size,
            java.util.function.IntFunction<String> keyAt,
            String key,
            java.util.function.IntConsumer set,
            Runnable add) {
        for (int i = 0; i < size; i++) {
            if (keyAt.apply(i).equals(key)) {
                set.accept(i);
                return;
            }
        }
        add.run();
    }

    private ContainerAdjustment adjustment() {
        ContainerAdjustment.Builder b = ContainerAdjustment.newBuilder();
        if (container == null) {
            return b.build();
        }
        annotationRemovals.forEach(k -> b.putAnnotations(Adjustments.markForRemoval(k), ""));
        b.putAllAnnotations(annotations);
        mountRemovals.forEach(
                k -> b.addMounts(Mount.newBuilder().setDestination(Adjustments.markForRemoval(k))));
        b.addAllMounts(mounts.values());
        envRemovals.forEach(
                k -> b.addEnv(KeyValue.newBuilder().setKey(Adjustments.markForRemoval(k))));
        b.addAllEnv(env.values());
        if (!ociHooks.build().equals(Hooks.getDefaultInstance())) {
            b.setHooks(ociHooks);
        }
        b.addAllRlimits(rlimits.values());
        b.addAllCDIDevices(cdiDevices.values());
        if (args != null) {
            b.addAllArgs(args);
        }
        LinuxContainerAdjustment.Builder l = linux.clone();
        deviceRemovals.forEach(
                k -> l.addDevices(LinuxDevice.newBuilder().setPath(Adjustments.markForRemoval(k))));
        l.addAllDevices(devices.values());
        if (resourcesSet) {
            l.setResources(resources);
        }
        namespaceRemovals.forEach(
                k ->
                        l.addNamespaces(
                                LinuxNamespace.newBuilder()
                                        .setType(Adjustments.markForRemoval(k))));
        l.addAllNamespaces(namespaces.values());
        sysctlRemovals.forEach(k -> l.putSysctl(Adjustments.markForRemoval(k), ""));
        l.putAllSysctl(sysctl);
        netDeviceRemovals.forEach(
                k ->
                        l.putNetDevices(
                                Adjustments.markForRemoval(k),
                                LinuxNetDevice.getDefaultInstance()));
        l.putAllNetDevices(netDevices);
        LinuxContainerAdjustment built = l.build();
        if (!built.equals(LinuxContainerAdjustment.getDefaultInstance())) {
            b.setLinux(built);
        }
        return b.build();
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
