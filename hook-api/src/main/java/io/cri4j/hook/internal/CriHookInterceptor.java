package io.cri4j.hook.internal;

import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.CreateContainerResponse;
import io.cri4j.cri.v1.Device;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.LinuxContainerConfig;
import io.cri4j.cri.v1.LinuxPodSandboxConfig;
import io.cri4j.cri.v1.Mount;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.StopContainerRequest;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.UpdateContainerResourcesRequest;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.CriInterceptor;
import io.cri4j.hook.HookDispatcher;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.koordinator.v1alpha1.ContainerMetadata;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxMetadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.Set;
import java.util.function.Function;

/**
 * The interceptor that turns CRI RuntimeService calls into hook points: builds Koordinator hook
 * requests from the CRI request and the checkpoint store, dispatches, applies the merged
 * response to the CRI request, and records successful calls in the store.
 */
public final class CriHookInterceptor implements CriInterceptor {
  /** Pods with this label set to {@code "true"} are never hooked (Koordinator's label). */
  public static final String SKIP_LABEL = "runtimeproxy.koordinator.sh/skip-hookserver";

  private static final Set<String> METHODS = Set.of("RunPodSandbox", "StopPodSandbox",
      "RemovePodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer",
      "UpdateContainerResources");

  private final HookDispatcher dispatcher;
  private final CheckpointStore store;
  private final PostHooks syncPost;

  public CriHookInterceptor(HookDispatcher dispatcher, CheckpointStore store) {
    this.dispatcher = dispatcher;
    this.store = store;
    this.syncPost = new PostHooks() {
      @Override
      public void pod(HookPoint point, PodSandboxHookRequest request) throws StatusException {
        dispatcher.dispatchPod(point, request);
      }

      @Override
      public void container(HookPoint point, ContainerResourceHookRequest request)
          throws StatusException {
        dispatcher.dispatchContainer(point, request);
      }
    };
  }

  @Override
  public boolean intercepts(MethodDescriptor<?, ?> method) {
    String svc = method.getServiceName();
    return svc != null && svc.endsWith(".RuntimeService")
        && METHODS.contains(method.getBareMethodName());
  }

  @Override
  @SuppressWarnings("unchecked")
  public <ReqT, RespT> RespT interceptUnary(UnaryChain<ReqT, RespT> chain)
      throws StatusException {
    Phase phase = begin(chain.method(), chain.request());
    if (phase == null) {
      return chain.proceed(chain.request());
    }
    return (RespT) phase.complete(chain.proceed((ReqT) phase.request()));
  }

  /**
   * The part of a hooked call before the backend call: dispatches the pre point and builds the
   * request to send.
   *
   * @return the phase, or null when this interceptor leaves the method alone
   * @throws StatusException when a pre hook with policy Fail failed
   */
  public Phase begin(MethodDescriptor<?, ?> method, Object req) throws StatusException {
    Plan plan = plan(method, req);
    if (plan == null) {
      return null;
    }
    Object merged = null;
    if (plan.pre != null) {
      merged = plan.hookRequest instanceof PodSandboxHookRequest pr
          ? dispatcher.dispatchPod(plan.pre, pr)
          : dispatcher.dispatchContainer(plan.pre, (ContainerResourceHookRequest) plan.hookRequest);
    }
    return plan.then.apply(merged);
  }

  /**
   * {@link #begin} without blocking the caller: hooks that never block run on this thread, the
   * others on hook threads with their timeouts kept by {@code timer}. The phase completes on the
   * thread that finished the last hook (or the timer's); it fails with a {@link StatusException}
   * where {@link #begin} throws one.
   */
  public CompletableFuture<Phase> beginAsync(MethodDescriptor<?, ?> method, Object req,
      ScheduledExecutorService timer) {
    Plan plan = plan(method, req);
    if (plan == null || plan.pre == null) {
      return CompletableFuture.completedFuture(plan == null ? null : plan.then.apply(null));
    }
    CompletableFuture<?> merged = plan.hookRequest instanceof PodSandboxHookRequest pr
        ? dispatcher.dispatchPodAsync(plan.pre, pr, timer)
        : dispatcher.dispatchContainerAsync(plan.pre,
            (ContainerResourceHookRequest) plan.hookRequest, timer);
    return merged.thenApply(plan.then);
  }

