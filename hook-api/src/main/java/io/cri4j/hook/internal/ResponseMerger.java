package io.cri4j.hook.internal;

import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.Mount;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConflict;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.HugepageLimit;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Merges the responses of several hooks of one point field by field. Only fields a hook sets
 * count (zero values mean "not specified"); the first hook to set a field owns it, a later hook
 * setting it to a different value is a conflict.
 */
public final class ResponseMerger {
  private final HookPoint point;
  private final Consumer<HookConflict> listener;
  private final Map<String, Owner> owners = new HashMap<>();

  private final Map<String, String> labels = new LinkedHashMap<>();
  private final Map<String, String> annotations = new LinkedHashMap<>();
  private String cgroupParent = "";
  private final LinuxContainerResources.Builder resources = LinuxContainerResources.newBuilder();
  private boolean resourcesSet;
  private final Map<String, HugepageLimit> hugepages = new LinkedHashMap<>();
  private final Map<String, KeyValue> envs = new LinkedHashMap<>();
  private final Map<String, Mount> mounts = new LinkedHashMap<>();
  private final Map<String, Device> devices = new LinkedHashMap<>();

  private record Owner(String hook, String value) {}

  public ResponseMerger(HookPoint point, Consumer<HookConflict> listener) {
    this.point = point;
    this.listener = listener;
  }

  /** Claims {@code field} for {@code hook}; false if another hook owns it with another value. */
  private boolean claim(RuntimeHook hook, String field, String value) throws StatusException {
    Owner prev = owners.get(field);
    if (prev == null) {
      owners.put(field, new Owner(hook.name(), value));
      return true;
    }
    if (prev.value.equals(value)) {
      return false;
    }
    HookConflict c = new HookConflict(point, field, prev.hook, prev.value, hook.name(), value);
    listener.accept(c);
    if (hook.failurePolicy() == FailurePolicy.FAIL) {
      throw Status.FAILED_PRECONDITION.withDescription("hook conflict: " + c.describe())
          .asException();
    }
    return false;
  }

  public void mergePod(RuntimeHook hook, PodSandboxHookResponse r) throws StatusException {
    for (Map.Entry<String, String> e : r.getLabelsMap().entrySet()) {
      if (claim(hook, "labels[" + e.getKey() + "]", e.getValue())) {
        labels.put(e.getKey(), e.getValue());
      }
    }
    for (Map.Entry<String, String> e : r.getAnnotationsMap().entrySet()) {
      if (claim(hook, "annotations[" + e.getKey() + "]", e.getValue())) {
        annotations.put(e.getKey(), e.getValue());
      }
    }
    if (!r.getCgroupParent().isEmpty() && claim(hook, "cgroup_parent", r.getCgroupParent())) {
      cgroupParent = r.getCgroupParent();
    }
    if (r.hasResources()) {
      mergeResources(hook, "resources", r.getResources());
    }
  }

  public void mergeContainer(RuntimeHook hook, ContainerHookResult result) throws StatusException {
    ContainerResourceHookResponse r = result.response();
    for (Map.Entry<String, String> e : r.getContainerAnnotationsMap().entrySet()) {
      if (claim(hook, "annotations[" + e.getKey() + "]", e.getValue())) {
        annotations.put(e.getKey(), e.getValue());
      }
    }
    if (!r.getPodCgroupParent().isEmpty()
        && claim(hook, "pod_cgroup_parent", r.getPodCgroupParent())) {
      cgroupParent = r.getPodCgroupParent();
    }
    if (r.hasContainerResources()) {
      mergeResources(hook, "resources", r.getContainerResources());
    }
    for (KeyValue kv : result.environment()) {
      if (claim(hook, "env[" + kv.getKey() + "]", kv.getValue().toStringUtf8())) {
        envs.put(kv.getKey(), kv);
      }
    }
    for (Mount m : result.mounts()) {
      if (claim(hook, "mount[" + m.getContainerPath() + "]", m.toString())) {
        mounts.put(m.getContainerPath(), m);
      }
    }
    for (Device d : result.devices()) {
      if (claim(hook, "device[" + d.getContainerPath() + "]", d.toString())) {
        devices.put(d.getContainerPath(), d);
      }
    }
  }

