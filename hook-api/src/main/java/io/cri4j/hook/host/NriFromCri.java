package io.cri4j.hook.host;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.LinuxContainerSecurityContext;
import io.cri4j.cri.v1.MountPropagation;
import io.cri4j.cri.v1.NamespaceMode;
import io.cri4j.cri.v1.NamespaceOption;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.hook.nri.v1alpha1.CDIDevice;
import io.cri4j.hook.nri.v1alpha1.Container;
import io.cri4j.hook.nri.v1alpha1.ContainerState;
import io.cri4j.hook.nri.v1alpha1.HugepageLimit;
import io.cri4j.hook.nri.v1alpha1.Image;
import io.cri4j.hook.nri.v1alpha1.LinuxCPU;
import io.cri4j.hook.nri.v1alpha1.LinuxContainer;
import io.cri4j.hook.nri.v1alpha1.LinuxDevice;
import io.cri4j.hook.nri.v1alpha1.LinuxMemory;
import io.cri4j.hook.nri.v1alpha1.LinuxNamespace;
import io.cri4j.hook.nri.v1alpha1.LinuxPodSandbox;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.Mount;
import io.cri4j.hook.nri.v1alpha1.OptionalFileMode;
import io.cri4j.hook.nri.v1alpha1.OptionalInt;
import io.cri4j.hook.nri.v1alpha1.OptionalInt64;
import io.cri4j.hook.nri.v1alpha1.OptionalUInt32;
import io.cri4j.hook.nri.v1alpha1.OptionalUInt64;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import io.cri4j.hook.nri.v1alpha1.SecurityProfile;
import io.cri4j.hook.nri.v1alpha1.User;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * NRI's view of pods and containers built from CRI requests, for hosts that see CRI (the CRI
 * proxy, the fake runtime), field by field as containerd's CRI plugin builds it
 * ({@code internal/cri/nri/nri_api_linux.go}), limited to what a CRI request tells:
 *
 * <ul>
 *   <li>A pod: id, name, uid, namespace, labels, annotations, runtime handler; {@code linux}:
 *       {@code pod_overhead} and {@code pod_resources} from the CRI overhead and resources,
 *       {@code cgroup_parent}, and the namespaces the pod gets from its namespace options
 *       (without paths; a host that knows them, its pid and its IPs sets them on the
 *       result).</li>
 *   <li>A container: id, pod id, name, labels, annotations, args ({@code command} then
 *       {@code args}; the image's entrypoint is not known to a CRI host), env, bind mounts,
 *       devices (numbers read from the host node), Linux resources and {@code oom_score_adj},
 *       the pod's namespaces, seccomp profile, user, CDI devices, image name. State is {@code
 *       CONTAINER_UNKNOWN} while it is being created, as containerd reports it.</li>
 * </ul>
 *
 * <p>Resources convert as containerd converts them: CPU shares, quota and period and the memory
 * limit are always present (zero when CRI leaves them zero), cpusets, hugepage limits and
 * unified entries when set; the swap limit when non-zero.
 */
public final class NriFromCri {
    private NriFromCri() {}

    /** The pod of a {@code RunPodSandbox} request, with the id the runtime gave (or will give) it. */
    public static PodSandbox pod(String podId, RunPodSandboxRequest request) {
        return pod(podId, request.getConfig(), request.getRuntimeHandler());
    }

    /** The pod of a sandbox config (e.g. {@code CreateContainerRequest.sandbox_config}). */
    public static PodSandbox pod(String podId, PodSandboxConfig config, String runtimeHandler) {
        Objects.requireNonNull(podId, "podId");
        PodSandbox.Builder b =
                PodSandbox.newBuilder()
                        .setId(podId)
                        .setName(config.getMetadata().getName())
                        .setUid(config.getMetadata().getUid())
                        .setNamespace(config.getMetadata().getNamespace())
                        .setRuntimeHandler(
                                Objects.requireNonNull(runtimeHandler, "runtimeHandler"));
        if (config.getLabelsCount() > 0) {
            b.putAllLabels(config.getLabelsMap());
        }
        if (config.getAnnotationsCount() > 0) {
            b.putAllAnnotations(config.getAnnotationsMap());
        }
        LinuxPodSandbox.Builder l =
                LinuxPodSandbox.newBuilder()
                        .setCgroupParent(config.getLinux().getCgroupParent())
                        .addAllNamespaces(
                                namespaces(
                                        config.getLinux()
                                                .getSecurityContext()
                                                .getNamespaceOptions()));
        if (config.getLinux().hasOverhead()) {
            l.setPodOverhead(resources(config.getLinux().getOverhead()));
        }
        if (config.getLinux().hasResources()) {
            l.setPodResources(resources(config.getLinux().getResources()));
        }
        return b.setLinux(l).build();
    }