  /**
   * What a hooked call's pre phase dispatches ({@code pre} with {@code hookRequest}, or nothing
   * when {@code pre} is null) and how the merged answer (null when nothing was dispatched)
   * becomes the phase.
   */
  private record Plan(HookPoint pre, Object hookRequest, Function<Object, Phase> then) {}

  private Plan plan(MethodDescriptor<?, ?> method, Object req) {
    if (!intercepts(method)) {
      return null;
    }
    return switch (method.getBareMethodName()) {
      case "RunPodSandbox" -> runPodSandbox((RunPodSandboxRequest) req);
      case "StopPodSandbox" -> podCall(req, ((StopPodSandboxRequest) req).getPodSandboxId(),
          HookPoint.PRE_STOP_POD_SANDBOX, HookPoint.POST_STOP_POD_SANDBOX, false);
      case "RemovePodSandbox" -> podCall(req, ((RemovePodSandboxRequest) req).getPodSandboxId(),
          HookPoint.PRE_REMOVE_POD_SANDBOX, null, true);
      case "CreateContainer" -> createContainer((CreateContainerRequest) req);
      case "StartContainer" -> containerCall(req, ((StartContainerRequest) req).getContainerId(),
          HookPoint.PRE_START_CONTAINER, HookPoint.POST_START_CONTAINER, false);
      case "StopContainer" -> containerCall(req, ((StopContainerRequest) req).getContainerId(),
          HookPoint.PRE_STOP_CONTAINER, HookPoint.POST_STOP_CONTAINER, false);
      case "RemoveContainer" -> containerCall(req, ((RemoveContainerRequest) req).getContainerId(),
          HookPoint.PRE_REMOVE_CONTAINER, null, true);
      case "UpdateContainerResources" -> update((UpdateContainerResourcesRequest) req);
      default -> null;
    };
  }

  /** One hooked call split at its backend call. */
  public static final class Phase {
    private final Object request;
    private final After after;
    private final HookDispatcher dispatcher;
    private final PostHooks syncPost;

    private Phase(Object request, After after, HookDispatcher dispatcher, PostHooks syncPost) {
      this.request = request;
      this.after = after;
      this.dispatcher = dispatcher;
      this.syncPost = syncPost;
    }

    /** The request to send to the backend (the hooks' changes applied). */
    public Object request() {
      return request;
    }

    /**
     * The part after a successful backend call: records the call in the checkpoint store and
     * dispatches the post point; returns the response for the client.
     */
    public Object complete(Object response) throws StatusException {
      return after.apply(response, syncPost);
    }

    /**
     * {@link #complete} without blocking the caller: the checkpoint store is written here and
     * the post point dispatched as {@link HookDispatcher#dispatchPodAsync} does (hooks that may
     * block on hook threads, their timeouts kept by {@code timer}, remote hooks asynchronously);
     * the response follows once the post hooks are done. Their failures are logged, never the
     * call's.
     */
    public CompletableFuture<Object> completeAsync(Object response,
        ScheduledExecutorService timer) {
      AsyncPost post = new AsyncPost(dispatcher, timer);
      Object out;
      try {
        out = after.apply(response, post);
      } catch (StatusException | RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      return post.pending == null ? CompletableFuture.completedFuture(out)
          : post.pending.thenApply(ignored -> out);
    }
  }

  private Phase phase(Object request, After after) {
    return new Phase(request, after, dispatcher, syncPost);
  }

  /** How the part after the backend call dispatches its post point. */
  interface PostHooks {
    void pod(HookPoint point, PodSandboxHookRequest request) throws StatusException;

    void container(HookPoint point, ContainerResourceHookRequest request) throws StatusException;
  }

  /** Post points dispatched without blocking; {@link #pending} is the dispatch, if any. */
  private static final class AsyncPost implements PostHooks {
    private final HookDispatcher dispatcher;
    private final ScheduledExecutorService timer;
    CompletableFuture<?> pending;

    AsyncPost(HookDispatcher dispatcher, ScheduledExecutorService timer) {
      this.dispatcher = dispatcher;
      this.timer = timer;
    }

