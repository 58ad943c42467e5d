package io.cri4j.proxy;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.internal.IoErrors;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.Hooks;
import io.cri4j.hook.cri.AsyncCriInterceptor;
import io.cri4j.hook.cri.CriInterceptor;
import io.cri4j.hook.host.DeviceNodes;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.hook.host.RuntimeFeatures;
import io.cri4j.hook.internal.Tracing;
import io.cri4j.hook.koordinator.HookConfigDirectory;
import io.cri4j.hook.koordinator.RemoteRuntimeHook;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.proxy.internal.hooks.CheckpointStore;
import io.cri4j.proxy.internal.hooks.ProxyHooks;
import io.cri4j.proxy.internal.hooks.PullObserving;
import io.cri4j.proxy.internal.interception.CriMethods;
import io.cri4j.proxy.internal.interception.InterceptedService;
import io.cri4j.proxy.internal.relay.ProxyTransport;
import io.cri4j.proxy.internal.relay.RelayMetrics;
import io.grpc.ConnectivityState;
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
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CRI proxy: listens on a unix socket (kubelet or crictl talk to it), runs intercepted calls
 * through the interceptor chain, hosts lifecycle hooks as an NRI host for runtimes without NRI,
 * and forwards everything to the backend runtime (containerd, CRI-O). Calls no interceptor or
 * hook wants, including the whole ImageService, server-streaming RPCs and services or methods the
 * proxy does not know, are relayed as raw bytes without decoding. Serves {@code runtime.v1} and
 * {@code runtime.v1alpha2}; hooks run on v1alpha2 calls once the backend answered v1alpha2
 * Version (probed a second after the proxy serves or on the first v1alpha2 call a hook would see,
 * whichever comes first, and again on the next such call while the backend could not be reached;
 * a v1alpha2 call waits for a running probe).
 *
 * <p>The hooks are one {@link HookChain} in cri4j's (NRI's) model: in-process {@link Hook}s and
 * {@link AsyncHook}s ({@link Builder#addHook}, {@link Builder#loadHooks}), the Koordinator hook
 * servers of a watched config directory ({@link Builder#hookConfigDir}, each a {@link
 * RemoteRuntimeHook}) and the hooks of {@link HookProvider}s such as external NRI plugins
 * ({@link Builder#addHookProvider}; the proxy is their {@link io.cri4j.hook.host.HookHost}). They
 * run in index order around the lifecycle calls; their adjustments change the CRI request, their
 * updates and evictions become {@code UpdateContainerResources} and {@code StopContainer} calls
 * on the backend, and {@code Synchronize} gives them the proxy's record of pods and containers,
 * rebuilt from the backend at start.
 *
 * <p>Threads: every link of a chain ({@link AsyncCriInterceptor}s, the hooks' link) runs on the
 * I/O thread that read the call; so do {@link AsyncHook}s, while blocking {@link Hook}s run on
 * the hook chain's workers. A blocking {@link CriInterceptor} runs on a worker (the proxy's
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
 *     .addHook(myHook)
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

    /** Runs blocking interceptors added without an executor of their own, and backend probes. */
    private final ThreadPoolExecutor workers;

    private final CheckpointStore store = new CheckpointStore();
    private final AtomicReference<CompletableFuture<Boolean>> probing = new AtomicReference<>();
    private HookConfigDirectory configDir;
    private volatile ProxyHooks hooks;
    private volatile RuntimeFeatures features = RuntimeFeatures.ALL;
    private final List<HookProvider> startedProviders = new ArrayList<>();

    /**
     * How long after it serves the proxy asks the backend whether it serves v1alpha2 unless a call
     * asked first: the gRPC client the probe brings up would otherwise take its CPU time from the
     * first calls the proxy relays.
     */
    static final long FIRST_PROBE_DELAY_MILLIS = 1000;

    /** The first probe (a second after the proxy serves): its answer, null if inconclusive. */
    private final CompletableFuture<Boolean> firstProbe = new CompletableFuture<>();

    /** Whether the backend serves v1alpha2: null until a probe was conclusive. */
    private volatile Boolean v1alpha2;

    private boolean started;
    private boolean closed;

    private CriProxy(Builder b) {
        this.config = b;
        this.transport = new ProxyTransport(b.listen, b.backend, b.ioThreads);
        this.transport.metrics(RelayMetrics.of(b.meterRegistry));
        AtomicInteger n = new AtomicInteger();
        this.workers =
                new ThreadPoolExecutor(
                        b.workerThreads,
                        b.workerThreads,
                        30,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(b.workerQueue),
                        r -> {
                            Thread t = new Thread(r, WORKER_THREAD_PREFIX + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        workers.allowCoreThreadTimeOut(true); // idle, the proxy keeps no worker thread
    }

    /** The gRPC channel to the backend (made on first use: a proxy without hooks starts without it). */
    private ManagedChannel backend() {
        return transport.backend();
    }

    /** A builder; {@code listen} and {@code backend} are required. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Rebuilds the checkpoint store from the backend, starts watching the hook config directory,
     * starts serving, and a second later probes whether the backend serves v1alpha2. A backend
     * that is down at start is not fatal: the store is rebuilt as far as possible and calls fail
     * with UNAVAILABLE until the backend is up.
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
        List<Object> fixed = new ArrayList<>(config.hooks);
        if (config.serviceLoader != null) {
            fixed.addAll(Hooks.loadBlocking(config.serviceLoader));
            fixed.addAll(Hooks.loadAsync(config.serviceLoader));
        }
        if (config.hookConfigDir != null) {
            try {
                configDir = HookConfigDirectory.watch(config.hookConfigDir);
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
        }
        // without hooks, and no directory or provider to add them later, the lifecycle methods are
        // not intercepted at all: those calls are relayed like every other, and no store is kept
        boolean hooksPossible =
                !fixed.isEmpty() || configDir != null || !config.providers.isEmpty();
        List<AsyncCriInterceptor> chain = new ArrayList<>();
        for (Registered r : config.interceptors) {
            chain.add(
                    r.async != null
                            ? r.async
                            : CriInterceptor.async(
                                    r.blocking, r.worker != null ? r.worker : workers));
        }
        if (config.pullObserver != null) {
            // after the user's interceptors: it sees the pulls as they reach the runtime
            chain.add(new PullObserving(config.pullObserver));
        }
        if (hooksPossible) {
            try {
                startHooks(fixed);
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
            chain.add(hooks);
        }
        // the user's interceptors get the generated descriptors (they may compare them by
        // identity); the proxy's own links go by name, so without user interceptors a method's
        // message classes are loaded when one of its calls is first decoded, not at start
        List<MethodDescriptor<?, ?>> v1 =
                config.interceptors.isEmpty() ? CriMethods.lazy() : CriMethods.generated();
        List<MethodDescriptor<?, ?>> methods = new ArrayList<>(v1);
        // v1alpha2 methods are decoded like v1 ones; hooks run on them only once a probe showed the
        // backend serves v1alpha2 (ProxyHooks asks hooksApply)
        methods.addAll(
                asV1alpha2(
                        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.class,
                        io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.SERVICE_NAME,
                        v1));
        methods.addAll(
                asV1alpha2(
                        io.cri4j.cri.v1alpha2.ImageServiceGrpc.class,
                        io.cri4j.cri.v1alpha2.ImageServiceGrpc.SERVICE_NAME,
                        v1));
        if (config.pullObserver != null) {
            methods.addAll(PullObserving.localMethods()); // answered here, not relayed
        }
        InterceptedService intercepted =
                new InterceptedService(
                        transport.lazyBackend(),
                        chain,
                        methods,
                        Tracing.of(config.openTelemetry, "io.cri4j.proxy"));
        try {
            // everything else is relayed as HTTP/2 frames on the transport thread
            transport.start(intercepted, config.socketMode);
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
        // asked a second after the proxy serves, not before: bringing up the client for it would
        // delay the first relayed calls; a v1alpha2 call that needs the answer asks (or joins) it
        transport.schedule(this::startFirstProbe, FIRST_PROBE_DELAY_MILLIS);
        LOG.info(
                "CRI proxy listening on {} for backend {} (intercepted methods: {}, hooks: {})",
                config.listen,
                config.backend,
                intercepted.size(),
                hooks == null ? "none" : hooks.chain().hookNames());
        return this;
    }

    /**
     * Rebuilds the store, makes the hook chain, configures and synchronizes its hooks, then starts
     * the providers (which configure and synchronize theirs).
     */
    private void startHooks(List<Object> fixed) throws IOException {
        try {
            store.rebuild(RuntimeServiceGrpc.newBlockingStub(backend()));
        } catch (StatusRuntimeException e) {
            LOG.warn(
                    "could not rebuild the checkpoint store from the backend {}: {}",
                    config.backend,
                    IoErrors.describe(e.getStatus()));
        }
        HookSource source = new HookSource(fixed, configDir);
        List<HookProvider> providers = List.copyOf(config.providers);
        HookChain.Builder chain =
                HookChain.builder()
                        .name("cri4j-proxy")
                        .source(source::hold, source::release)
                        .provided(new ProvidedHooks(providers, fixed, configDir));
        if (config.meterRegistry != null) {
            io.cri4j.proxy.internal.hooks.MeterRegistries.bind(chain, config.meterRegistry);
        }
        if (config.openTelemetry != null) {
            io.cri4j.proxy.internal.hooks.MeterRegistries.bindTracing(chain, config.openTelemetry);
        }
        HookChain hookChain = chain.build();
        features = backendFeatures();
        hooks =
                new ProxyHooks(
                        hookChain,
                        store,
                        backend(),
                        this::hooksApply,
                        features,
                        DeviceNodes.system());
        hooks.start();
        watchBackend(backend().getState(false));
        for (HookProvider p : providers) {
            p.start(hooks);
            startedProviders.add(p);
        }
    }

    /**
     * Each time the proxy's channel to the backend is ready again after it was not (the runtime
     * restarted: it may be another version now, or another runtime on the same socket), reads what
     * it honours again; the hooks' adjustments of later requests follow it. The channel reconnects
     * when the hooks' exit follower asks the backend again, within a second or two of its return.
     */
    private void watchBackend(ConnectivityState seen) {
        if (seen == ConnectivityState.SHUTDOWN) {
            return;
        }
        backend()
                .notifyWhenStateChanged(
                        seen,
                        () -> {
                            ConnectivityState now = backend().getState(false);
                            if (now == ConnectivityState.READY && seen != ConnectivityState.READY) {
                                rereadFeatures();
                            }
                            watchBackend(now);
                        });
    }

    private void rereadFeatures() {
        Futures.addCallback(
                RuntimeServiceGrpc.newFutureStub(backend())
                        .withDeadlineAfter(config.probeTimeoutMillis, TimeUnit.MILLISECONDS)
                        .version(io.cri4j.cri.v1.VersionRequest.getDefaultInstance()),
                new FutureCallback<io.cri4j.cri.v1.VersionResponse>() {
                    @Override
                    public void onSuccess(io.cri4j.cri.v1.VersionResponse v) {
                        RuntimeFeatures now =
                                RuntimeFeatures.detect(v.getRuntimeName(), v.getRuntimeVersion());
                        RuntimeFeatures before = features;
                        ProxyHooks h = hooks;
                        if (h != null && !now.equals(before)) {
                            features = now;
                            LOG.info(
                                    "the backend is {} now (was {}): CDI devices {}, hugepage"
                                            + " limits {}",
                                    now.runtime(),
                                    before.runtime(),
                                    now.cdiDevices() ? "honoured" : "dropped",
                                    now.hugepageLimits() ? "honoured" : "dropped");
                            h.backendChanged(now);
                        }
                    }

                    @Override
                    public void onFailure(Throwable t) {
                        LOG.debug("could not read the backend's version again: {}", t.toString());
                    }
                },
                MoreExecutors.directExecutor());
    }

    /**
     * The backend's runtime name and version (for hooks' {@code Configure}) and what it honours of
     * the fields CRI carries on this node.
     */
    private RuntimeFeatures backendFeatures() {
        try {
            io.cri4j.cri.v1.VersionResponse v =
                    RuntimeServiceGrpc.newBlockingStub(backend())
                            .withDeadlineAfter(config.probeTimeoutMillis, TimeUnit.MILLISECONDS)
                            .version(io.cri4j.cri.v1.VersionRequest.getDefaultInstance());
            RuntimeFeatures f = RuntimeFeatures.detect(v.getRuntimeName(), v.getRuntimeVersion());
            if (!f.cdiDevices() || !f.hugepageLimits()) {
                LOG.info(
                        "the backend {} drops {}: hooks asking for them are answered as for fields"
                                + " CRI cannot carry",
                        f.runtime(),
                        (f.cdiDevices() ? "" : "CDI devices")
                                + (!f.cdiDevices() && !f.hugepageLimits() ? " and " : "")
                                + (f.hugepageLimits() ? "" : "hugepage limits"));
            }
            return f;
        } catch (StatusRuntimeException e) {
            return new RuntimeFeatures("unknown", true, true);
        }
    }

    /**
     * The in-process hooks and the config directory's, as one list per directory generation;
     * an event holds the generation it started with until it ends.
     */
    private static final class HookSource {
        private final List<Object> fixed;
        private final HookConfigDirectory dir;
        private final Held none;
        private volatile Held last;

        /** The hooks of one event: the fixed ones, then the directory's (held). */
        static final class Held extends java.util.AbstractList<Object> {
            final List<Object> all;
            final List<RemoteRuntimeHook> generation;

            Held(List<Object> fixed, List<RemoteRuntimeHook> generation) {
                List<Object> a = new ArrayList<>(fixed);
                if (generation != null) {
                    java.util.Set<String> names = new java.util.HashSet<>();
                    for (Object h : fixed) {
                        names.add(h instanceof AsyncHook x ? x.name() : ((Hook) h).name());
                    }
                    for (RemoteRuntimeHook r : generation) {
                        if (names.add(r.name())) {
                            a.add(r);
                        } else {
                            LOG.warn(
                                    "hook config {} is not run: an in-process hook has its name",
                                    r.name());
                        }
                    }
                }
                this.all = List.copyOf(a);
                this.generation = generation;
            }

            @Override
            public Object get(int i) {
                return all.get(i);
            }

            @Override
            public int size() {
                return all.size();
            }
        }

        HookSource(List<Object> fixed, HookConfigDirectory dir) {
            this.fixed = List.copyOf(fixed);
            this.dir = dir;
            this.none = new Held(this.fixed, null);
        }

        Held hold() {
            if (dir == null) {
                return none;
            }
            List<RemoteRuntimeHook> g = dir.hold();
            Held h = last;
            if (h == null || h.generation != g) {
                h = new Held(fixed, g);
                last = h;
            }
            return h;
        }

        void release(Held h) {
            if (h.generation != null) {
                dir.release(h.generation);
            }
        }
    }

    /**
     * The providers' hooks whose names no other hook has (a hook named like an in-process hook, a
     * config file or an earlier provider's hook is left out, with one warning), as the same list
     * while nothing changed.
     */
    private static final class ProvidedHooks
            implements java.util.function.Supplier<List<AsyncHook>> {
        private final List<HookProvider> providers;
        private final java.util.Set<String> fixedNames = new java.util.HashSet<>();
        private final HookConfigDirectory dir;
        private final java.util.Set<AsyncHook> warned =
                java.util.Collections.newSetFromMap(new java.util.concurrent.ConcurrentHashMap<>());
        private volatile List<Object> lastParts = List.of();
        private volatile List<AsyncHook> last = List.of();

        ProvidedHooks(List<HookProvider> providers, List<Object> fixed, HookConfigDirectory dir) {
            this.providers = providers;
            this.dir = dir;
            for (Object h : fixed) {
                fixedNames.add(h instanceof AsyncHook a ? a.name() : ((Hook) h).name());
            }
        }

        @Override
        public List<AsyncHook> get() {
            if (providers.isEmpty()) {
                return List.of();
            }
            List<Object> parts = new ArrayList<>(providers.size() + 1);
            providers.forEach(p -> parts.add(p.hooks()));
            parts.add(dir == null ? List.of() : dir.get());
            List<Object> before = lastParts;
            boolean same = before.size() == parts.size();
            for (int i = 0; same && i < parts.size(); i++) {
                same = before.get(i) == parts.get(i);
            }
            if (same) {
                return last;
            }
            java.util.Set<String> names = new java.util.HashSet<>(fixedNames);
            if (dir != null) {
                dir.get().forEach(h -> names.add(h.name()));
            }
            List<AsyncHook> all = new ArrayList<>();
            for (int i = 0; i < providers.size(); i++) {
                @SuppressWarnings("unchecked")
                List<AsyncHook> part = (List<AsyncHook>) parts.get(i);
                for (AsyncHook h : part) {
                    if (names.add(h.name())) {
                        all.add(h);
                    } else if (warned.add(h)) {
                        LOG.warn(
                                "hook {} of {} is not run: another hook of the proxy has its name",
                                h.name(),
                                providers.get(i));
                    }
                }
            }
            List<AsyncHook> out = List.copyOf(all);
            last = out;
            lastParts = parts;
            return out;
        }
    }

    /**
     * The v1alpha2 methods the backend serves, presented with the v1 message classes (the two
     * versions are wire-compatible for every v1alpha2 message; every v1alpha2 method is unary, as
     * its v1 namesake). The names come from the generated class's method getters
     * ({@code getVersionMethod}): its service descriptor would load and initialise every v1alpha2
     * message class, about 2 MiB of metaspace the proxy never uses.
     */
    static List<MethodDescriptor<?, ?>> asV1alpha2(
            Class<?> alphaGrpc,
            String alphaService,
            java.util.Collection<MethodDescriptor<?, ?>> v1) {
        Map<String, MethodDescriptor<?, ?>> byName = new HashMap<>();
        for (MethodDescriptor<?, ?> m : v1) {
            byName.put(m.getBareMethodName(), m);
        }
        List<MethodDescriptor<?, ?>> out = new ArrayList<>();
        for (java.lang.reflect.Method getter : alphaGrpc.getDeclaredMethods()) {
            String n = getter.getName();
            if (!java.lang.reflect.Modifier.isStatic(getter.getModifiers())
                    || getter.getParameterCount() != 0
                    || getter.getReturnType() != MethodDescriptor.class
                    || !n.startsWith("get")
                    || !n.endsWith("Method")) {
                continue;
            }
            MethodDescriptor<?, ?> m = byName.get(n.substring(3, n.length() - "Method".length()));
            if (m != null && m.getType() == MethodDescriptor.MethodType.UNARY) {
                out.add(
                        m.toBuilder()
                                .setFullMethodName(
                                        MethodDescriptor.generateFullMethodName(
                                                alphaService, m.getBareMethodName()))
                                .setSchemaDescriptor(null)
                                .build());
            }
        }
        return out;
    }

    /**
     * Asks the backend for v1alpha2 Version unless a probe is running (then joins it) or one was
     * conclusive: completes with TRUE/FALSE when the backend answered (or refused) it, null when
     * it could not be reached.
     */
    private CompletableFuture<Boolean> probeV1alpha2() {
        Boolean known = v1alpha2;
        if (known != null) {
            return CompletableFuture.completedFuture(known);
        }
        CompletableFuture<Boolean> probe = new CompletableFuture<>();
        if (!probing.compareAndSet(null, probe)) {
            CompletableFuture<Boolean> running = probing.get();
            return running != null ? running : CompletableFuture.completedFuture(v1alpha2);
        }
        io.grpc.stub.ClientCalls.asyncUnaryCall(
                backend()
                        .newCall(
                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.getVersionMethod(),
                                io.grpc.CallOptions.DEFAULT.withDeadlineAfter(
                                        config.probeTimeoutMillis, TimeUnit.MILLISECONDS)),
                io.cri4j.cri.v1alpha2.VersionRequest.getDefaultInstance(),
                new io.grpc.stub.StreamObserver<io.cri4j.cri.v1alpha2.VersionResponse>() {
                    @Override
                    public void onNext(io.cri4j.cri.v1alpha2.VersionResponse r) {
                        v1alpha2 = Boolean.TRUE;
                    }

                    @Override
                    public void onError(Throwable t) {
                        Status s = Status.fromThrowable(t);
                        if (s.getCode() == Status.Code.UNIMPLEMENTED) {
                            v1alpha2 = Boolean.FALSE;
                        } else {
                            LOG.warn(
                                    "v1alpha2 probe of backend {} failed ({}); probing again on the next"
                                            + " v1alpha2 call",
                                    config.backend,
                                    IoErrors.describe(s));
                        }
                        done();
                    }

                    @Override
                    public void onCompleted() {
                        done();
                    }

                    private void done() {
                        probing.set(null);
                        probe.complete(v1alpha2);
                    }
                });
        return probe;
    }

    /**
     * Whether the hooks apply to a call of {@code m} now: on v1alpha2 calls only when the backend
     * serves v1alpha2, probed (without blocking) while that is not known; a backend that cannot
     * be reached fails the call rather than let it pass unhooked.
     */
    private CompletionStage<Boolean> hooksApply(MethodDescriptor<?, ?> m) {
        String svc = m.getServiceName();
        if (svc == null || !svc.startsWith("runtime.v1alpha2.")) {
            return CompletableFuture.completedFuture(true);
        }
        return probeV1alpha2()
                .thenApply(
                        served -> {
                            if (served == null) {
                                throw new java.util.concurrent.CompletionException(
                                        Status.UNAVAILABLE
                                                .withDescription(
                                                        "backend "
                                                                + config.backend
                                                                + " is unreachable (cannot tell whether it serves"
                                                                + " runtime.v1alpha2)")
                                                .asException());
                            }
                            return served;
                        });
    }

    /** The first probe, on a worker thread (the probe's first call loads the gRPC client). */
    private void startFirstProbe() {
        try {
            workers.execute(
                    () -> {
                        try {
                            probeV1alpha2()
                                    .whenComplete((served, t) -> firstProbe.complete(served));
                        } catch (RuntimeException e) {
                            firstProbe.complete(null);
                            LOG.warn(
                                    "v1alpha2 probe of backend {} failed: {}",
                                    config.backend,
                                    e.toString());
                        }
                    });
        } catch (RejectedExecutionException closing) {
            firstProbe.complete(null);
        }
    }

    /** Completes when the first probe (a second after the proxy served) has its answer. For tests. */
    CompletionStage<Boolean> firstProbe() {
        return firstProbe;
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

    /**
     * Stops serving, removes the socket, closes the backend channel, the hook providers and the
     * hooks; idempotent.
     */
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
        List<HookProvider> providers;
        synchronized (this) {
            providers = List.copyOf(startedProviders);
        }
        for (HookProvider p : providers) {
            try {
                p.close();
            } catch (RuntimeException e) {
                LOG.warn("closing hook provider {} failed", p, e);
            }
        }
        if (hooks != null) {
            hooks.close();
        }
        if (configDir != null) {
            configDir.close();
        }
    }

    /** An interceptor as added: asynchronous, or blocking with its worker (null: the pool's). */
    private record Registered(
            AsyncCriInterceptor async, CriInterceptor blocking, Executor worker) {}

    /** Configures a {@link CriProxy}. */
    public static final class Builder {
        private CriEndpoint listen;
        private CriEndpoint backend;
        private String socketMode = CriServer.DEFAULT_SOCKET_MODE;
        private final List<Registered> interceptors = new ArrayList<>();
        private int workerThreads = 16;
        private int workerQueue = 1024;
        private final List<Object> hooks = new ArrayList<>();
        private final List<HookProvider> providers = new ArrayList<>();
        private ClassLoader serviceLoader;
        private Path hookConfigDir;
        private long probeTimeoutMillis = 2000;
        private int ioThreads = 1;
        private PullObserver pullObserver;
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional
        private Object openTelemetry; // an OpenTelemetry; typed Object so the API stays optional

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
            interceptors.add(
                    new Registered(Objects.requireNonNull(interceptor, "interceptor"), null, null));
            return this;
        }

        /**
         * Adds an interceptor that may block, run on the proxy's worker pool (bounded, see
         * {@link #workerThreads}; threads named {@value CriProxy#WORKER_THREAD_PREFIX}N) and never on the
         * I/O thread; interceptors run in the order added, before the hooks.
         */
        public Builder addInterceptor(CriInterceptor interceptor) {
            interceptors.add(
                    new Registered(null, Objects.requireNonNull(interceptor, "interceptor"), null));
            return this;
        }

        /**
         * Adds an interceptor that may block, run on {@code worker} (which the caller owns and shuts
         * down after the proxy); see {@link CriInterceptor#async}.
         */
        public Builder addInterceptor(CriInterceptor interceptor, Executor worker) {
            interceptors.add(
                    new Registered(
                            null,
                            Objects.requireNonNull(interceptor, "interceptor"),
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
                throw new IllegalArgumentException(
                        "workerThreads must be at least 1, got " + threads);
            }
            if (queue < 1) {
                throw new IllegalArgumentException(
                        "the worker queue must hold at least 1, got " + queue);
            }
            this.workerThreads = threads;
            this.workerQueue = queue;
            return this;
        }

        /** Adds an in-process hook; it runs on the hooks' worker threads. */
        public Builder addHook(Hook hook) {
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /** Adds an in-process hook that never blocks; it runs on the proxy's I/O thread. */
        public Builder addHook(AsyncHook hook) {
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /**
         * Also loads hooks with {@link java.util.ServiceLoader} from {@code loader} at start: the
         * classes listed in {@code META-INF/services/io.cri4j.hook.Hook} and {@code
         * io.cri4j.hook.AsyncHook}.
         */
        public Builder loadHooks(ClassLoader loader) {
            this.serviceLoader = Objects.requireNonNull(loader, "loader");
            return this;
        }

        /**
         * Adds hooks that come and go while the proxy runs (external NRI plugins, for example): the
         * proxy starts the provider with itself as the {@link io.cri4j.hook.host.HookHost} once its
         * own hooks are configured, calls the provider's hooks at every event with the others, and
         * closes the provider when it closes.
         */
        public Builder addHookProvider(HookProvider provider) {
            providers.add(Objects.requireNonNull(provider, "provider"));
            return this;
        }

        /**
         * Watches this directory for Koordinator hook configs ({@code *.json}): each file is a
         * {@link RemoteRuntimeHook}.
         */
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

        /**
         * Records the proxy's calls ({@code cri4j_proxy_calls_total} by service, method, gRPC code
         * and kind, {@code cri4j_proxy_call_duration_seconds}, {@code cri4j_proxy_calls_inflight})
         * and its hooks ({@code cri4j_hook_duration_seconds}, {@code
         * cri4j_hook_chain_duration_seconds}, chain {@code cri4j-proxy}) into {@code registry};
         * without one nothing is recorded and Micrometer need not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Records a span of each intercepted call (a {@code SERVER} span named after the gRPC
         * method, {@code runtime.v1.RuntimeService/CreateContainer}, with {@code rpc.system},
         * {@code rpc.service}, {@code rpc.method} and {@code rpc.grpc.status_code}), whose parent
         * is the W3C trace context ({@code traceparent}) in the client's metadata when it sends
         * one; under it the call to the runtime (a {@code CLIENT} span of the same name) and the
         * hooks' spans ({@link io.cri4j.hook.HookChain.Builder#openTelemetry}, chain {@code
         * cri4j-proxy}; Koordinator hook servers get the hook's span as {@code traceparent}). The
         * interceptors run in the call's span. Calls no interceptor or hook wants are relayed as
         * frames and get no span; the client's headers, {@code traceparent} included, reach the
         * runtime unchanged. Without one nothing is recorded and the OpenTelemetry API need not be
         * on the class path.
         *
         * @param openTelemetry where the tracer comes from (scopes {@code io.cri4j.proxy} and
         *     {@code io.cri4j.hook})
         */
        // the OpenTelemetry API is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
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
                throw new IllegalStateException(
                        "listen and backend are the same socket: " + listen);
            }
            return new CriProxy(this);
        }
    }
}
