package io.cri4j.hook.internal;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.PodSandboxStatusRequest;
import io.cri4j.cri.v1.PodSandboxStatusResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What hooks need to know about pods and containers between calls (a StartContainer request
 * only carries an id). Written only after the backend call succeeded; rebuilt from the backend's
 * lists at start.
 */
public final class CheckpointStore {
  private static final Logger LOG = LoggerFactory.getLogger(CheckpointStore.class);

  /** A pod as hooks see it ({@code overhead} and {@code resources}: LinuxPodSandboxConfig's). */
  public record Pod(String id, PodSandboxMetadata metadata, String runtimeHandler,
      Map<String, String> labels, Map<String, String> annotations, String cgroupParent,
      LinuxContainerResources resources, LinuxContainerResources overhead) {
    public Pod {
      labels = Map.copyOf(labels);
      annotations = Map.copyOf(annotations);
    }

    /** A pod whose overhead is not known. */
    public Pod(String id, PodSandboxMetadata metadata, String runtimeHandler,
        Map<String, String> labels, Map<String, String> annotations, String cgroupParent,
        LinuxContainerResources resources) {
      this(id, metadata, runtimeHandler, labels, annotations, cgroupParent, resources,
          LinuxContainerResources.getDefaultInstance());
    }
  }

  /**
   * A container as hooks see it; {@code envs} is its environment as created (ContainerConfig's
   * list, in order).
   */
  public record Ctr(String id, String podId, ContainerMetadata metadata,
      Map<String, String> annotations, LinuxContainerResources resources, List<KeyValue> envs) {
    public Ctr {
      annotations = Map.copyOf(annotations);
      envs = List.copyOf(envs);
    }

    /** A container whose environment is not known. */
    public Ctr(String id, String podId, ContainerMetadata metadata,
        Map<String, String> annotations, LinuxContainerResources resources) {
      this(id, podId, metadata, annotations, resources, List.of());
    }
  }

  private final Map<String, Pod> pods = new ConcurrentHashMap<>();
  private final Map<String, Ctr> containers = new ConcurrentHashMap<>();

  public void putPod(Pod pod) {
    pods.put(pod.id(), pod);
  }

  public void putContainer(Ctr c) {
    containers.put(c.id(), c);
  }

  public Optional<Pod> pod(String id) {
    return Optional.ofNullable(pods.get(id));
  }

  public Optional<Ctr> container(String id) {
    return Optional.ofNullable(containers.get(id));
  }

  public void removePod(String id) {
    pods.remove(id);
    containers.values().removeIf(c -> c.podId().equals(id));
  }

  public void removeContainer(String id) {
    containers.remove(id);
  }

  public int podCount() {
    return pods.size();
  }

  public int containerCount() {
    return containers.size();
  }

  /**
   * Rebuilds the store from the backend: every pod from ListPodSandbox, every container from
   * ListContainers. What the lists lack is read from the status calls: a container's resources
   * from ContainerStatus (its {@code resources} field, else the config in the verbose
   * {@code info}, as containerd reports it), its environment from that config, a pod's cgroup
   * parent, resources and overhead from the config in PodSandboxStatus's verbose {@code info}.
   * Entries are replaced, not cleared, so entries written concurrently stay.
   */
  public void rebuild(RuntimeServiceGrpc.RuntimeServiceBlockingStub backend) {
    RuntimeServiceGrpc.RuntimeServiceBlockingStub s = backend.withDeadlineAfter(10, TimeUnit.SECONDS);
    List<PodSandbox> podList = s.listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
        .getItemsList();
    for (PodSandbox p : podList) {
      String cgroupParent = "";
      LinuxContainerResources res = LinuxContainerResources.getDefaultInstance();
      LinuxContainerResources overhead = res;
      try {
        PodSandboxStatusResponse st = backend.withDeadlineAfter(5, TimeUnit.SECONDS)
            .podSandboxStatus(PodSandboxStatusRequest.newBuilder().setPodSandboxId(p.getId())
                .setVerbose(true).build());
        JsonObject linux = linuxOfVerboseConfig(st.getInfoMap());
        if (linux != null) {
          cgroupParent = str(linux, "cgroup_parent");
          res = resources(linux.getAsJsonObject("resources"));
          overhead = resources(linux.getAsJsonObject("overhead"));
        }
      } catch (RuntimeException e) {
        LOG.warn("rebuild: no status for pod {}: {}", p.getId(), e.getMessage());
      }
      pods.put(p.getId(), new Pod(p.getId(), p.getMetadata(), p.getRuntimeHandler(),
          p.getLabelsMap(), p.getAnnotationsMap(), cgroupParent, res, overhead));
    }
    List<Container> ctrList = s.listContainers(ListContainersRequest.getDefaultInstance())
        .getContainersList();
    for (Container c : ctrList) {
      LinuxContainerResources res = LinuxContainerResources.getDefaultInstance();
      List<KeyValue> envs = List.of();
      try {
        ContainerStatusResponse st = backend.withDeadlineAfter(5, TimeUnit.SECONDS)
            .containerStatus(ContainerStatusRequest.newBuilder().setContainerId(c.getId())
                .setVerbose(true).build());
        if (st.getStatus().hasResources() && st.getStatus().getResources().hasLinux()) {
          res = st.getStatus().getResources().getLinux();
        } else {
          JsonObject linux = linuxOfVerboseConfig(st.getInfoMap());
          if (linux != null) {
            res = resources(linux.getAsJsonObject("resources"));
          }
        }
        envs = envsOfVerboseConfig(st.getInfoMap());
      } catch (RuntimeException e) {
        LOG.warn("rebuild: no status for container {}: {}", c.getId(), e.getMessage());
      }
      containers.put(c.getId(), new Ctr(c.getId(), c.getPodSandboxId(), c.getMetadata(),
          c.getAnnotationsMap(), res, envs));
    }
    LOG.info("checkpoint store rebuilt from the backend: {} pods, {} containers", podList.size(),
        ctrList.size());
  }