    @Override
    public void pod(HookPoint point, PodSandboxHookRequest request) {
      pending = dispatcher.dispatchPodAsync(point, request, timer);
    }

    @Override
    public void container(HookPoint point, ContainerResourceHookRequest request) {
      pending = dispatcher.dispatchContainerAsync(point, request, timer);
    }
  }

  /** What follows a successful backend call; {@code post} dispatches its post point. */
  @FunctionalInterface
  interface After {
    Object apply(Object response, PostHooks post) throws StatusException;
  }

  // ---- pods ----

  private Plan runPodSandbox(RunPodSandboxRequest req) {
    PodSandboxConfig cfg = req.getConfig();
    PodSandboxHookRequest hr = null;
    if (!skipped(cfg.getLabelsMap()) && dispatcher.hasHooks(HookPoint.PRE_RUN_POD_SANDBOX)) {
      hr = PodSandboxHookRequest.newBuilder()
          .setPodMeta(koordPodMeta(cfg.getMetadata()))
          .setRuntimeHandler(req.getRuntimeHandler())
          .putAllLabels(cfg.getLabelsMap())
          .putAllAnnotations(cfg.getAnnotationsMap())
          .setCgroupParent(cfg.getLinux().getCgroupParent())
          .setOverhead(koordResources(cfg.getLinux().getOverhead()))
          .setResources(koordResources(cfg.getLinux().getResources()))
          .build();
    }
    return new Plan(hr == null ? null : HookPoint.PRE_RUN_POD_SANDBOX, hr,
        merged -> runPodSandboxPhase(req, merged == null ? req : req.toBuilder()
            .setConfig(applyPod(cfg, (PodSandboxHookResponse) merged)).build()));
  }

  private Phase runPodSandboxPhase(RunPodSandboxRequest req, RunPodSandboxRequest sending) {
    return phase(sending, (response, hooks) -> {
      RunPodSandboxResponse resp = (RunPodSandboxResponse) response;
      PodSandboxConfig sent = sending.getConfig();
      store.putPod(new CheckpointStore.Pod(resp.getPodSandboxId(), sent.getMetadata(),
          sending.getRuntimeHandler(), sent.getLabelsMap(), sent.getAnnotationsMap(),
          sent.getLinux().getCgroupParent(), sent.getLinux().getResources(),
          sent.getLinux().getOverhead()));
      return resp;
    });
  }

  static PodSandboxConfig applyPod(PodSandboxConfig cfg, PodSandboxHookResponse r) {
    PodSandboxConfig.Builder b = cfg.toBuilder()
        .putAllLabels(r.getLabelsMap())
        .putAllAnnotations(r.getAnnotationsMap());
    if (!r.getCgroupParent().isEmpty() || r.hasResources()) {
      LinuxPodSandboxConfig.Builder linux = cfg.getLinux().toBuilder();
      if (!r.getCgroupParent().isEmpty()) {
        linux.setCgroupParent(r.getCgroupParent());
      }
      if (r.hasResources()) {
        linux.setResources(applyResources(cfg.getLinux().getResources(), r.getResources()));
      }
      b.setLinux(linux);
    }
    return b.build();
  }

  private Plan podCall(Object req, String podId, HookPoint pre, HookPoint post,
      boolean remove) {
    Optional<CheckpointStore.Pod> pod = store.pod(podId);
    boolean hooked = pod.map(p -> !skipped(p.labels())).orElse(true)
        && (pre != null && dispatcher.hasHooks(pre) || post != null && dispatcher.hasHooks(post));
    PodSandboxHookRequest hr = hooked ? podHookRequest(podId, pod) : null;
    // a pod id request has nothing to change: the pre point's answer is not applied
    return new Plan(hooked ? pre : null, hr, merged -> phase(req, (resp, hooks) -> {
      if (remove) {
        store.removePod(podId);
      }
      if (hooked && post != null) {
        hooks.pod(post, hr);
      }
      return resp;
    }));
  }

