package io.cri4j.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.cri4j.cri.v1.ContainerConfig;
import io.cri4j.cri.v1.ContainerEventResponse;
import io.cri4j.cri.v1.ContainerMetadata;
import io.cri4j.cri.v1.CreateContainerRequest;
import io.cri4j.cri.v1.GetEventsRequest;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.KeyValue;
import io.cri4j.cri.v1.ListImagesRequest;
import io.cri4j.cri.v1.Mount;
import io.cri4j.cri.v1.PodSandboxConfig;
import io.cri4j.cri.v1.PodSandboxMetadata;
import io.cri4j.cri.v1.RunPodSandboxRequest;
import io.cri4j.cri.v1.RunPodSandboxResponse;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StartContainerRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.hook.ContainerHookResult;
import io.cri4j.hook.CriInterceptor;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookConflict;
import io.cri4j.hook.HookPoint;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.LinuxContainerResources;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The proxy in front of a hand-written CRI backend, all over real unix sockets. */
class CriProxyIT extends ProxyTestBase {
  static RunPodSandboxRequest pod(String name, String... labels) {
    PodSandboxConfig.Builder c = PodSandboxConfig.newBuilder().setMetadata(
        PodSandboxMetadata.newBuilder().setName(name).setNamespace("default").setUid("uid-" + name));
    for (int i = 0; i < labels.length; i += 2) {
      c.putLabels(labels[i], labels[i + 1]);
    }
    return RunPodSandboxRequest.newBuilder().setConfig(c).build();
  }

  static CreateContainerRequest container(String podId, RunPodSandboxRequest pod) {
    ContainerConfig.Builder c = ContainerConfig.newBuilder()
        .setMetadata(ContainerMetadata.newBuilder().setName("app"))
        .addEnvs(kv("A", "1")).addEnvs(kv("B", "2")).addEnvs(kv("C", "3"))
        .putAnnotations("owner", "kubelet");
    c.getLinuxBuilder().getResourcesBuilder().setCpuShares(512).setCpusetCpus("0-1")
        .setOomScoreAdj(-998);
    return CreateContainerRequest.newBuilder().setPodSandboxId(podId).setConfig(c)
        .setSandboxConfig(pod.getConfig()).build();
  }

  static KeyValue kv(String k, String v) {
    return KeyValue.newBuilder().setKey(k).setValue(ByteString.copyFromUtf8(v)).build();
  }