  /** {@code info["info"].config.linux} of a verbose status (containerd's layout), or null. */
  static JsonObject linuxOfVerboseConfig(Map<String, String> info) {
    JsonObject config = verboseConfig(info);
    JsonElement linux = config == null ? null : config.get("linux");
    return linux != null && linux.isJsonObject() ? linux.getAsJsonObject() : null;
  }

  /**
   * {@code info["info"].config.envs} of a verbose container status (containerd's layout: a list
   * of {@code {"key": .., "value": ..}}), in order; empty when there is none.
   */
  static List<KeyValue> envsOfVerboseConfig(Map<String, String> info) {
    JsonObject config = verboseConfig(info);
    JsonElement envs = config == null ? null : config.get("envs");
    if (envs == null || !envs.isJsonArray()) {
      return List.of();
    }
    List<KeyValue> out = new java.util.ArrayList<>();
    for (JsonElement e : envs.getAsJsonArray()) {
      if (e.isJsonObject() && !str(e.getAsJsonObject(), "key").isEmpty()) {
        out.add(KeyValue.newBuilder().setKey(str(e.getAsJsonObject(), "key"))
            .setValue(com.google.protobuf.ByteString.copyFromUtf8(str(e.getAsJsonObject(),
                "value"))).build());
      }
    }
    return out;
  }

  /** {@code info["info"].config} of a verbose status (containerd's layout), or null. */
  private static JsonObject verboseConfig(Map<String, String> info) {
    String json = info.get("info");
    if (json == null) {
      return null;
    }
    try {
      JsonElement root = JsonParser.parseString(json);
      if (!root.isJsonObject()) {
        return null;
      }
      JsonElement config = root.getAsJsonObject().get("config");
      return config != null && config.isJsonObject() ? config.getAsJsonObject() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** CRI resources from their JSON form (Go's encoding of the CRI structs: snake_case). */
  static LinuxContainerResources resources(JsonObject r) {
    LinuxContainerResources.Builder b = LinuxContainerResources.newBuilder();
    if (r == null) {
      return b.build();
    }
    b.setCpuPeriod(num(r, "cpu_period")).setCpuQuota(num(r, "cpu_quota"))
        .setCpuShares(num(r, "cpu_shares")).setMemoryLimitInBytes(num(r, "memory_limit_in_bytes"))
        .setOomScoreAdj(num(r, "oom_score_adj")).setCpusetCpus(str(r, "cpuset_cpus"))
        .setCpusetMems(str(r, "cpuset_mems"))
        .setMemorySwapLimitInBytes(num(r, "memory_swap_limit_in_bytes"));
    JsonElement unified = r.get("unified");
    if (unified != null && unified.isJsonObject()) {
      unified.getAsJsonObject().entrySet().forEach(e -> {
        if (e.getValue().isJsonPrimitive()) {
          b.putUnified(e.getKey(), e.getValue().getAsString());
        }
      });
    }
    JsonElement pages = r.get("hugepage_limits");
    if (pages != null && pages.isJsonArray()) {
      for (JsonElement h : pages.getAsJsonArray()) {
        if (h.isJsonObject()) {
          b.addHugepageLimitsBuilder().setPageSize(str(h.getAsJsonObject(), "page_size"))
              .setLimit(num(h.getAsJsonObject(), "limit"));
        }
      }
    }
    return b.build();
  }

  private static long num(JsonObject o, String key) {
    JsonElement e = o.get(key);
    try {
      return e != null && e.isJsonPrimitive() ? e.getAsLong() : 0;
    } catch (NumberFormatException ex) {
      return 0;
    }
  }

  private static String str(JsonObject o, String key) {
    JsonElement e = o.get(key);
    return e != null && e.isJsonPrimitive() ? e.getAsString() : "";
  }
}