  private static PodSandboxHookRequest podHookRequest(String podId,
      Optional<CheckpointStore.Pod> pod) {
    PodSandboxHookRequest.Builder b = PodSandboxHookRequest.newBuilder();
    if (pod.isEmpty()) {
      return b.setPodMeta(PodSandboxMetadata.newBuilder().build()).build();
    }
    CheckpointStore.Pod p = pod.get();
    return b.setPodMeta(koordPodMeta(p.metadata()))
        .setRuntimeHandler(p.runtimeHandler())
        .putAllLabels(p.labels())
        .putAllAnnotations(p.annotations())
        .setCgroupParent(p.cgroupParent())
        .setOverhead(koordResources(p.overhead()))
        .setResources(koordResources(p.resources()))
        .build();
  }

  // ---- containers ----

  private Plan createContainer(CreateContainerRequest req) {
    PodSandboxConfig sandbox = req.getSandboxConfig();
    Map<String, String> podLabels = sandbox.getLabelsMap();
    Optional<CheckpointStore.Pod> pod = store.pod(req.getPodSandboxId());
    if (podLabels.isEmpty() && pod.isPresent()) {
      podLabels = pod.get().labels();
    }
    boolean hooked = !skipped(podLabels);
    boolean post = hooked && dispatcher.hasHooks(HookPoint.POST_CREATE_CONTAINER);
    ContainerResourceHookRequest hr = null;
    if (hooked && (post || dispatcher.hasHooks(HookPoint.PRE_CREATE_CONTAINER))) {
      ContainerConfig cfg = req.getConfig();
      ContainerResourceHookRequest.Builder b = ContainerResourceHookRequest.newBuilder()
          .setPodMeta(koordPodMeta(sandbox.hasMetadata() || pod.isEmpty()
              ? sandbox.getMetadata() : pod.get().metadata()))
          .setContainerMeta(ContainerMetadata.newBuilder()
              .setName(cfg.getMetadata().getName()).setAttempt(cfg.getMetadata().getAttempt()))
          .putAllContainerAnnotations(cfg.getAnnotationsMap())
          .setContainerResources(koordResources(cfg.getLinux().getResources()))
          .putAllContainerEnvs(koordEnvs(cfg.getEnvsList()))
          .setPodResources(koordResources(sandbox.getLinux().hasResources() || pod.isEmpty()
              ? sandbox.getLinux().getResources() : pod.get().resources()))
          .putAllPodAnnotations(sandbox.getAnnotationsMap().isEmpty() && pod.isPresent()
              ? pod.get().annotations() : sandbox.getAnnotationsMap())
          .putAllPodLabels(podLabels)
          .setPodCgroupParent(sandbox.getLinux().getCgroupParent().isEmpty() && pod.isPresent()
              ? pod.get().cgroupParent() : sandbox.getLinux().getCgroupParent());
      hr = b.build();
    }
    ContainerResourceHookRequest hookRequest = hr;
    boolean pre = hr != null && dispatcher.hasHooks(HookPoint.PRE_CREATE_CONTAINER);
    return new Plan(pre ? HookPoint.PRE_CREATE_CONTAINER : null, hr, merged -> {
      CreateContainerRequest toSend = req;
      if (merged != null) {
        ContainerHookResult result = (ContainerHookResult) merged;
        CreateContainerRequest.Builder out =
            req.toBuilder().setConfig(applyContainer(req.getConfig(), result));
        String cgroupParent = result.response().getPodCgroupParent();
        if (!cgroupParent.isEmpty()) {
          // as Koordinator does: the pod's cgroup parent as the runtime sees it at create
          out.getSandboxConfigBuilder().getLinuxBuilder().setCgroupParent(cgroupParent);
        }
        toSend = out.build();
      }
      return createContainerPhase(req, toSend, post ? hookRequest : null);
    });
  }