    /**
     * The container of a {@code CreateContainer} request. A CRI runtime assigns the id in its
     * answer; a proxy passes a provisional id and tells hooks the real one from then on.
     *
     * @param containerId the container's id
     * @param request the request; its {@code pod_sandbox_id} becomes the container's pod id
     * @param devices where device numbers are read from
     */
    public static Container container(
            String containerId, CreateContainerRequest request, DeviceNodes devices) {
        return container(
                containerId,
                request.getPodSandboxId(),
                request.getConfig(),
                request.getSandboxConfig().getLinux().getSecurityContext().getNamespaceOptions(),
                devices);
    }

    /**
     * A container from its CRI config.
     *
     * @param namespaces the pod's namespace options (for the container's namespaces)
     */
    public static Container container(
            String containerId,
            String podId,
            ContainerConfig config,
            NamespaceOption namespaces,
            DeviceNodes devices) {
        Objects.requireNonNull(containerId, "containerId");
        Container.Builder b =
                Container.newBuilder()
                        .setId(containerId)
                        .setPodSandboxId(Objects.requireNonNull(podId, "podId"))
                        .setName(config.getMetadata().getName())
                        .setState(ContainerState.CONTAINER_UNKNOWN);
        if (config.getLabelsCount() > 0) {
            b.putAllLabels(config.getLabelsMap());
        }
        if (config.getAnnotationsCount() > 0) {
            b.putAllAnnotations(config.getAnnotationsMap());
        }
        if (config.getCommandCount() > 0) {
            b.addAllArgs(config.getCommandList());
        }
        if (config.getArgsCount() > 0) {
            b.addAllArgs(config.getArgsList());
        }
        config.getEnvsList()
                .forEach(kv -> b.addEnv(kv.getKey() + "=" + kv.getValue().toStringUtf8()));
        config.getMountsList().forEach(m -> b.addMounts(mount(m)));
        config.getCDIDevicesList()
                .forEach(d -> b.addCDIDevices(CDIDevice.newBuilder().setName(d.getName())));
        if (!config.getImage().getImage().isEmpty()) {
            b.setImage(Image.newBuilder().setName(config.getImage().getImage()));
        }
        LinuxContainer.Builder l = LinuxContainer.newBuilder();
        for (io.cri4j.cri.v1.Device d : config.getDevicesList()) {
            l.addDevices(device(d, devices));
        }
        if (config.getLinux().hasResources()) {
            LinuxContainerResources r = config.getLinux().getResources();
            l.setResources(resources(r));
            l.setOomScoreAdj(OptionalInt.newBuilder().setValue(r.getOomScoreAdj()));
        }
        l.addAllNamespaces(namespaces(namespaces));
        LinuxContainerSecurityContext sc = config.getLinux().getSecurityContext();
        if (sc.hasSeccomp()) {
            l.setSeccompProfile(
                    SecurityProfile.newBuilder()
                            .setProfileTypeValue(sc.getSeccomp().getProfileTypeValue())
                            .setLocalhostRef(sc.getSeccomp().getLocalhostRef()));
        }
        if (sc.hasRunAsUser() || sc.hasRunAsGroup() || sc.getSupplementalGroupsCount() > 0) {
            User.Builder u =
                    User.newBuilder()
                            .setUid((int) sc.getRunAsUser().getValue())
                            .setGid((int) sc.getRunAsGroup().getValue());
            sc.getSupplementalGroupsList().forEach(g -> u.addAdditionalGids(g.intValue()));
            b.setUser(u);
        }
        return b.setLinux(l).build();
    }

    /** NRI's resources for CRI's, as containerd's {@code fromCRILinuxResources}. */
    public static LinuxResources resources(LinuxContainerResources c) {
        LinuxMemory.Builder mem =
                LinuxMemory.newBuilder()
                        .setLimit(OptionalInt64.newBuilder().setValue(c.getMemoryLimitInBytes()));
        if (c.getMemorySwapLimitInBytes() != 0) {
            mem.setSwap(OptionalInt64.newBuilder().setValue(c.getMemorySwapLimitInBytes()));
        }
        LinuxResources.Builder r =
                LinuxResources.newBuilder()
                        .setCpu(
                                LinuxCPU.newBuilder()
                                        .setShares(
                                                OptionalUInt64.newBuilder()
                                                        .setValue(c.getCpuShares()))
                                        .setQuota(
                                                OptionalInt64.newBuilder()
                                                        .setValue(c.getCpuQuota()))
                                        .setPeriod(
                                                OptionalUInt64.newBuilder()
                                                        .setValue(c.getCpuPeriod()))
                                        .setCpus(c.getCpusetCpus())
                                        .setMems(c.getCpusetMems()))
                        .setMemory(mem)
                        .putAllUnified(c.getUnifiedMap());
        c.getHugepageLimitsList()
                .forEach(
                        h ->
                                r.addHugepageLimits(
                                        HugepageLimit.newBuilder()
                                                .setPageSize(h.getPageSize())
                                                .setLimit(h.getLimit())));
        return r.build();
    }

