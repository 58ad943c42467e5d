package io.cri4j.hook.internal;

import io.cri4j.hook.HookEvent;
import io.cri4j.hook.PodSandboxAdjustment;
import io.cri4j.hook.internal.ResourceMerge.Claim;
import io.cri4j.hook.nri.v1alpha1.LinuxResources;
import io.cri4j.hook.nri.v1alpha1.PodSandbox;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Merges the {@link PodSandboxAdjustment}s of the hooks of one {@code AdjustPodSandbox} event in
 * their order, with NRI's conflict rule: each label, annotation, the cgroup parent and each
 * resource field may be set by one hook; each hook sees the pod as earlier hooks adjusted it
 * (labels, annotations, {@code linux.cgroup_parent}, {@code linux.pod_resources}).
 */
public final class PodMerge {
    private final Owners owners = new Owners(HookEvent.ADJUST_POD_SANDBOX);
    private final PodSandbox.Builder pod;
    private final String id;
    private final Map<String, String> labels = new LinkedHashMap<>();
    private final Map<String, String> annotations = new LinkedHashMap<>();
    private String cgroupParent = "";
    private final LinuxResources.Builder resources = LinuxResources.newBuilder();

    /** A merge for {@code pod}. */
    public PodMerge(PodSandbox pod) {
        this.pod = pod.toBuilder();
        this.id = pod.getId().isEmpty() ? pod.getName() : pod.getId();
        owners.describe(
                id, "pod \"" + (pod.getName().isEmpty() ? pod.getId() : pod.getName()) + "\"");
    }

    /** Applies one hook's adjustment; throws {@link io.cri4j.hook.HookConflictException}. */
    public void apply(String hook, PodSandboxAdjustment a) {
        a.labels().keySet().forEach(k -> owners.claim(id, "Labels", k, hook));
        a.annotations().keySet().forEach(k -> owners.claim(id, "Annotations", k, hook));
        if (!a.cgroupParent().isEmpty()) {
            owners.claim(id, "CgroupParent", hook);
        }
        List<Claim> claims = ResourceMerge.claims(a.resources());
        for (Claim c : claims) {
            if (c.key().isEmpty()) {
                owners.claim(id, c.field(), hook);
            } else {
                owners.claim(id, c.field(), c.key(), hook);
            }
        }
        labels.putAll(a.labels());
        pod.putAllLabels(a.labels());
        annotations.putAll(a.annotations());
        pod.putAllAnnotations(a.annotations());
        if (!a.cgroupParent().isEmpty()) {
            cgroupParent = a.cgroupParent();
            pod.getLinuxBuilder().setCgroupParent(cgroupParent);
        }
        if (!a.resources().equals(LinuxResources.getDefaultInstance())) {
            ResourceMerge.apply(a.resources(), resources);
            ResourceMerge.apply(a.resources(), pod.getLinuxBuilder().getPodResourcesBuilder());
        }
    }

    /** The pod as the hooks adjusted it. */
    public PodSandbox pod() {
        return pod.build();
    }

    /** The merged adjustment. */
    public PodSandboxAdjustment result() {
        return new PodSandboxAdjustment(labels, annotations, cgroupParent, resources.build());
    }
}