  /** After CreateContainer: the store, and the post point with {@code hookRequest} if any. */
  private Phase createContainerPhase(CreateContainerRequest req, CreateContainerRequest toSend,
      ContainerResourceHookRequest hookRequest) {
    ContainerConfig sent = toSend.getConfig();
    return phase(toSend, (response, hooks) -> {
      CreateContainerResponse resp = (CreateContainerResponse) response;
      store.putContainer(new CheckpointStore.Ctr(resp.getContainerId(), req.getPodSandboxId(),
          sent.getMetadata(), sent.getAnnotationsMap(), sent.getLinux().getResources(),
          sent.getEnvsList()));
      if (hookRequest != null) {
        hooks.container(HookPoint.POST_CREATE_CONTAINER, hookRequest.toBuilder()
            .setContainerMeta(hookRequest.getContainerMeta().toBuilder()
                .setId(resp.getContainerId()))
            .clearContainerAnnotations().putAllContainerAnnotations(sent.getAnnotationsMap())
            .setContainerResources(koordResources(sent.getLinux().getResources()))
            .clearContainerEnvs().putAllContainerEnvs(koordEnvs(sent.getEnvsList()))
            .setPodCgroupParent(toSend.getSandboxConfig().getLinux().getCgroupParent().isEmpty()
                ? hookRequest.getPodCgroupParent()
                : toSend.getSandboxConfig().getLinux().getCgroupParent())
            .build());
      }
      return resp;
    });
  }

  static ContainerConfig applyContainer(ContainerConfig cfg, ContainerHookResult result) {
    ContainerResourceHookResponse r = result.response();
    ContainerConfig.Builder b = cfg.toBuilder().putAllAnnotations(r.getContainerAnnotationsMap());
    if (r.hasContainerResources()) {
      LinuxContainerConfig.Builder linux = cfg.getLinux().toBuilder();
      linux.setResources(applyResources(cfg.getLinux().getResources(), r.getContainerResources()));
      b.setLinux(linux);
    }
    List<KeyValue> set = result.environment();
    if (!set.isEmpty()) {
      b.clearEnvs().addAllEnvs(mergeEnvs(cfg.getEnvsList(), set));
    }
    if (!result.mounts().isEmpty()) {
      List<Mount> mounts = new ArrayList<>(cfg.getMountsList());
      for (Mount m : result.mounts()) {
        mounts.removeIf(x -> x.getContainerPath().equals(m.getContainerPath()));
        mounts.add(m);
      }
      b.clearMounts().addAllMounts(mounts);
    }
    if (!result.devices().isEmpty()) {
      List<Device> devices = new ArrayList<>(cfg.getDevicesList());
      for (Device d : result.devices()) {
        devices.removeIf(x -> x.getContainerPath().equals(d.getContainerPath()));
        devices.add(d);
      }
      b.clearDevices().addAllDevices(devices);
    }
    return b.build();
  }

  /**
   * The CRI environment {@code base} with {@code set} applied: a key already there keeps its
   * position and takes the new value (every occurrence of a repeated key does, so the container
   * sees the new value whichever occurrence the runtime uses), a new key is appended in the order
   * of {@code set}. Nothing is removed.
   */
  static List<KeyValue> mergeEnvs(List<KeyValue> base, List<KeyValue> set) {
    Map<String, KeyValue> updates = new LinkedHashMap<>();
    for (KeyValue kv : set) {
      updates.put(kv.getKey(), kv);
    }
    List<KeyValue> out = new ArrayList<>(base.size() + updates.size());
    for (KeyValue kv : base) {
      KeyValue now = updates.get(kv.getKey());
      out.add(now == null ? kv : now);
    }
    java.util.Set<String> present = new java.util.HashSet<>();
    base.forEach(kv -> present.add(kv.getKey()));
    for (KeyValue kv : updates.values()) {
      if (!present.contains(kv.getKey())) {
        out.add(kv);
      }
    }
    return out;
  }

  private Plan containerCall(Object req, String id, HookPoint pre, HookPoint post,
      boolean remove) {
    Optional<CheckpointStore.Ctr> ctr = store.container(id);
    boolean hooked = !skippedPodOf(ctr) && (pre != null && dispatcher.hasHooks(pre)
        || post != null && dispatcher.hasHooks(post));
    ContainerResourceHookRequest hr = hooked ? containerHookRequest(id, ctr) : null;
    // Start/Stop/Remove requests carry only an id: responses are observed, not applied.
    return new Plan(hooked ? pre : null, hr, merged -> phase(req, (resp, hooks) -> {
      if (remove) {
        store.removeContainer(id);
      }
      if (hooked && post != null) {
        hooks.container(post, hr);
      }
      return resp;
    }));
  }

