package io.cri4j.hook.internal;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.hook.Adjustments;
import io.cri4j.hook.ContainerCreation;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.host.Adjusted;
import io.cri4j.hook.host.CriAdjuster;
import io.cri4j.hook.host.UnsupportedAdjustment;
import io.cri4j.hook.koordinator.v1alpha1.ContainerMetadata;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxMetadata;
import io.cri4j.hook.nri.v1alpha1.CDIDevice;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.ContainerUpdate;
import io.cri4j.hook.nri.v1alpha1.Field;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.KeyValue;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainer;
import io.cri4j.hook.nri.v1alpha1.LinuxContainerAdjustment;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxMemory;
import io.cri4j.hook.nri.v1alpha1.LinuxPodSandbox;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.OptionalInt;
import io.cri4j.hook.nri.v1alpha1.OptionalInt64;
import io.cri4j.hook.nri.v1alpha1.OptionalUInt64;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Koordinator's {@code runtime.v1alpha1} messages and NRI's model, both ways: what a Koordinator
 * hook server is sent for an NRI pod or container and how its answer becomes an adjustment (the
 * proxy calling koordlet), and the reverse (a cri4j hook served to Koordinator's proxy). The
 * field-by-field table is in proxy-core's README.
 *
 * <p>Answers are read with Koordinator's "unset" rules (0 and "" leave a field as it is) and
 * compared with what the hook server was sent: a field it echoes unchanged (koordlet answers
 * with the request's resources and environment plus its own) is not an adjustment, so the hook
 * owns only what it changed, and NRI's conflict rules see only real changes.
 */
public final class Koordinator {
    private Koordinator() {}

    /** What an answer changes, and what of it NRI's model cannot carry. */
    public record Answer<T>(T value, List<String> unsupported) {
        public Answer {
            Objects.requireNonNull(value, "value");
            unsupported = List.copyOf(unsupported);
        }
    }

    // ---------------------------------------------------------------- NRI to Koordinator requests

    /** The request for a pod event. */
    public static PodSandboxHookRequest podRequest(PodSandbox pod) {
        PodSandboxHookRequest.Builder b =
                PodSandboxHookRequest.newBuilder()
                        .setPodMeta(meta(pod))
                        .setRuntimeHandler(pod.getRuntimeHandler())
                        .putAllLabels(pod.getLabelsMap())
                        .putAllAnnotations(pod.getAnnotationsMap())
                        .setCgroupParent(pod.getLinux().getCgroupParent());
        if (pod.getLinux().hasPodOverhead()) {
            b.setOverhead(koordResources(pod.getLinux().getPodOverhead(), null));
        }
        if (pod.getLinux().hasPodResources()) {
            b.setResources(koordResources(pod.getLinux().getPodResources(), null));
        }
        return b.build();
    }

    /**
     * The request for a container event.
     *
     * @param named false at {@code CreateContainer}, where Koordinator's hook servers get no
     *     container id (the runtime has not named the container yet)
     */
    public static ContainerResourceHookRequest containerRequest(
            PodSandbox pod, Container c, boolean named) {
        ContainerResourceHookRequest.Builder b =
                ContainerResourceHookRequest.newBuilder()
                        .setPodMeta(meta(pod))
                        .setContainerMeta(
                                ContainerMetadata.newBuilder()
                                        .setName(c.getName())
                                        .setId(named ? c.getId() : ""))
                        .putAllContainerAnnotations(c.getAnnotationsMap())
                        .putAllPodAnnotations(pod.getAnnotationsMap())
                        .putAllPodLabels(pod.getLabelsMap())
                        .setPodCgroupParent(pod.getLinux().getCgroupParent())
                        .putAllContainerEnvs(envs(c.getEnvList()));
        LinuxContainer l = c.getLinux();
        if (l.hasResources() || l.hasOomScoreAdj()) {
            b.setContainerResources(
                    koordResources(
                            l.getResources(), l.hasOomScoreAdj() ? l.getOomScoreAdj() : null));
        }
        if (pod.getLinux().hasPodResources()) {
            b.setPodResources(koordResources(pod.getLinux().getPodResources(), null));
        }
        return b.build();
    }

    /** NRI's {@code KEY=VALUE} environment as Koordinator's map: of a repeated key the last value. */
    public static Map<String, String> envs(List<String> env) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String e : env) {
            int eq = e.indexOf('=');
            out.put(eq < 0 ? e : e.substring(0, eq), eq < 0 ? "" : e.substring(eq + 1));
        }
        return out;
    }

    private static PodSandboxMetadata meta(PodSandbox pod) {
        return PodSandboxMetadata.newBuilder()
                .setName(pod.getName())
                .setUid(pod.getUid())
                .setNamespace(pod.getNamespace())
                .build();
    }

    /** Koordinator's resources for NRI's (and the container's oom_score_adj, if given). */
    public static io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources koordResources(
            LinuxResources r, OptionalInt oomScoreAdj) {
        io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.Builder b =
                io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources.newBuilder()
                        .setCpuPeriod(r.getCpu().getPeriod().getValue())
                        .setCpuQuota(r.getCpu().getQuota().getValue())
                        .setCpuShares(r.getCpu().getShares().getValue())
                        .setMemoryLimitInBytes(r.getMemory().getLimit().getValue())
                        .setCpusetCpus(r.getCpu().getCpus())
                        .setCpusetMems(r.getCpu().getMems())
                        .putAllUnified(r.getUnifiedMap())
                        .setMemorySwapLimitInBytes(r.getMemory().getSwap().getValue());
        if (oomScoreAdj != null) {
            b.setOomScoreAdj(oomScoreAdj.getValue());
        }
        for (HugepageLimit h : r.getHugepageLimitsList()) {
            b.addHugepageLimitsBuilder().setPageSize(h.getPageSize()).setLimit(h.getLimit());
        }
        return b.build();
    }

    // ---------------------------------------------------------------- Koordinator answers to NRI

    /**
     * A {@code PreRunPodSandbox} answer as a pod adjustment: labels, annotations, cgroup parent
     * and resources that differ from what was sent. {@code oom_score_adj} cannot be carried (NRI's
     * pod resources have none).
     */
    public static Answer<PodSandboxAdjustment> podAdjustment(
            PodSandboxHookRequest sent, PodSandboxHookResponse r) {
        PodSandboxAdjustment.Builder b = PodSandboxAdjustment.builder();
        new TreeMap<>(r.getLabelsMap())
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getLabelsMap().get(k))) {
                                b.putLabel(k, v);
                            }
                        });
        new TreeMap<>(r.getAnnotationsMap())
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getAnnotationsMap().get(k))) {
                                b.putAnnotation(k, v);
                            }
                        });
        if (!r.getCgroupParent().isEmpty() && !r.getCgroupParent().equals(sent.getCgroupParent())) {
            b.cgroupParent(r.getCgroupParent());
        }
        List<String> unsupported = new ArrayList<>();
        if (r.hasResources()) {
            LinuxResources.Builder res = LinuxResources.newBuilder();
            changedResources(sent.getResources(), r.getResources(), res);
            if (!res.build().equals(LinuxResources.getDefaultInstance())) {
                b.resources(res.build());
            }
            long oom = r.getResources().getOomScoreAdj();
            if (oom != 0 && oom != sent.getResources().getOomScoreAdj()) {
                unsupported.add(
                        "resources.oom_score_adj (NRI's pod resources have no oom_score_adj)");
            }
        }
        return new Answer<>(b.build(), unsupported);
    }

    /**
     * A {@code PreCreateContainer} answer as a container adjustment: annotations, environment
     * (changed and new keys, in key order), resources and {@code oom_score_adj} that differ from
     * what was sent. A changed {@code pod_cgroup_parent} cannot be carried: NRI's model changes no
     * pod at container creation.
     */
    public static Answer<ContainerAdjustment> containerAdjustment(
            ContainerResourceHookRequest sent, ContainerResourceHookResponse r) {
        Adjustments a = Adjustments.create();
        new TreeMap<>(r.getContainerAnnotationsMap())
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getContainerAnnotationsMap().get(k))) {
                                a.addAnnotation(k, v);
                            }
                        });
        new TreeMap<>(r.getContainerEnvsMap())
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getContainerEnvsMap().get(k))) {
                                a.addEnv(k, v);
                            }
                        });
        ContainerAdjustment built = a.build();
        List<String> unsupported = new ArrayList<>();
        if (r.hasContainerResources()) {
            LinuxResources.Builder res = LinuxResources.newBuilder();
            changedResources(sent.getContainerResources(), r.getContainerResources(), res);
            LinuxContainerAdjustment.Builder l = LinuxContainerAdjustment.newBuilder();
            if (!res.build().equals(LinuxResources.getDefaultInstance())) {
                l.setResources(res);
            }
            long oom = r.getContainerResources().getOomScoreAdj();
            if (oom != 0 && oom != sent.getContainerResources().getOomScoreAdj()) {
                l.setOomScoreAdj(OptionalInt.newBuilder().setValue(oom));
            }
            if (!l.build().equals(LinuxContainerAdjustment.getDefaultInstance())) {
                built = built.toBuilder().setLinux(l).build();
            }
        }
        podCgroupParent(sent, r, unsupported);
        return new Answer<>(built, unsupported);
    }

    /**
     * A {@code PreUpdateContainerResources} answer as an update of the container: the resources
     * that differ from what was sent (empty when none does). Annotations, environment and {@code
     * oom_score_adj} cannot be carried (NRI's updates have only resources).
     */
    public static Answer<LinuxResources> resourceUpdate(
            ContainerResourceHookRequest sent, ContainerResourceHookResponse r) {
        LinuxResources.Builder res = LinuxResources.newBuilder();
        List<String> unsupported = new ArrayList<>();
        if (r.hasContainerResources()) {
            changedResources(sent.getContainerResources(), r.getContainerResources(), res);
            long oom = r.getContainerResources().getOomScoreAdj();
            if (oom != 0 && oom != sent.getContainerResources().getOomScoreAdj()) {
                unsupported.add(
                        "container_resources.oom_score_adj (NRI's container updates have no"
                                + " oom_score_adj)");
            }
        }
        r.getContainerAnnotationsMap()
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getContainerAnnotationsMap().get(k))) {
                                unsupported.add(
                                        "container_annotations "
                                                + k
                                                + " (NRI's container updates have no annotations)");
                            }
                        });
        r.getContainerEnvsMap()
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getContainerEnvsMap().get(k))) {
                                unsupported.add(
                                        "container_envs "
                                                + k
                                                + " (a created container's environment cannot"
                                                + " change)");
                            }
                        });
        podCgroupParent(sent, r, unsupported);
        return new Answer<>(res.build(), unsupported);
    }

    private static void podCgroupParent(
            ContainerResourceHookRequest sent,
            ContainerResourceHookResponse r,
            List<String> unsupported) {
        if (!r.getPodCgroupParent().isEmpty()
                && !r.getPodCgroupParent().equals(sent.getPodCgroupParent())) {
            unsupported.add(
                    "pod_cgroup_parent (NRI's model changes no pod at a container's events)");
        }
    }

    /** The fields of {@code answer} that are set and differ from {@code sent}, as NRI's. */
    private static void changedResources(
            io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources sent,
            io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources answer,
            LinuxResources.Builder out) {
        LinuxCPU.Builder cpu = LinuxCPU.newBuilder();
        if (answer.getCpuPeriod() != 0 && answer.getCpuPeriod() != sent.getCpuPeriod()) {
            cpu.setPeriod(OptionalUInt64.newBuilder().setValue(answer.getCpuPeriod()));
        }
        if (answer.getCpuQuota() != 0 && answer.getCpuQuota() != sent.getCpuQuota()) {
            cpu.setQuota(OptionalInt64.newBuilder().setValue(answer.getCpuQuota()));
        }
        if (answer.getCpuShares() != 0 && answer.getCpuShares() != sent.getCpuShares()) {
            cpu.setShares(OptionalUInt64.newBuilder().setValue(answer.getCpuShares()));
        }
        if (!answer.getCpusetCpus().isEmpty()
                && !answer.getCpusetCpus().equals(sent.getCpusetCpus())) {
            cpu.setCpus(answer.getCpusetCpus());
        }
        if (!answer.getCpusetMems().isEmpty()
                && !answer.getCpusetMems().equals(sent.getCpusetMems())) {
            cpu.setMems(answer.getCpusetMems());
        }
        if (!cpu.build().equals(LinuxCPU.getDefaultInstance())) {
            out.setCpu(cpu);
        }
        LinuxMemory.Builder mem = LinuxMemory.newBuilder();
        if (answer.getMemoryLimitInBytes() != 0
                && answer.getMemoryLimitInBytes() != sent.getMemoryLimitInBytes()) {
            mem.setLimit(OptionalInt64.newBuilder().setValue(answer.getMemoryLimitInBytes()));
        }
        if (answer.getMemorySwapLimitInBytes() != 0
                && answer.getMemorySwapLimitInBytes() != sent.getMemorySwapLimitInBytes()) {
            mem.setSwap(OptionalInt64.newBuilder().setValue(answer.getMemorySwapLimitInBytes()));
        }
        if (!mem.build().equals(LinuxMemory.getDefaultInstance())) {
            out.setMemory(mem);
        }
        Map<String, Long> sentPages = new LinkedHashMap<>();
        sent.getHugepageLimitsList().forEach(h -> sentPages.put(h.getPageSize(), h.getLimit()));
        for (io.cri4j.hook.koordinator.v1alpha1.HugepageLimit h : answer.getHugepageLimitsList()) {
            Long before = sentPages.get(h.getPageSize());
            if (before == null || before != h.getLimit()) {
                out.addHugepageLimits(
                        HugepageLimit.newBuilder()
                                .setPageSize(h.getPageSize())
                                .setLimit(h.getLimit()));
            }
        }
        new TreeMap<>(answer.getUnifiedMap())
                .forEach(
                        (k, v) -> {
                            if (!v.equals(sent.getUnifiedMap().get(k))) {
                                out.putUnified(k, v);
                            }
                        });
    }

    // ---------------------------------------------------------------- Koordinator requests to NRI

    /** The pod a {@code PodSandboxHookRequest} describes (its id is not on the wire). */
    public static PodSandbox pod(PodSandboxHookRequest r) {
        LinuxPodSandbox.Builder l =
                LinuxPodSandbox.newBuilder().setCgroupParent(r.getCgroupParent());
        if (r.hasOverhead()) {
            l.setPodOverhead(nriResources(r.getOverhead()));
        }
        if (r.hasResources()) {
            l.setPodResources(nriResources(r.getResources()));
        }
        return PodSandbox.newBuilder()
                .setName(r.getPodMeta().getName())
                .setUid(r.getPodMeta().getUid())
                .setNamespace(r.getPodMeta().getNamespace())
                .setRuntimeHandler(r.getRuntimeHandler())
                .putAllLabels(r.getLabelsMap())
                .putAllAnnotations(r.getAnnotationsMap())
                .setLinux(l)
                .build();
    }

    /** The pod of a {@code ContainerResourceHookRequest}. */
    public static PodSandbox pod(ContainerResourceHookRequest r) {
        LinuxPodSandbox.Builder l =
                LinuxPodSandbox.newBuilder().setCgroupParent(r.getPodCgroupParent());
        if (r.hasPodResources()) {
            l.setPodResources(nriResources(r.getPodResources()));
        }
        return PodSandbox.newBuilder()
                .setName(r.getPodMeta().getName())
                .setUid(r.getPodMeta().getUid())
                .setNamespace(r.getPodMeta().getNamespace())
                .putAllLabels(r.getPodLabelsMap())
                .putAllAnnotations(r.getPodAnnotationsMap())
                .setLinux(l)
                .build();
    }

    /** The container of a {@code ContainerResourceHookRequest}. */
    public static Container container(ContainerResourceHookRequest r) {
        Container.Builder b =
                Container.newBuilder()
                        .setId(r.getContainerMeta().getId())
                        .setName(r.getContainerMeta().getName())
                        .putAllAnnotations(r.getContainerAnnotationsMap());
        r.getContainerEnvsMap().forEach((k, v) -> b.addEnv(k + "=" + v));
        if (r.hasContainerResources()) {
            b.setLinux(
                    LinuxContainer.newBuilder()
                            .setResources(nriResources(r.getContainerResources()))
                            .setOomScoreAdj(
                                    OptionalInt.newBuilder()
                                            .setValue(r.getContainerResources().getOomScoreAdj())));
        }
        return b.build();
    }

    /** NRI's resources for Koordinator's, every field present (as containerd converts CRI's). */
    public static LinuxResources nriResources(
            io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources r) {
        LinuxMemory.Builder mem =
                LinuxMemory.newBuilder()
                        .setLimit(OptionalInt64.newBuilder().setValue(r.getMemoryLimitInBytes()));
        if (r.getMemorySwapLimitInBytes() != 0) {
            mem.setSwap(OptionalInt64.newBuilder().setValue(r.getMemorySwapLimitInBytes()));
        }
        LinuxResources.Builder b =
                LinuxResources.newBuilder()
                        .setCpu(
                                LinuxCPU.newBuilder()
                                        .setShares(
                                                OptionalUInt64.newBuilder()
                                                        .setValue(r.getCpuShares()))
                                        .setQuota(
                                                OptionalInt64.newBuilder()
                                                        .setValue(r.getCpuQuota()))
                                        .setPeriod(
                                                OptionalUInt64.newBuilder()
                                                        .setValue(r.getCpuPeriod()))
                                        .setCpus(r.getCpusetCpus())
                                        .setMems(r.getCpusetMems()))
                        .setMemory(mem)
                        .putAllUnified(r.getUnifiedMap());
        r.getHugepageLimitsList()
                .forEach(
                        h ->
                                b.addHugepageLimits(
                                        HugepageLimit.newBuilder()
                                                .setPageSize(h.getPageSize())
                                                .setLimit(h.getLimit())));
        return b.build();
    }

    // ---------------------------------------------------------------- NRI answers to Koordinator

    /** A merged pod adjustment as Koordinator's answer. */
    public static PodSandboxHookResponse podResponse(PodSandboxAdjustment a) {
        PodSandboxHookResponse.Builder b =
                PodSandboxHookResponse.newBuilder()
                        .putAllLabels(a.labels())
                        .putAllAnnotations(a.annotations())
                        .setCgroupParent(a.cgroupParent());
        if (!a.resources().equals(LinuxResources.getDefaultInstance())) {
            b.setResources(koordResources(a.resources(), null));
        }
        return b.build();
    }

    /**
     * A merged {@code CreateContainer} answer as Koordinator's: annotations, environment,
     * resources and {@code oom_score_adj}. The rest (removals, mounts, devices, CDI devices,
     * arguments, and what CRI has no field for either) is listed per hook as unsupported.
     */
    public static Adjusted<ContainerResourceHookResponse> containerResponse(
            ContainerCreation creation) {
        ContainerAdjustment a = creation.result().adjustment();
        List<UnsupportedAdjustment> out = new ArrayList<>();
        ContainerResourceHookResponse.Builder b = ContainerResourceHookResponse.newBuilder();
        a.getAnnotationsMap()
                .forEach(
                        (k, v) -> {
                            if (Adjustments.isMarkedForRemoval(k)) {
                                String key = Adjustments.clearRemovalMarker(k);
                                out.add(
                                        new UnsupportedAdjustment(
                                                owner(creation, Field.Annotations, key),
                                                "Annotations -" + key,
                                                "Koordinator's protocol cannot remove an annotation"));
                            } else {
                                b.putContainerAnnotations(k, v);
                            }
                        });
        for (KeyValue kv : a.getEnvList()) {
            if (Adjustments.isMarkedForRemoval(kv.getKey())) {
                String key = Adjustments.clearRemovalMarker(kv.getKey());
                out.add(
                        new UnsupportedAdjustment(
                                owner(creation, Field.Env, key),
                                "Env -" + key,
                                "Koordinator's protocol cannot remove a variable"));
            } else {
                b.putContainerEnvs(kv.getKey(), kv.getValue());
            }
        }
        for (Mount m : a.getMountsList()) {
            String dest = Adjustments.clearRemovalMarker(m.getDestination());
            out.add(
                    new UnsupportedAdjustment(
                            owner(creation, Field.Mounts, dest),
                            "Mounts " + dest,
                            "Koordinator's protocol has no mounts"));
        }
        for (CDIDevice d : a.getCDIDevicesList()) {
            out.add(
                    new UnsupportedAdjustment(
                            owner(creation, Field.CdiDevices, d.getName()),
                            "CdiDevices " + d.getName(),
                            "Koordinator's protocol has no CDI devices"));
        }
        if (a.getArgsCount() > 0) {
            out.add(
                    new UnsupportedAdjustment(
                            owner(creation, Field.Args, null),
                            "Args",
                            "Koordinator's protocol has no command line"));
        }
        LinuxContainerAdjustment l = a.getLinux();
        for (LinuxDevice d : l.getDevicesList()) {
            String path = Adjustments.clearRemovalMarker(d.getPath());
            out.add(
                    new UnsupportedAdjustment(
                            owner(creation, Field.Devices, path),
                            "Devices " + path,
                            "Koordinator's protocol has no devices"));
        }
        if (l.hasResources() || l.hasOomScoreAdj()) {
            b.setContainerResources(
                    koordResources(
                            l.getResources(), l.hasOomScoreAdj() ? l.getOomScoreAdj() : null));
        }
        // what neither Koordinator nor CRI carries: CriAdjuster names it and its hook
        LinuxContainerAdjustment.Builder rest = l.toBuilder().clearDevices().clearOomScoreAdj();
        if (l.hasResources()) {
            LinuxResources left = withoutCarried(l.getResources());
            if (left.equals(LinuxResources.getDefaultInstance())) {
                rest.clearResources();
            } else {
                rest.setResources(left);
            }
        }
        ContainerAdjustment others =
                ContainerAdjustment.newBuilder()
                        .setHooks(a.getHooks())
                        .addAllRlimits(a.getRlimitsList())
                        .setLinux(rest)
                        .build();
        out.addAll(
                CriAdjuster.create()
                        .apply(
                                ContainerConfig.getDefaultInstance(),
                                others,
                                creation.owners(),
                                creation.container().getId())
                        .unsupported());
        return new Adjusted<>(b.build(), out);
    }

    /**
     * An {@code UpdateContainer} answer as Koordinator's: the update of {@code containerId} as its
     * resources. Updates of other containers and evictions cannot be carried.
     */
    public static Adjusted<ContainerResourceHookResponse> updateResponse(
            io.cri4j.hook.HookResult result, String containerId) {
        ContainerResourceHookResponse.Builder b = ContainerResourceHookResponse.newBuilder();
        List<UnsupportedAdjustment> out = new ArrayList<>();
        for (ContainerUpdate u : result.updates()) {
            if (u.getContainerId().equals(containerId)) {
                b.setContainerResources(koordResources(u.getLinux().getResources(), null));
            } else {
                out.add(
                        new UnsupportedAdjustment(
                                "",
                                "update of container " + u.getContainerId(),
                                "Koordinator's protocol updates only the container of the call"));
            }
        }
        result.evictions()
                .forEach(
                        e ->
                                out.add(
                                        new UnsupportedAdjustment(
                                                "",
                                                "eviction of container " + e.getContainerId(),
                                                "Koordinator's protocol has no evictions")));
        return new Adjusted<>(b.build(), out);
    }

    private static String owner(ContainerCreation c, Field f, String key) {
        String o = (key == null ? c.owner(f) : c.owner(f, key)).orElse("");
        return Adjustments.clearRemovalMarker(o);
    }

    /** {@code r} without the fields Koordinator's message has. */
    private static LinuxResources withoutCarried(LinuxResources r) {
        LinuxResources.Builder b = r.toBuilder().clearHugepageLimits().clearUnified();
        LinuxCPU.Builder cpu =
                r.getCpu().toBuilder()
                        .clearShares()
                        .clearQuota()
                        .clearPeriod()
                        .clearCpus()
                        .clearMems();
        LinuxMemory.Builder mem = r.getMemory().toBuilder().clearLimit().clearSwap();
        if (cpu.build().equals(LinuxCPU.getDefaultInstance())) {
            b.clearCpu();
        } else {
            b.setCpu(cpu);
        }
        if (mem.build().equals(LinuxMemory.getDefaultInstance())) {
            b.clearMemory();
        } else {
            b.setMemory(mem);
        }
        return b.build();
    }
}
