package io.cri4j.proxy;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.internal.IoErrors;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.AsyncCriInterceptor;
import io.cri4j.hook.CriInterceptor;
import io.cri4j.hook.HookConfigDirectory;
import io.cri4j.hook.HookConflict;
import io.cri4j.hook.HookDispatcher;
import io.cri4j.hook.InProcessHooks;
import io.cri4j.hook.RuntimeHook;
import io.cri4j.hook.internal.CheckpointStore;
import io.cri4j.hook.internal.CriHookInterceptor;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.proxy.internal.HookLink;
import io.cri4j.proxy.internal.InterceptedService;
import io.cri4j.proxy.internal.PullObserving;
import io.cri4j.proxy.internal.ProxyTransport;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CRI proxy: listens on a unix socket (kubelet or crictl talk to it), runs intercepted calls
 * through the interceptor chain and the runtime hooks, and forwards everything to the backend
 * runtime (containerd, CRI-O). Calls no interceptor or hook wants, including the whole
 * ImageService, server-streaming RPCs and services or methods the proxy does not know, are
 * relayed as raw bytes without decoding. Serves {@code runtime.v1} and {@code runtime.v1alpha2};
 * hooks run on v1alpha2 calls once the backend answered v1alpha2 Version (probed at start, and
 * again on the next v1alpha2 call while the backend could not be reached).
 *
 * <p>Threads: every link of a chain ({@link AsyncCriInterceptor}s, the hooks' link) runs on the
 * I/O thread that read the call. A blocking {@link CriInterceptor} runs on a worker (the proxy's
 * bounded pool, threads named {@value #WORKER_THREAD_PREFIX}N, or an executor given with it) and
 * hands back to the I/O thread when it proceeds and when it answers.
 *
 * <p>The backend connection reconnects by itself: while the backend is down, calls fail fast
 * with UNAVAILABLE, and the proxy serves again once the backend is back, without restart.
 *
 * <pre>{@code
 * try (CriProxy proxy = CriProxy.builder()
 *     .listen(Path.of("/var/run/cri4j/proxy.sock"))
 *     .backend(Path.of("/run/containerd/containerd.sock"))
 *     .hookConfigDir(HookConfigDirectory.DEFAULT_DIR)
 *     .build()) {
 *   proxy.start();
 *   proxy.awaitTermination();
 * }
 * }</pre>
 */
public final class CriProxy implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CriProxy.class);
  /** The names of the proxy's worker threads start with this, then a number. */
  public static final String WORKER_THREAD_PREFIX = "cri4j-proxy-worker-";

  private final Builder config;
  private final ProxyTransport transport;
  private final ManagedChannel backend;
  /** Runs blocking interceptors added without an executor of their own, and backend probes. */
  private final ThreadPoolExecutor workers;
  private final CheckpointStore store = new CheckpointStore();
  private HookConfigDirectory configDir;
  private HookDispatcher dispatcher;
  /** Whether the backend serves v1alpha2: null until a probe was conclusive. */
  private volatile Boolean v1alpha2;
  private boolean started;
  private boolean closed;

  private CriProxy(Builder b) {
    this.config = b;
    this.transport = new ProxyTransport(b.listen, b.backend, b.ioThreads);
    this.backend = transport.backend();
    AtomicInteger n = new AtomicInteger();
    this.workers = new ThreadPoolExecutor(b.workerThreads, b.workerThreads, 30, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(b.workerQueue), r -> {
          Thread t = new Thread(r, WORKER_THREAD_PREFIX + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    workers.allowCoreThreadTimeOut(true); // idle, the proxy keeps no worker thread
  }

  /** A builder; {@code listen} and {@code backend} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Probes the backend, rebuilds the checkpoint store from it, starts watching the hook config
   * directory and starts serving. A backend that is down at start is not fatal: the store is
   * rebuilt as far as possible and calls fail with UNAVAILABLE until the backend is up.
   *
   * @throws IOException when the listen socket cannot be bound (e.g. a live server owns it)
   */
  public synchronized CriProxy start() throws IOException {
    if (started) {
      throw new IllegalStateException("already started");
    }
    started = true;
    try {
      transport.claim(); // a listen path that cannot be used is reported before anything else
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
    List<RuntimeHook> fixed = new ArrayList<>(config.hooks);
    if (config.serviceLoader != null) {
      fixed.addAll(InProcessHooks.load(config.serviceLoader));
    }
    if (config.hookConfigDir != null) {
      try {
        configDir = HookConfigDirectory.watch(config.hookConfigDir);
      } catch (IOException | RuntimeException e) {
        close();
        throw e;
      }
    }
    List<RuntimeHook> fixedCopy = List.copyOf(fixed);
    HookDispatcher.Builder db = HookDispatcher.builder().hooks(fixedCopy)
        .onConflict(config.conflictListener);
    if (configDir != null) {
      db.configDirectory(configDir); // a call keeps the hooks it started with across reloads
    }
    dispatcher = db.build();
    v1alpha2 = probeV1alpha2();
    // without hooks, and no directory to add them later, the hook points are not intercepted
    // at all: those calls are relayed like every other, and no checkpoint store is kept
    boolean hooksPossible = !fixedCopy.isEmpty() || configDir != null;
    List<AsyncCriInterceptor> chain = new ArrayList<>();
    for (Registered r : config.interceptors) {
      chain.add(r.async != null ? r.async
          : CriInterceptor.async(r.blocking, r.worker != null ? r.worker : workers));
    }
    if (config.pullObserver != null) {
      // after the user's interceptors: it sees the pulls as they reach the runtime
      chain.add(new PullObserving(config.pullObserver));
    }
    if (hooksPossible) {
      try {
        store.rebuild(RuntimeServiceGrpc.newBlockingStub(backend));
      } catch (StatusRuntimeException e) {
        LOG.warn("could not rebuild the checkpoint store from the backend {}: {}", config.backend,
            IoErrors.describe(e.getStatus()));
      }
      // v1alpha2 calls are hooked only when the backend serves v1alpha2; while that is unknown
      // a worker probes the backend
      chain.add(new HookLink(new CriHookInterceptor(dispatcher, store), () -> v1alpha2,
          () -> CompletableFuture.supplyAsync(this::v1alpha2Known, workers),
          config.backend.toString()));
    }
    List<MethodDescriptor<?, ?>> methods = new ArrayList<>();
    methods.addAll(RuntimeServiceGrpc.getServiceDescriptor().getMethods());
    methods.addAll(ImageServiceGrpc.getServiceDescriptor().getMethods());
    // v1alpha2 methods are decoded like v1 ones; hooks run on them only once a probe showed the
    // backend serves v1alpha2 (HookLink)
    methods.addAll(asV1alpha2(io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.class,
        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.SERVICE_NAME,
        RuntimeServiceGrpc.getServiceDescriptor().getMethods()));
    methods.addAll(asV1alpha2(io.cri4j.cri.v1alpha2.ImageServiceGrpc.class,
        io.cri4j.cri.v1alpha2.ImageServiceGrpc.SERVICE_NAME,
        ImageServiceGrpc.getServiceDescriptor().getMethods()));
    if (config.pullObserver != null) {
      methods.addAll(PullObserving.localMethods()); // answered here, not relayed
    }
    InterceptedService intercepted = new InterceptedService(backend, chain, methods);
    try {
      // everything else is relayed as HTTP/2 frames on the transport thread
      transport.start(intercepted, config.socketMode);
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
    LOG.info("CRI proxy listening on {} for backend {} (v1alpha2 hooks: {}, intercepted methods:"
        + " {})", config.listen, config.backend, v1alpha2, intercepted.size());
    return this;
  }

  /**
   * The v1alpha2 methods the backend serves, presented with the v1 message classes (the two
   * versions are wire-compatible for every v1alpha2 message; every v1alpha2 method is unary, as
   * its v1 namesake). The names come from the generated class's method getters
   * ({@code getVersionMethod}): its service descriptor would load and initialise every v1alpha2
   * message class, about 2 MiB of metaspace the proxy never uses.
   */
  static List<MethodDescriptor<?, ?>> asV1alpha2(Class<?> alphaGrpc, String alphaService,
      java.util.Collection<MethodDescriptor<?, ?>> v1) {
    Map<String, MethodDescriptor<?, ?>> byName = new HashMap<>();
    for (MethodDescriptor<?, ?> m : v1) {
      byName.put(m.getBareMethodName(), m);
    }
    List<MethodDescriptor<?, ?>> out = new ArrayList<>();
    for (java.lang.reflect.Method getter : alphaGrpc.getDeclaredMethods()) {
      String n = getter.getName();
      if (!java.lang.reflect.Modifier.isStatic(getter.getModifiers())
          || getter.getParameterCount() != 0 || getter.getReturnType() != MethodDescriptor.class
          || !n.startsWith("get") || !n.endsWith("Method")) {
        continue;
      }
      MethodDescriptor<?, ?> m = byName.get(n.substring(3, n.length() - "Method".length()));
      if (m != null && m.getType() == MethodDescriptor.MethodType.UNARY) {
        out.add(m.toBuilder().setFullMethodName(
                MethodDescriptor.generateFullMethodName(alphaService, m.getBareMethodName()))
            .setSchemaDescriptor(null).build());
      }
    }
    return out;
  }

  /** TRUE/FALSE when the backend answered (or refused) v1alpha2 Version; null if unreachable. */
  private Boolean probeV1alpha2() {
    try {
      io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(backend)
          .withDeadlineAfter(config.probeTimeoutMillis, TimeUnit.MILLISECONDS)
          .version(io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance());
      return Boolean.TRUE;
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
        return Boolean.FALSE;
      }
      LOG.warn("v1alpha2 probe of backend {} failed ({}); probing again on the next v1alpha2 call",
          config.backend, IoErrors.describe(e.getStatus()));
      return null;
    }
  }

  /**
   * Whether the backend serves v1alpha2, probing it when no probe was conclusive yet (blocking);
   * null while the backend cannot be reached.
   */
  private Boolean v1alpha2Known() {
    Boolean known = v1alpha2;
    if (known == null) {
      synchronized (this) {
        known = v1alpha2;
        if (known == null) {
          known = probeV1alpha2();
          v1alpha2 = known;
        }
      }
    }
    return known;
  }

  /** True once the backend answered v1alpha2 Version (v1alpha2 calls are then hooked). */
  public boolean backendServesV1alpha2() {
    return Boolean.TRUE.equals(v1alpha2);
  }

  /** The endpoint the proxy listens on (the real port for {@code tcp://host:0}). */
  public synchronized CriEndpoint listenEndpoint() {
    return transport.endpoint();
  }

  /** Number of pods and containers the checkpoint store knows (for diagnostics and tests). */
  public int[] checkpointCounts() {
    return new int[] {store.podCount(), store.containerCount()};
  }

  /** The hook config directory being watched, if one was configured and the proxy started. */
  public synchronized java.util.Optional<HookConfigDirectory> hookConfigDirectory() {
    return java.util.Optional.ofNullable(configDir);
  }

  /** Blocks until the proxy is closed. */
  public void awaitTermination() throws InterruptedException {
    transport.awaitTermination();
  }

  /** Stops serving, removes the socket, closes the backend channel and hooks; idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    transport.close();
    workers.shutdownNow();
    if (dispatcher != null) {
      dispatcher.close();
    }
    if (configDir != null) {
      configDir.close();
    }
  }

  /** An interceptor as added: asynchronous, or blocking with its worker (null: the pool's). */
  private record Registered(AsyncCriInterceptor async, CriInterceptor blocking,
      Executor worker) {}

  /** Configures a {@link CriProxy}. */
  public static final class Builder {
    private CriEndpoint listen;
    private CriEndpoint backend;
    private String socketMode = CriServer.DEFAULT_SOCKET_MODE;
    private final List<Registered> interceptors = new ArrayList<>();
    private int workerThreads = 16;
    private int workerQueue = 1024;
    private final List<RuntimeHook> hooks = new ArrayList<>();
    private ClassLoader serviceLoader;
    private Path hookConfigDir;
    private Consumer<HookConflict> conflictListener =
        c -> LOG.warn("hook conflict: {}", c.describe());
    private long probeTimeoutMillis = 2000;
    private int ioThreads = 1;
    private PullObserver pullObserver;

    private Builder() {}

    /** Where to serve (required): a unix socket, or TCP for tests. */
    public Builder listen(CriEndpoint endpoint) {
      this.listen = Objects.requireNonNull(endpoint, "listen");
      return this;
    }

    /** Where to serve: {@code unix:///path}, {@code /path} or {@code tcp://host:port}. */
    public Builder listen(String endpoint) {
      return listen(CriEndpoint.parse(endpoint));
    }

    /** The unix socket to serve on. */
    public Builder listen(Path socket) {
      return listen(CriEndpoint.unix(socket));
    }

    /** The backend runtime (required). */
    public Builder backend(CriEndpoint endpoint) {
      this.backend = Objects.requireNonNull(endpoint, "backend");
      return this;
    }

    /** The backend runtime: {@code unix:///path}, {@code /path} or {@code tcp://host:port}. */
    public Builder backend(String endpoint) {
      return backend(CriEndpoint.parse(endpoint));
    }

    /** The backend runtime's unix socket. */
    public Builder backend(Path socket) {
      return backend(CriEndpoint.unix(socket));
    }

    /** Permissions of the listen socket (default {@code rw-rw----}). */
    public Builder socketMode(String mode) {
      this.socketMode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Adds an interceptor that never blocks; interceptors run in the order added, before the
     * hooks. The proxy calls it on the I/O thread that read the call.
     */
    public Builder addInterceptor(AsyncCriInterceptor interceptor) {
      interceptors.add(new Registered(Objects.requireNonNull(interceptor, "interceptor"), null,
          null));
      return this;
    }

    /**
     * Adds an interceptor that may block, run on the proxy's worker pool (bounded, see
     * {@link #workerThreads}; threads named {@value CriProxy#WORKER_THREAD_PREFIX}N) and never on the
     * I/O thread; interceptors run in the order added, before the hooks.
     */
    public Builder addInterceptor(CriInterceptor interceptor) {
      interceptors.add(new Registered(null, Objects.requireNonNull(interceptor, "interceptor"),
          null));
      return this;
    }

    /**
     * Adds an interceptor that may block, run on {@code worker} (which the caller owns and shuts
     * down after the proxy); see {@link CriInterceptor#async}.
     */
    public Builder addInterceptor(CriInterceptor interceptor, Executor worker) {
      interceptors.add(new Registered(null, Objects.requireNonNull(interceptor, "interceptor"),
          Objects.requireNonNull(worker, "worker")));
      return this;
    }

    /**
     * The proxy's worker pool, for blocking interceptors added without an executor: at most
     * {@code threads} threads (default 16; idle ones end after 30 s) and {@code queue} calls
     * waiting for one (default 1024); a call beyond that fails with {@code RESOURCE_EXHAUSTED}.
     */
    public Builder workerThreads(int threads, int queue) {
      if (threads < 1) {
        throw new IllegalArgumentException("workerThreads must be at least 1, got " + threads);
      }
      if (queue < 1) {
        throw new IllegalArgumentException("the worker queue must hold at least 1, got " + queue);
      }
      this.workerThreads = threads;
      this.workerQueue = queue;
      return this;
    }

    /** Adds an in-process hook. */
    public Builder addHook(RuntimeHook hook) {
      hooks.add(Objects.requireNonNull(hook, "hook"));
      return this;
    }

    /** Also loads hooks with {@link java.util.ServiceLoader} from {@code loader} at start. */
    public Builder loadHooks(ClassLoader loader) {
      this.serviceLoader = Objects.requireNonNull(loader, "loader");
      return this;
    }

    /** Watches this directory for remote hook configs ({@code *.json}). */
    public Builder hookConfigDir(Path dir) {
      this.hookConfigDir = Objects.requireNonNull(dir, "dir");
      return this;
    }

    /**
     * Follows every {@code PullImage} passing through the proxy (v1 and v1alpha2, from kubelet or
     * anyone) with {@code observer}: the call is relayed as before, on the I/O thread, and nothing
     * waits for the observer. The proxy also answers {@code cri4j.imagepull.v1.PullProgress}
     * ({@code Watch}, {@code List}) itself on its listen socket. The caller closes the observer
     * (after the proxy).
     */
    public Builder observePulls(PullObserver observer) {
      this.pullObserver = Objects.requireNonNull(observer, "observer");
      return this;
    }

    /** Told about every hook conflict (default: logged). */
    public Builder onConflict(Consumer<HookConflict> listener) {
      this.conflictListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** How long the start-up v1alpha2 probe waits (default 2000 ms). */
    public Builder probeTimeoutMillis(long millis) {
      if (millis <= 0) {
        throw new IllegalArgumentException("probe timeout must be positive, got " + millis);
      }
      this.probeTimeoutMillis = millis;
      return this;
    }

    /**
     * Event loop threads shared by the listening socket and the backend channel (default 1:
     * relaying on one thread avoids hand-offs; blocking interceptors run on workers).
     */
    public Builder ioThreads(int threads) {
      if (threads < 1) {
        throw new IllegalArgumentException("ioThreads must be at least 1, got " + threads);
      }
      this.ioThreads = threads;
      return this;
    }

    /** Validates and creates the proxy (not yet started). */
    public CriProxy build() {
      if (listen == null) {
        throw new IllegalStateException("listen socket not set");
      }
      if (backend == null) {
        throw new IllegalStateException("backend socket not set");
      }
      if (listen.equals(backend)) {
        throw new IllegalStateException("listen and backend are the same socket: " + listen);
      }
      return new CriProxy(this);
    }
  }
}