  private Plan update(UpdateContainerResourcesRequest req) {
    String id = req.getContainerId();
    Optional<CheckpointStore.Ctr> ctr = store.container(id);
    boolean hooked = !skippedPodOf(ctr);
    boolean pre = hooked && dispatcher.hasHooks(HookPoint.PRE_UPDATE_CONTAINER_RESOURCES);
    boolean post = hooked && dispatcher.hasHooks(HookPoint.POST_UPDATE_CONTAINER_RESOURCES);
    // as Koordinator's proxy: the container's resources as recorded, with the request's applied
    ContainerResourceHookRequest hr = !pre && !post ? null : containerHookRequest(id, ctr)
        .toBuilder()
        .putAllContainerAnnotations(req.getAnnotationsMap())
        .setContainerResources(koordResources(ctr.isPresent()
            ? mergeCri(ctr.get().resources(), req.getLinux()) : req.getLinux()))
        .build();
    return new Plan(pre ? HookPoint.PRE_UPDATE_CONTAINER_RESOURCES : null, hr, merged -> {
      UpdateContainerResourcesRequest sent = req;
      if (merged != null) {
        ContainerResourceHookResponse r = ((ContainerHookResult) merged).response();
        UpdateContainerResourcesRequest.Builder b = req.toBuilder()
            .putAllAnnotations(r.getContainerAnnotationsMap());
        if (r.hasContainerResources()) {
          b.setLinux(applyResources(req.getLinux(), r.getContainerResources()));
        }
        sent = b.build();
      }
      UpdateContainerResourcesRequest toSend = sent;
      return phase(toSend, (resp, hooks) -> {
        ctr.ifPresent(c -> store.putContainer(new CheckpointStore.Ctr(c.id(), c.podId(),
            c.metadata(), c.annotations(), mergeCri(c.resources(), toSend.getLinux()),
            c.envs())));
        if (post) {
          hooks.container(HookPoint.POST_UPDATE_CONTAINER_RESOURCES, hr.toBuilder()
              .putAllContainerAnnotations(toSend.getAnnotationsMap())
              .setContainerResources(koordResources(ctr.isPresent()
                  ? mergeCri(ctr.get().resources(), toSend.getLinux()) : toSend.getLinux()))
              .build());
        }
        return resp;
      });
    });
  }

  private boolean skippedPodOf(Optional<CheckpointStore.Ctr> ctr) {
    return ctr.flatMap(c -> store.pod(c.podId())).map(p -> skipped(p.labels())).orElse(false);
  }

  private ContainerResourceHookRequest containerHookRequest(String id,
      Optional<CheckpointStore.Ctr> ctr) {
    ContainerResourceHookRequest.Builder b = ContainerResourceHookRequest.newBuilder()
        .setContainerMeta(ContainerMetadata.newBuilder().setId(id));
    if (ctr.isEmpty()) {
      return b.build();
    }
    CheckpointStore.Ctr c = ctr.get();
    b.setContainerMeta(ContainerMetadata.newBuilder().setId(id)
            .setName(c.metadata().getName()).setAttempt(c.metadata().getAttempt()))
        .putAllContainerAnnotations(c.annotations())
        .setContainerResources(koordResources(c.resources()))
        .putAllContainerEnvs(koordEnvs(c.envs()));
    store.pod(c.podId()).ifPresent(p -> b.setPodMeta(koordPodMeta(p.metadata()))
        .putAllPodAnnotations(p.annotations())
        .putAllPodLabels(p.labels())
        .setPodCgroupParent(p.cgroupParent())
        .setPodResources(koordResources(p.resources())));
    return b.build();
  }

  // ---- conversions ----

  private static boolean skipped(Map<String, String> podLabels) {
    return "true".equals(podLabels.get(SKIP_LABEL));
  }