  @Test
  void relayedInlineHookedThreadHookedAndExpiringCallsMixOnOneConnection() throws Exception {
    TestHook inline = new TestHook("inline", 0, FailurePolicy.FAIL,
        HookPoint.PRE_RUN_POD_SANDBOX);
    inline.inline = true;
    inline.podAnswer = PodSandboxHookResponse.newBuilder().putLabels("inline", "yes").build();
    TestHook threaded = new TestHook("threaded", 0, FailurePolicy.FAIL,
        HookPoint.PRE_CREATE_CONTAINER);
    threaded.containerAnswer = ContainerHookResult.of(ContainerResourceHookResponse.newBuilder()
        .putContainerAnnotations("threaded", "yes").build());
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
        startProxy(CriProxy.builder().addHook(inline).addHook(threaded));
    MethodDescriptor<byte[], byte[]> echo = MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Echo/Echo")
        .setRequestMarshaller(TestBackend.BYTES).setResponseMarshaller(TestBackend.BYTES).build();
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
    java.util.concurrent.atomic.AtomicInteger podsMade = new java.util.concurrent.atomic.AtomicInteger();
    List<String> expired = new CopyOnWriteArrayList<>();
    try {
      List<java.util.concurrent.Future<?>> work = new java.util.ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int seed = t;
        work.add(pool.submit(() -> {
          java.util.Random rnd = new java.util.Random(seed);
          String podId = stub.runPodSandbox(pod("mix-" + seed)).getPodSandboxId();
          podsMade.incrementAndGet();
          for (int i = 0; i < 150; i++) {
            switch ((i + seed) % 5) {
              case 0 -> assertThat(stub.version(VersionRequest.getDefaultInstance())
                  .getRuntimeName()).isEqualTo("test-backend");
              case 1 -> {
                stub.runPodSandbox(pod("mix-" + seed + "-" + i));
                podsMade.incrementAndGet();
              }
              case 2 -> assertThat(stub.createContainer(container(podId, pod("mix-" + seed)))
                  .getContainerId()).startsWith("ctr-");
              case 3 -> {
                byte[] in = new byte[1 + rnd.nextInt(96 * 1024)];
                rnd.nextBytes(in);
                byte[] out = io.grpc.stub.ClientCalls.blockingUnaryCall(client, echo,
                    io.grpc.CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), in);
                assertThat(out.length).isEqualTo(in.length);
                assertThat(out[0]).isEqualTo(in[in.length - 1]);
              }
              default -> {
                // a deadline that may pass in the proxy, the hooks or the backend
                try {
                  stub.withDeadlineAfter(rnd.nextInt(400), TimeUnit.MICROSECONDS)
                      .createContainer(container(podId, pod("mix-" + seed)));
                } catch (io.grpc.StatusRuntimeException e) {
                  assertThat(e.getStatus().getCode()).as(e.getStatus().toString())
                      .isEqualTo(io.grpc.Status.Code.DEADLINE_EXCEEDED);
                  expired.add(e.getStatus().toString());
                }
              }
            }
          }
          return null;
        }));
      }
      for (java.util.concurrent.Future<?> f : work) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(expired).as("calls whose deadline passed").isNotEmpty();
    // every pod went through the inline hook, every container through the hook-thread one
    assertThat(backend.pods).hasSize(podsMade.get());
    assertThat(backend.pods.values()).allSatisfy(p ->
        assertThat(p.getLabelsMap()).containsEntry("inline", "yes"));
    assertThat(backend.containers).isNotEmpty();
    assertThat(backend.containers.values()).allSatisfy(c ->
        assertThat(c.getAnnotationsMap()).containsEntry("threaded", "yes"));
    assertThat(threaded.threads).allMatch(n -> n.startsWith("cri4j-hook"));
    // and the one connection the client used is still fine
    assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
        .isEqualTo("test-backend");
  }

  @Test
  void anInterceptorThatAnswersAfterTheProxyClosedKillsNoThread() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread[] worker = new Thread[1];
    startProxy(CriProxy.builder().addInterceptor(blocking("Version", chain -> {
      worker[0] = Thread.currentThread();
      entered.countDown();
      boolean interrupted = false;
      while (true) { // close() interrupts the workers: this one answers anyway
        try {
          release.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      return VersionResponse.newBuilder().setRuntimeName("late").build();
    })));
    RuntimeServiceGrpc.RuntimeServiceFutureStub stub = RuntimeServiceGrpc.newFutureStub(client);
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    try {
      var call = stub.version(VersionRequest.getDefaultInstance());
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
      proxy.close();
      release.countDown();
      worker[0].join(10_000); // the pool is shut down: its thread ends after this task
      assertThat(worker[0].isAlive()).isFalse();
      assertThat(uncaught).as("exceptions that ended the worker").isEmpty();
      assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(StatusRuntimeException.class);
    } finally {
      Thread.setDefaultUncaughtExceptionHandler(before);
    }
  }

  @Test
  void passesThroughUnknownServicesImagesStreamsAndHeaders() throws Exception {
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder());
    Metadata h = new Metadata();
    h.put(TestBackend.TEST_HEADER, "from-client");
    VersionResponse v = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h))
        .version(VersionRequest.newBuilder().setVersion("v1").build());
    assertThat(v.getRuntimeName()).isEqualTo("test-backend");
    assertThat(backend.headerValues).containsExactly("from-client");

    assertThat(ImageServiceGrpc.newBlockingStub(client).listImages(
        ListImagesRequest.getDefaultInstance()).getImages(0).getRepoTags(0))
        .isEqualTo("test/busybox:1");

    Iterator<ContainerEventResponse> events =
        stub.getContainerEvents(GetEventsRequest.getDefaultInstance());
    List<String> ids = new ArrayList<>();
    events.forEachRemaining(e -> ids.add(e.getContainerId()));
    assertThat(ids).containsExactly("ctr-event-0", "ctr-event-1", "ctr-event-2");

    MethodDescriptor<byte[], byte[]> echo = MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Echo/Echo")
        .setRequestMarshaller(TestBackend.BYTES).setResponseMarshaller(TestBackend.BYTES).build();
    byte[] out = ClientCalls.blockingUnaryCall(client, echo, CallOptions.DEFAULT,
        "abc".getBytes(StandardCharsets.UTF_8));
    assertThat(new String(out, StandardCharsets.UTF_8)).isEqualTo("cba");

    // a v1alpha2 call to a backend without v1alpha2 gets the backend's UNIMPLEMENTED
    assertThat(proxy.backendServesV1alpha2()).isFalse();
    assertThatThrownBy(() -> io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client)
        .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance()))
        .isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED));
  }

  @Test
  void interceptorsChangeRequestsAndResponsesAnswerThemselvesAndRunInOrder() throws Exception {
    List<String> order = new CopyOnWriteArrayList<>();
    CriInterceptor first = new CriInterceptor() {
      @Override
      @SuppressWarnings("unchecked")
      public <Q, R> R interceptUnary(UnaryChain<Q, R> chain) throws StatusException {
        order.add("first:" + chain.method().getBareMethodName());
        if (chain.method().getBareMethodName().equals("Version")
            && ((VersionRequest) chain.request()).getVersion().equals("answer-yourself")) {
          return (R) VersionResponse.newBuilder().setRuntimeName("interceptor").build();
        }
        R r = chain.proceed(chain.request());
        if (r instanceof RunPodSandboxResponse p) {
          return (R) p.toBuilder().setPodSandboxId(p.getPodSandboxId() + "-seen").build();
        }
        return r;
      }
    };
    CriInterceptor second = blocking("RunPodSandbox", chain -> {
      order.add("second:" + chain.method().getBareMethodName());
      RunPodSandboxRequest r = (RunPodSandboxRequest) chain.request();
      return chain.proceed(r.toBuilder().setConfig(
          r.getConfig().toBuilder().putLabels("added-by", "second")).build());
    });
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
        startProxy(CriProxy.builder().addInterceptor(first).addInterceptor(second));

    assertThat(stub.version(VersionRequest.newBuilder().setVersion("answer-yourself").build())
        .getRuntimeName()).isEqualTo("interceptor");
    assertThat(backend.versionCalls.get()).isZero();

    RunPodSandboxResponse r = stub.runPodSandbox(pod("p1"));
    assertThat(r.getPodSandboxId()).endsWith("-seen");
    assertThat(backend.received(RunPodSandboxRequest.class).get(0).getConfig().getLabelsMap())
        .containsEntry("added-by", "second");
    assertThat(order).containsExactly("first:Version", "first:RunPodSandbox",
        "second:RunPodSandbox");
  }

  @Test
  void streamingInterceptorRewritesEvents() throws Exception {
    CriInterceptor rewrite = new CriInterceptor() {
      @Override
      @SuppressWarnings("unchecked")
      public <Q, R> void interceptServerStreaming(StreamingChain<Q, R> chain) {
        StreamObserver<R> out = chain.responses();
        chain.proceed(chain.request(), new StreamObserver<R>() {
          @Override public void onNext(R value) {
            ContainerEventResponse e = (ContainerEventResponse) value;
            out.onNext((R) e.toBuilder().setContainerId("x-" + e.getContainerId()).build());
          }

          @Override public void onError(Throwable t) { out.onError(t); }

          @Override public void onCompleted() { out.onCompleted(); }
        });
      }
    };
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
        startProxy(CriProxy.builder().addInterceptor(rewrite));
    List<String> ids = new ArrayList<>();
    stub.getContainerEvents(GetEventsRequest.getDefaultInstance())
        .forEachRemaining(e -> ids.add(e.getContainerId()));
    assertThat(ids).containsExactly("x-ctr-event-0", "x-ctr-event-1", "x-ctr-event-2");
    proxy.close();
    proxy.close(); // idempotent
    assertThat(java.nio.file.Files.exists(dir.resolve("proxy.sock")))
        .as("the listen socket is removed on close").isFalse();
  }

  /** A hook for tests: fixed answers, optional failure or hang. */
  static final class TestHook implements RuntimeHook {
    final String name;
    final Set<HookPoint> points;
    final FailurePolicy policy;
    final int index;
    volatile ContainerHookResult containerAnswer =
        ContainerHookResult.of(ContainerResourceHookResponse.getDefaultInstance());
    volatile PodSandboxHookResponse podAnswer = PodSandboxHookResponse.getDefaultInstance();
    volatile RuntimeException failure;
    volatile CountDownLatch hang;
    /** Says it never blocks: called on the proxy's I/O thread. */
    volatile boolean inline;
    final List<Object> seen = new CopyOnWriteArrayList<>();
    final List<String> threads = new CopyOnWriteArrayList<>();

    TestHook(String name, int index, FailurePolicy policy, HookPoint... points) {
      this.name = name;
      this.index = index;
      this.policy = policy;
      this.points = Set.of(points);
    }

    @Override public String name() { return name; }

    @Override public Set<HookPoint> points() { return points; }

    @Override public int index() { return index; }

    @Override public FailurePolicy failurePolicy() { return policy; }

    @Override public Duration timeout() { return Duration.ofMillis(300); }

    @Override public boolean callInline() { return inline; }

    private void misbehave() throws InterruptedException {
      threads.add(Thread.currentThread().getName());
      if (failure != null) {
        throw failure;
      }
      if (hang != null) {
        hang.await();
      }
    }

    @Override
    public PodSandboxHookResponse onPodSandbox(HookPoint p, PodSandboxHookRequest r)
        throws Exception {
      seen.add(p + ":" + r.getPodMeta().getName());
      misbehave();
      return podAnswer;
    }

    @Override
    public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
        throws Exception {
      seen.add(r);
      misbehave();
      return containerAnswer;
    }
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "hook called inline: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void preCreateHookInjectsEnvAnnotationResourcesAndMountsWithUnsetSemantics(boolean inline)
      throws Exception {
    TestHook hook = new TestHook("inject", 0, FailurePolicy.FAIL, HookPoint.PRE_CREATE_CONTAINER,
        HookPoint.PRE_START_CONTAINER, HookPoint.POST_START_CONTAINER);
    hook.inline = inline;
    hook.containerAnswer = ContainerHookResult.of(ContainerResourceHookResponse.newBuilder()
            .putContainerAnnotations("injected", "yes").setPodCgroupParent("/kubepods/besteffort")
            .setContainerResources(LinuxContainerResources.newBuilder().setCpuShares(1024)
                .setCpusetCpus("").setOomScoreAdj(0).setMemoryLimitInBytes(1 << 28))
            .build())
        .withEnvs(List.of(kv("B", "two"), kv("D", "4")))
        .withMounts(List.of(Mount.newBuilder().setContainerPath("/data").setHostPath("/tmp").build()))
        .withDevices(List.of(io.cri4j.cri.v1.Device.newBuilder().setContainerPath("/dev/fuse")
            .setHostPath("/dev/fuse").setPermissions("rwm").build()));
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(hook));
    RunPodSandboxRequest p = pod("web", "app", "web");
    String podId = stub.runPodSandbox(p).getPodSandboxId();
    String ctr = stub.createContainer(container(podId, p)).getContainerId();

    CreateContainerRequest sent = backend.received(CreateContainerRequest.class).get(0);
    assertThat(sent.getConfig().getAnnotationsMap())
        .containsEntry("injected", "yes").containsEntry("owner", "kubelet");
    assertThat(sent.getConfig().getEnvsList()).extracting(KeyValue::getKey)
        .containsExactly("A", "B", "C", "D");
    assertThat(sent.getConfig().getEnvs(1).getValue().toStringUtf8()).isEqualTo("two");
    io.cri4j.cri.v1.LinuxContainerResources res = sent.getConfig().getLinux().getResources();
    assertThat(res.getCpuShares()).isEqualTo(1024);
    assertThat(res.getMemoryLimitInBytes()).isEqualTo(1 << 28);
    assertThat(res.getCpusetCpus()).as("empty cpuset must not clobber").isEqualTo("0-1");
    assertThat(res.getOomScoreAdj()).as("0 oom_score_adj must not clobber").isEqualTo(-998);
    assertThat(sent.getConfig().getMountsList()).extracting(Mount::getContainerPath)
        .containsExactly("/data");
    assertThat(sent.getConfig().getDevicesList()).extracting(io.cri4j.cri.v1.Device::getHostPath)
        .containsExactly("/dev/fuse");
    assertThat(sent.getSandboxConfig().getLinux().getCgroupParent())
        .isEqualTo("/kubepods/besteffort");

    ContainerResourceHookRequest seen = (ContainerResourceHookRequest) hook.seen.get(0);
    assertThat(seen.getPodMeta().getName()).isEqualTo("web");
    assertThat(seen.getPodLabelsMap()).containsEntry("app", "web");
    assertThat(seen.getContainerResources().getCpuShares()).isEqualTo(512);

    // StartContainer carries only an id: the hook request comes from the checkpoint store
    stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
    ContainerResourceHookRequest atStart = (ContainerResourceHookRequest) hook.seen.get(1);
    assertThat(atStart.getContainerMeta().getId()).isEqualTo(ctr);
    assertThat(atStart.getContainerMeta().getName()).isEqualTo("app");
    assertThat(atStart.getPodMeta().getName()).isEqualTo("web");
    assertThat(atStart.getContainerAnnotationsMap()).containsEntry("injected", "yes");
    assertThat(hook.seen).hasSize(3); // pre start + post start
    // where the hook ran: its own hook thread, or the proxy's I/O thread (no hand-off at all)
    assertThat(hook.threads).allSatisfy(t -> assertThat(t)
        .startsWith(inline ? "cri4j-proxy-io" : "cri4j-hook"));

    // the runtime's error comes back as it was, and the post point is not called
    int before = hook.seen.size();
    assertThatThrownBy(() -> stub.startContainer(
        StartContainerRequest.newBuilder().setContainerId("no-such-container").build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    assertThat(hook.seen).hasSize(before + 1); // the pre point only
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "hook called inline: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void aPostHookThatFailsOrHangsNeverFailsTheCall(boolean inline) throws Exception {
    TestHook post = new TestHook("after", 0, FailurePolicy.FAIL, HookPoint.POST_START_CONTAINER);
    post.inline = inline;
    post.failure = new IllegalStateException("post hook broke");
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(post));
    RunPodSandboxRequest p = pod("web");
    String podId = stub.runPodSandbox(p).getPodSandboxId();
    String ctr = stub.createContainer(container(podId, p)).getContainerId();
    stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
    assertThat(post.seen).as("the post point ran before the answer came back").hasSize(1);
    assertThat(post.threads).singleElement().asString()
        .startsWith(inline ? "cri4j-proxy-io" : "cri4j-hook");
    if (!inline) {
      // hung past its timeout (300 ms): logged, and the call still succeeds
      post.failure = null;
      post.hang = new CountDownLatch(1);
      try {
        stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
        assertThat(post.seen).hasSize(2);
      } finally {
        post.hang.countDown();
      }
    }
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "hook called inline: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void aFailingFailPolicyHookFailsTheCallBeforeTheRuntimeSeesIt(boolean inline) throws Exception {
    TestHook hook = new TestHook("strict", 0, FailurePolicy.FAIL, HookPoint.PRE_RUN_POD_SANDBOX);
    hook.inline = inline;
    hook.failure = new IllegalStateException("no quota for this pod");
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(hook));
    assertThatThrownBy(() -> stub.runPodSandbox(pod("web")))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
          assertThat(e.getStatus().getDescription()).contains("hook strict")
              .contains("PreRunPodSandbox").contains("no quota for this pod");
        });
    assertThat(backend.received(RunPodSandboxRequest.class)).isEmpty();
  }

  @Test
  void twoHooksAreMergedInIndexOrderAndConflictsReported() throws Exception {
    TestHook a = new TestHook("a", 20, FailurePolicy.IGNORE, HookPoint.PRE_RUN_POD_SANDBOX);
    TestHook b = new TestHook("b", 10, FailurePolicy.IGNORE, HookPoint.PRE_RUN_POD_SANDBOX);
    a.podAnswer = PodSandboxHookResponse.newBuilder().putAnnotations("from-a", "1")
        .putLabels("tier", "gold").setCgroupParent("/kubepods/a").build();
    b.podAnswer = PodSandboxHookResponse.newBuilder().putAnnotations("from-b", "1")
        .putLabels("tier", "silver").build();
    List<HookConflict> conflicts = new CopyOnWriteArrayList<>();
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub =
        startProxy(CriProxy.builder().addHook(a).addHook(b).onConflict(conflicts::add));
    stub.runPodSandbox(pod("m"));
    PodSandboxConfig sent = backend.received(RunPodSandboxRequest.class).get(0).getConfig();
    assertThat(sent.getAnnotationsMap()).containsEntry("from-a", "1").containsEntry("from-b", "1");
    assertThat(sent.getLabelsMap()).as("b has the lower index, so it owns the field")
        .containsEntry("tier", "silver");
    assertThat(sent.getLinux().getCgroupParent()).isEqualTo("/kubepods/a");
    assertThat(conflicts).singleElement().satisfies(c -> {
      assertThat(c.field()).isEqualTo("labels[tier]");
      assertThat(c.keptHook()).isEqualTo("b");
      assertThat(c.droppedHook()).isEqualTo("a");
    });
  }

  @Test
  void failPolicyFailsTheCallNamingTheHookIgnoreForwardsUnmodified() throws Exception {
    TestHook failing = new TestHook("strict", 0, FailurePolicy.FAIL,
        HookPoint.PRE_RUN_POD_SANDBOX);
    failing.failure = new IllegalStateException("boom");
    failing.podAnswer = PodSandboxHookResponse.newBuilder().putLabels("x", "y").build();
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(failing));
    assertThatThrownBy(() -> stub.runPodSandbox(pod("f")))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
          assertThat(e.getStatus().getDescription()).contains("strict").contains("boom")
              .contains("PreRunPodSandbox");
        });
    assertThat(backend.received(RunPodSandboxRequest.class)).isEmpty();

    // hung past its timeout
    failing.failure = null;
    failing.hang = new CountDownLatch(1);
    long t0 = System.nanoTime();
    assertThatThrownBy(() -> stub.runPodSandbox(pod("f")))
        .isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getDescription()).contains("strict")
                .contains("timed out after 300 ms"));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(3));
    failing.hang.countDown();
  }

  @Test
  void ignorePolicyForwardsTheUnmodifiedRequestOnErrorAndTimeout() throws Exception {
    TestHook lax = new TestHook("lax", 0, FailurePolicy.IGNORE, HookPoint.PRE_RUN_POD_SANDBOX);
    lax.podAnswer = PodSandboxHookResponse.newBuilder().putLabels("x", "y").build();
    lax.failure = new IllegalStateException("boom");
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(lax));
    stub.runPodSandbox(pod("i"));
    lax.failure = null;
    lax.hang = new CountDownLatch(1);
    stub.runPodSandbox(pod("j"));
    lax.hang.countDown();
    assertThat(backend.received(RunPodSandboxRequest.class)).hasSize(2)
        .allSatisfy(r -> assertThat(r.getConfig().getLabelsMap()).doesNotContainKey("x"));
  }

  @Test
  void podsWithTheSkipLabelAreNeverHooked() throws Exception {
    TestHook hook = new TestHook("h", 0, FailurePolicy.FAIL, HookPoint.PRE_RUN_POD_SANDBOX,
        HookPoint.PRE_CREATE_CONTAINER, HookPoint.PRE_START_CONTAINER);
    hook.failure = new IllegalStateException("must not be called");
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(hook));
    RunPodSandboxRequest p = pod("s", "runtimeproxy.koordinator.sh/skip-hookserver", "true");
    String podId = stub.runPodSandbox(p).getPodSandboxId();
    String ctr = stub.createContainer(container(podId, p)).getContainerId();
    stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
    assertThat(hook.seen).isEmpty();
  }

  @Test
  void checkpointStoreIsRebuiltFromTheBackendAtStart() throws Exception {
    // create a pod and a container directly on the backend, before the proxy exists
    ManagedChannel direct = CriChannels.newChannel(CriEndpoint.unix(backend.socket));
    try {
      RuntimeServiceGrpc.RuntimeServiceBlockingStub d = RuntimeServiceGrpc.newBlockingStub(direct);
      RunPodSandboxRequest p = pod("old", "app", "old");
      String podId = d.runPodSandbox(p).getPodSandboxId();
      d.createContainer(container(podId, p));
    } finally {
      direct.shutdownNow();
    }
    TestHook hook = new TestHook("h", 0, FailurePolicy.IGNORE, HookPoint.PRE_START_CONTAINER);
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder().addHook(hook));
    assertThat(proxy.checkpointCounts()).containsExactly(1, 1);
    String ctr = backend.containers.keySet().iterator().next();
    stub.startContainer(StartContainerRequest.newBuilder().setContainerId(ctr).build());
    ContainerResourceHookRequest r = (ContainerResourceHookRequest) hook.seen.get(0);
    assertThat(r.getPodMeta().getName()).isEqualTo("old");
    assertThat(r.getPodLabelsMap()).containsEntry("app", "old");
    assertThat(r.getContainerResources().getCpuShares()).isEqualTo(512);
  }

  @Test
  void backendRestartIsSurvivedAndCallsFailFastMeanwhile() throws Exception {
    RuntimeServiceGrpc.RuntimeServiceBlockingStub stub = startProxy(CriProxy.builder());
    assertThat(stub.version(VersionRequest.getDefaultInstance()).getRuntimeName())
        .isEqualTo("test-backend");
    backend.close();
    long t0 = System.nanoTime();
    assertThatThrownBy(() -> stub.version(VersionRequest.getDefaultInstance()))
        .isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
    backend = new TestBackend(backend.socket, false).start();
    // the channel reconnects with backoff; wait for a successful call within a bound
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    VersionResponse v = null;
    while (v == null && System.nanoTime() < deadline) {
      try {
        v = RuntimeServiceGrpc.newBlockingStub(client).withWaitForReady()
            .withDeadlineAfter(2, TimeUnit.SECONDS).version(VersionRequest.getDefaultInstance());
      } catch (StatusRuntimeException e) {
        assertThat(e.getStatus().getCode()).isIn(Status.Code.UNAVAILABLE,
            Status.Code.DEADLINE_EXCEEDED);
      }
    }
    assertThat(v).isNotNull();
    assertThat(v.getRuntimeName()).isEqualTo("test-backend");
  }

  @Test
  void v1alpha2CallsAreHookedWhenTheBackendServesV1alpha2() throws Exception {
    backend.close();
    backend = new TestBackend(dir.resolve("backend.sock"), true).start();
    TestHook hook = new TestHook("h", 0, FailurePolicy.FAIL, HookPoint.PRE_RUN_POD_SANDBOX);
    hook.podAnswer = PodSandboxHookResponse.newBuilder().putLabels("hooked", "v1alpha2").build();
    startProxy(CriProxy.builder().addHook(hook));
    assertThat(proxy.backendServesV1alpha2()).isTrue();
    io.cri4j.cri.v1alpha2.RunPodSandboxResponse r =
        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client)
            .runPodSandbox(io.cri4j.cri.v1alpha2.RunPodSandboxRequest.newBuilder()
                .setConfig(io.cri4j.cri.v1alpha2.PodSandboxConfig.newBuilder()
                    .setMetadata(io.cri4j.cri.v1alpha2.PodSandboxMetadata.newBuilder()
                        .setName("old-kubelet").setNamespace("ns"))
                    .putLabels("app", "x"))
                .build());
    assertThat(r.getPodSandboxId()).startsWith("alpha-pod-");
    io.cri4j.cri.v1alpha2.RunPodSandboxRequest got =
        backend.received(io.cri4j.cri.v1alpha2.RunPodSandboxRequest.class).get(0);
    assertThat(got.getConfig().getLabelsMap()).containsEntry("hooked", "v1alpha2")
        .containsEntry("app", "x");
    assertThat(hook.seen).containsExactly("PRE_RUN_POD_SANDBOX:old-kubelet");
  }

  @Test
  void v1alpha2IsProbedAgainWhenTheBackendWasDownAtStart() throws Exception {
    backend.close();
    TestHook hook = new TestHook("h", 0, FailurePolicy.FAIL, HookPoint.PRE_RUN_POD_SANDBOX);
    hook.podAnswer = PodSandboxHookResponse.newBuilder().putLabels("late", "probe").build();
    startProxy(CriProxy.builder().addHook(hook).probeTimeoutMillis(500));
    assertThat(proxy.backendServesV1alpha2()).isFalse();
    backend = new TestBackend(dir.resolve("backend.sock"), true).start();
    var alpha = io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(client);
    io.cri4j.cri.v1alpha2.RunPodSandboxRequest req = io.cri4j.cri.v1alpha2.RunPodSandboxRequest
        .newBuilder().setConfig(io.cri4j.cri.v1alpha2.PodSandboxConfig.newBuilder()
            .setMetadata(io.cri4j.cri.v1alpha2.PodSandboxMetadata.newBuilder().setName("late")))
        .build();
    // the channel reconnects with backoff: wait (bounded) for the backend to be reachable
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    io.cri4j.cri.v1alpha2.RunPodSandboxResponse r = null;
    while (r == null && System.nanoTime() < deadline) {
      try {
        r = alpha.withWaitForReady().withDeadlineAfter(2, TimeUnit.SECONDS).runPodSandbox(req);
      } catch (StatusRuntimeException e) {
        assertThat(e.getStatus().getCode()).isIn(Status.Code.UNAVAILABLE,
            Status.Code.DEADLINE_EXCEEDED);
      }
    }
    assertThat(r).isNotNull();
    assertThat(proxy.backendServesV1alpha2()).isTrue();
    List<io.cri4j.cri.v1alpha2.RunPodSandboxRequest> got =
        backend.received(io.cri4j.cri.v1alpha2.RunPodSandboxRequest.class);
    assertThat(got.get(got.size() - 1).getConfig().getLabelsMap()).containsEntry("late", "probe");
  }
}