  private void mergeResources(RuntimeHook hook, String prefix, LinuxContainerResources r)
      throws StatusException {
    String p = prefix + ".";
    if (r.getCpuPeriod() != 0 && claim(hook, p + "cpu_period", "" + r.getCpuPeriod())) {
      resources.setCpuPeriod(r.getCpuPeriod());
      resourcesSet = true;
    }
    if (r.getCpuQuota() != 0 && claim(hook, p + "cpu_quota", "" + r.getCpuQuota())) {
      resources.setCpuQuota(r.getCpuQuota());
      resourcesSet = true;
    }
    if (r.getCpuShares() != 0 && claim(hook, p + "cpu_shares", "" + r.getCpuShares())) {
      resources.setCpuShares(r.getCpuShares());
      resourcesSet = true;
    }
    if (r.getMemoryLimitInBytes() != 0
        && claim(hook, p + "memory_limit_in_bytes", "" + r.getMemoryLimitInBytes())) {
      resources.setMemoryLimitInBytes(r.getMemoryLimitInBytes());
      resourcesSet = true;
    }
    if (r.getOomScoreAdj() != 0 && claim(hook, p + "oom_score_adj", "" + r.getOomScoreAdj())) {
      resources.setOomScoreAdj(r.getOomScoreAdj());
      resourcesSet = true;
    }
    if (!r.getCpusetCpus().isEmpty() && claim(hook, p + "cpuset_cpus", r.getCpusetCpus())) {
      resources.setCpusetCpus(r.getCpusetCpus());
      resourcesSet = true;
    }
    if (!r.getCpusetMems().isEmpty() && claim(hook, p + "cpuset_mems", r.getCpusetMems())) {
      resources.setCpusetMems(r.getCpusetMems());
      resourcesSet = true;
    }
    if (r.getMemorySwapLimitInBytes() != 0 && claim(hook, p + "memory_swap_limit_in_bytes",
        "" + r.getMemorySwapLimitInBytes())) {
      resources.setMemorySwapLimitInBytes(r.getMemorySwapLimitInBytes());
      resourcesSet = true;
    }
    for (HugepageLimit h : r.getHugepageLimitsList()) {
      if (claim(hook, p + "hugepage_limits[" + h.getPageSize() + "]", "" + h.getLimit())) {
        hugepages.put(h.getPageSize(), h);
        resourcesSet = true;
      }
    }
    for (Map.Entry<String, String> e : r.getUnifiedMap().entrySet()) {
      if (claim(hook, p + "unified[" + e.getKey() + "]", e.getValue())) {
        resources.putUnified(e.getKey(), e.getValue());
        resourcesSet = true;
      }
    }
  }

  private LinuxContainerResources mergedResources() {
    return resources.clearHugepageLimits().addAllHugepageLimits(hugepages.values()).build();
  }

  public PodSandboxHookResponse podResult() {
    PodSandboxHookResponse.Builder b = PodSandboxHookResponse.newBuilder()
        .putAllLabels(labels).putAllAnnotations(annotations).setCgroupParent(cgroupParent);
    if (resourcesSet) {
      b.setResources(mergedResources());
    }
    return b.build();
  }

  /**
   * The merged container answer. Its environment is in both forms: the ordered list
   * ({@link ContainerHookResult#envs()}, which the proxy applies) and the response's
   * {@code container_envs} (what {@code HookServer} answers on the wire).
   */
  public ContainerHookResult containerResult() {
    ContainerResourceHookResponse.Builder b = ContainerResourceHookResponse.newBuilder()
        .putAllContainerAnnotations(annotations).setPodCgroupParent(cgroupParent);
    for (KeyValue kv : envs.values()) {
      b.putContainerEnvs(kv.getKey(), kv.getValue().toStringUtf8());
    }
    if (resourcesSet) {
      b.setContainerResources(mergedResources());
    }
    return new ContainerHookResult(b.build(), java.util.List.copyOf(envs.values()),
        java.util.List.copyOf(mounts.values()), java.util.List.copyOf(devices.values()));
  }
}