  /**
   * A CRI environment as Koordinator's {@code container_envs}: of a repeated key the last value
   * (as Koordinator's proxy does), each key at its first position.
   */
  static Map<String, String> koordEnvs(List<KeyValue> envs) {
    if (envs.isEmpty()) {
      return Map.of();
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (KeyValue kv : envs) {
      out.put(kv.getKey(), kv.getValue().toStringUtf8());
    }
    return out;
  }

  /** CRI and Koordinator PodSandboxMetadata have the same fields and numbers. */
  static PodSandboxMetadata koordPodMeta(io.cri4j.cri.v1.PodSandboxMetadata m) {
    return PodSandboxMetadata.newBuilder().setName(m.getName()).setUid(m.getUid())
        .setNamespace(m.getNamespace()).setAttempt(m.getAttempt()).build();
  }

  /** Copies the ten resource fields Koordinator has (same numbers as CRI's first ten). */
  static LinuxContainerResources koordResources(io.cri4j.cri.v1.LinuxContainerResources r) {
    if (r == io.cri4j.cri.v1.LinuxContainerResources.getDefaultInstance()) {
      return LinuxContainerResources.getDefaultInstance(); // none set (pods often have none)
    }
    LinuxContainerResources.Builder b = LinuxContainerResources.newBuilder()
        .setCpuPeriod(r.getCpuPeriod()).setCpuQuota(r.getCpuQuota())
        .setCpuShares(r.getCpuShares()).setMemoryLimitInBytes(r.getMemoryLimitInBytes())
        .setOomScoreAdj(r.getOomScoreAdj()).setCpusetCpus(r.getCpusetCpus())
        .setCpusetMems(r.getCpusetMems()).putAllUnified(r.getUnifiedMap())
        .setMemorySwapLimitInBytes(r.getMemorySwapLimitInBytes());
    for (io.cri4j.cri.v1.HugepageLimit h : r.getHugepageLimitsList()) {
      b.addHugepageLimitsBuilder().setPageSize(h.getPageSize()).setLimit(h.getLimit());
    }
    return b.build();
  }

  /**
   * Applies a hook's resources onto CRI resources. Only fields the hook specified change: zero
   * numbers and empty strings mean "not specified" (so an empty cpuset or a 0 oom_score_adj does
   * not clobber); hugepage limits replace the one of the same page size; unified entries are
   * merged by key. CRI fields Koordinator does not know stay as they are.
   */
  public static io.cri4j.cri.v1.LinuxContainerResources applyResources(
      io.cri4j.cri.v1.LinuxContainerResources base, LinuxContainerResources r) {
    io.cri4j.cri.v1.LinuxContainerResources.Builder b = base.toBuilder();
    if (r.getCpuPeriod() != 0) {
      b.setCpuPeriod(r.getCpuPeriod());
    }
    if (r.getCpuQuota() != 0) {
      b.setCpuQuota(r.getCpuQuota());
    }
    if (r.getCpuShares() != 0) {
      b.setCpuShares(r.getCpuShares());
    }
    if (r.getMemoryLimitInBytes() != 0) {
      b.setMemoryLimitInBytes(r.getMemoryLimitInBytes());
    }
    if (r.getOomScoreAdj() != 0) {
      b.setOomScoreAdj(r.getOomScoreAdj());
    }
    if (!r.getCpusetCpus().isEmpty()) {
      b.setCpusetCpus(r.getCpusetCpus());
    }
    if (!r.getCpusetMems().isEmpty()) {
      b.setCpusetMems(r.getCpusetMems());
    }
    if (r.getMemorySwapLimitInBytes() != 0) {
      b.setMemorySwapLimitInBytes(r.getMemorySwapLimitInBytes());
    }
    b.putAllUnified(r.getUnifiedMap());
    if (r.getHugepageLimitsCount() > 0) {
      Map<String, io.cri4j.cri.v1.HugepageLimit> pages = new LinkedHashMap<>();
      for (io.cri4j.cri.v1.HugepageLimit h : base.getHugepageLimitsList()) {
        pages.put(h.getPageSize(), h);
      }
      for (io.cri4j.hook.koordinator.v1alpha1.HugepageLimit h : r.getHugepageLimitsList()) {
        pages.put(h.getPageSize(), io.cri4j.cri.v1.HugepageLimit.newBuilder()
            .setPageSize(h.getPageSize()).setLimit(h.getLimit()).build());
      }
      b.clearHugepageLimits().addAllHugepageLimits(pages.values());
    }
    return b.build();
  }

  private static io.cri4j.cri.v1.LinuxContainerResources mergeCri(
      io.cri4j.cri.v1.LinuxContainerResources base, io.cri4j.cri.v1.LinuxContainerResources upd) {
    return applyResources(base, koordResources(upd));
  }

}