    /**
     * The Linux namespaces a pod's containers get from CRI namespace options: {@code mount}
     * always; {@code network} and {@code uts} unless the pod uses the node's network; {@code ipc}
     * and {@code pid} unless they are the node's; {@code user} for a pod user namespace. Paths are
     * not known from CRI and left empty. The list is immutable.
     */
    public static List<LinuxNamespace> namespaces(NamespaceOption o) {
        int key =
                (o.getPid() != NamespaceMode.NODE ? 1 : 0)
                        | (o.getIpc() != NamespaceMode.NODE ? 2 : 0)
                        | (o.getNetwork() != NamespaceMode.NODE ? 4 : 0)
                        | (o.hasUsernsOptions()
                                        && o.getUsernsOptions().getMode() == NamespaceMode.POD
                                ? 8
                                : 0);
        return NAMESPACES.get(key);
    }

    /** The namespace lists, by which of pid, ipc, network and user (bits 0-3) are the pod's. */
    private static final List<List<LinuxNamespace>> NAMESPACES = namespaceLists();

    private static List<List<LinuxNamespace>> namespaceLists() {
        List<List<LinuxNamespace>> all = new ArrayList<>();
        for (int key = 0; key < 16; key++) {
            all.add(
                    List.copyOf(
                            namespaces(
                                    (key & 1) != 0,
                                    (key & 2) != 0,
                                    (key & 4) != 0,
                                    (key & 8) != 0)));
        }
        return List.copyOf(all);
    }

    private static List<LinuxNamespace> namespaces(
            boolean pid, boolean ipc, boolean network, boolean user) {
        List<LinuxNamespace> out = new ArrayList<>();
        if (pid) {
            out.add(ns("pid"));
        }
        if (ipc) {
            out.add(ns("ipc"));
        }
        if (network) {
            out.add(ns("uts"));
        }
        out.add(ns("mount"));
        if (network) {
            out.add(ns("network"));
        }
        if (user) {
            out.add(ns("user"));
        }
        return out;
    }

    /** An NRI mount for a CRI bind mount, with the options containerd gives it. */
    public static Mount mount(io.cri4j.cri.v1.Mount m) {
        Mount.Builder b =
                Mount.newBuilder()
                        .setDestination(m.getContainerPath())
                        .setSource(m.getHostPath())
                        .setType("bind")
                        .addOptions("rbind");
        b.addOptions(
                m.getPropagation() == MountPropagation.PROPAGATION_BIDIRECTIONAL
                        ? "rshared"
                        : m.getPropagation() == MountPropagation.PROPAGATION_HOST_TO_CONTAINER
                                ? "rslave"
                                : "rprivate");
        b.addOptions(m.getReadonly() ? "ro" : "rw");
        if (m.getRecursiveReadOnly()) {
            b.addOptions("rro");
        }
        b.addAllOptions(m.getMountOptionsList());
        return b.build();
    }

    /** An NRI device for a CRI device: type and numbers from the host node, if it is one. */
    public static LinuxDevice device(io.cri4j.cri.v1.Device d, DeviceNodes devices) {
        LinuxDevice.Builder b =
                LinuxDevice.newBuilder()
                        .setPath(
                                d.getContainerPath().isEmpty()
                                        ? d.getHostPath()
                                        : d.getContainerPath());
        devices.stat(Path.of(d.getHostPath()))
                .ifPresent(
                        n ->
                                b.setType(n.type())
                                        .setMajor(n.major())
                                        .setMinor(n.minor())
                                        .setFileMode(
                                                OptionalFileMode.newBuilder()
                                                        .setValue(n.fileMode()))
                                        .setUid(OptionalUInt32.newBuilder().setValue(n.uid()))
                                        .setGid(OptionalUInt32.newBuilder().setValue(n.gid())));
        return b.build();
    }

    private static LinuxNamespace ns(String type) {
        return LinuxNamespace.newBuilder().setType(type).build();
    }
}
