package io.cri4j.hook.internal;

import io.cri4j.cri.v1.Container;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.ContainerStatusRequest;
import io.cri4j.cri.v1.ContainerStatusResponse;
import io.cri4j.cri.v1.LinuxContainerResources;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PodSandboxMetadata;
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

  /** A pod as hooks see it. */
  public record Pod(String id, PodSandboxMetadata metadata, String runtimeHandler,
      Map<String, String> labels, Map<String, String> annotations, String cgroupParent,
      LinuxContainerResources resources) {
    public Pod {
      labels = Map.copyOf(labels);
      annotations = Map.copyOf(annotations);
    }
  }

  /** A container as hooks see it. */
  public record Ctr(String id, String podId, ContainerMetadata metadata,
      Map<String, String> annotations, LinuxContainerResources resources) {
    public Ctr {
      annotations = Map.copyOf(annotations);
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
   * ListContainers with its resources from ContainerStatus. Entries are replaced, not cleared, so
   * entries written concurrently stay.
   */
  public void rebuild(RuntimeServiceGrpc.RuntimeServiceBlockingStub backend) {
    RuntimeServiceGrpc.RuntimeServiceBlockingStub s = backend.withDeadlineAfter(10, TimeUnit.SECONDS);
    List<PodSandbox> podList = s.listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
        .getItemsList();
    for (PodSandbox p : podList) {
      pods.put(p.getId(), new Pod(p.getId(), p.getMetadata(), p.getRuntimeHandler(),
          p.getLabelsMap(), p.getAnnotationsMap(), "", LinuxContainerResources.getDefaultInstance()));
    }
    List<Container> ctrList = s.listContainers(ListContainersRequest.getDefaultInstance())
        .getContainersList();
    for (Container c : ctrList) {
      LinuxContainerResources res = LinuxContainerResources.getDefaultInstance();
      try {
        ContainerStatusResponse st = backend.withDeadlineAfter(5, TimeUnit.SECONDS)
            .containerStatus(ContainerStatusRequest.newBuilder().setContainerId(c.getId()).build());
        res = st.getStatus().getResources().getLinux();
      } catch (RuntimeException e) {
        LOG.warn("rebuild: no status for container {}: {}", c.getId(), e.getMessage());
      }
      containers.put(c.getId(), new Ctr(c.getId(), c.getPodSandboxId(), c.getMetadata(),
          c.getAnnotationsMap(), res));
    }
    LOG.info("checkpoint store rebuilt from the backend: {} pods, {} containers", podList.size(),
        ctrList.size());
  }
}
