package io.cri4j.hook;

import java.util.Arrays;
import java.util.Optional;

/**
 * The named points at which runtime hooks are called. The first seven are Koordinator's
 * ({@code runtime.v1alpha1.RuntimeHookService}); the others are lifecycle points containerd NRI
 * has and Koordinator lacks, served remotely by cri4j's own {@code ExtendedRuntimeHookService}.
 * {@link #configName()} is the spelling used in hook config files ({@code runtime-hooks}).
 */
public enum HookPoint {
  PRE_RUN_POD_SANDBOX("PreRunPodSandbox", "RunPodSandbox", true, Kind.POD, true),
  POST_STOP_POD_SANDBOX("PostStopPodSandbox", "StopPodSandbox", false, Kind.POD, true),
  PRE_CREATE_CONTAINER("PreCreateContainer", "CreateContainer", true, Kind.CONTAINER, true),
  PRE_START_CONTAINER("PreStartContainer", "StartContainer", true, Kind.CONTAINER, true),
  POST_START_CONTAINER("PostStartContainer", "StartContainer", false, Kind.CONTAINER, true),
  PRE_UPDATE_CONTAINER_RESOURCES(
      "PreUpdateContainerResources", "UpdateContainerResources", true, Kind.CONTAINER, true),
  POST_STOP_CONTAINER("PostStopContainer", "StopContainer", false, Kind.CONTAINER, true),
  POST_CREATE_CONTAINER("PostCreateContainer", "CreateContainer", false, Kind.CONTAINER, false),
  PRE_STOP_CONTAINER("PreStopContainer", "StopContainer", true, Kind.CONTAINER, false),
  PRE_REMOVE_CONTAINER("PreRemoveContainer", "RemoveContainer", true, Kind.CONTAINER, false),
  POST_UPDATE_CONTAINER_RESOURCES(
      "PostUpdateContainerResources", "UpdateContainerResources", false, Kind.CONTAINER, false),
  PRE_STOP_POD_SANDBOX("PreStopPodSandbox", "StopPodSandbox", true, Kind.POD, false),
  PRE_REMOVE_POD_SANDBOX("PreRemovePodSandbox", "RemovePodSandbox", true, Kind.POD, false);

  /** Whether a point concerns a pod sandbox or a container. */
  public enum Kind { POD, CONTAINER }

  private final String configName;
  private final String criMethod;
  private final boolean pre;
  private final Kind kind;
  private final boolean koordinator;

  HookPoint(String configName, String criMethod, boolean pre, Kind kind, boolean koordinator) {
    this.configName = configName;
    this.criMethod = criMethod;
    this.pre = pre;
    this.kind = kind;
    this.koordinator = koordinator;
  }

  /** The name in config files and logs, e.g. {@code PreCreateContainer}. */
  public String configName() {
    return configName;
  }

  /** The bare CRI RuntimeService method this point belongs to, e.g. {@code CreateContainer}. */
  public String criMethod() {
    return criMethod;
  }

  /** True for points called before the backend call (they may change the request). */
  public boolean isPre() {
    return pre;
  }

  /** Pod or container point. */
  public Kind kind() {
    return kind;
  }

  /** True if Koordinator's RuntimeHookService has this point. */
  public boolean isKoordinator() {
    return koordinator;
  }

  /** The gRPC method name of this point on a hook server, e.g. {@code PreCreateContainerHook}. */
  public String rpcName() {
    return configName + "Hook";
  }

  /** Looks a point up by its config name (exact spelling). */
  public static Optional<HookPoint> fromConfigName(String name) {
    return Arrays.stream(values()).filter(p -> p.configName.equals(name)).findFirst();
  }
}
