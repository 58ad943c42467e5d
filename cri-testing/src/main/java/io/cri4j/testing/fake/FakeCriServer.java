package io.cri4j.testing.fake;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.cri.v1.CgroupDriver;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.streaming.StreamingServer;
import io.cri4j.testing.fake.internal.FakeContainerProcesses;
import io.cri4j.testing.fake.internal.FakeContent;
import io.cri4j.testing.fake.internal.FakeContentService;
import io.cri4j.testing.fake.internal.FakeImageService;
import io.cri4j.testing.fake.internal.FakeNriHost;
import io.cri4j.testing.fake.internal.FakeRuntimeService;
import io.cri4j.testing.fake.internal.FakeState;
import io.cri4j.testing.fake.internal.FakeStreamingRuntime;
import io.cri4j.testing.fake.internal.StreamingServerUrls;
import io.cri4j.testing.fake.internal.V1alpha2Bridge;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-memory CRI runtime serving {@code runtime.v1} and {@code runtime.v1alpha2} RuntimeService and
 * ImageService from one shared state, on a unix socket (real tools such as crictl can use it), TCP, or
 * in-process. It records every call ({@link #calls()}) and injects faults per RPC ({@link #faults()}).
 *
 * <pre>{@code
 * try (FakeCriServer fake = FakeCriServer.builder()
 *         .listen(CriEndpoint.parse("unix:///tmp/fake-cri.sock"))
 *         .build()
 *         .start()) {
 *     // point the code under test at fake.endpoint()
 * }
 * }</pre>
 *
 * <p>Behaviour follows containerd's CRI plugin (checked by running {@code CriLifecycleConformance} and probes
 * against containerd 1.6, and cri-tools' critest against containerd 2.3.4): ids are 64 hex characters; unknown ids
 * answer NOT_FOUND; stopping or removing what does not exist succeeds; a recursive read-only mount that is not
 * read-only or not of private propagation fails CreateContainer with UNKNOWN; stopping a created container leaves it CREATED; a stop with timeout 0 leaves exit code 137; stopping a
 * pod kills its containers and removing it removes them; host-network pods have no IP; {@code ImageStatus} of a
 * missing image answers an empty response; {@code ContainerStatus} shows the first repo tag and repo digest while
 * {@code ListContainers} shows the image id. Deliberate differences:
 * <ul>
 *   <li>state conflicts (starting twice, exec or ExecSync in a container that is not running, creating in a
 *       stopped sandbox, reopening the log of a stopped container) answer FAILED_PRECONDITION, where containerd
 *       answers UNKNOWN (or NOT_FOUND for creating in a stopped sandbox);</li>
 *   <li>a name already in use answers ALREADY_EXISTS and an invalid image reference INVALID_ARGUMENT
 *       (containerd: UNKNOWN);</li>
 *   <li>{@code PullImage} answers a digest-pinned reference ({@code repo@sha256:...}, as CRI-O does) where
 *       containerd answers the image id; every valid reference can be pulled (inject a fault to refuse one);</li>
 *   <li>stats of a container that never ran answer zero usage (containerd: UNKNOWN);</li>
 *   <li>newer RPCs containerd 1.6 lacks are served: RuntimeConfig, GetContainerEvents, the Stream* lists.</li>
 * </ul>
 * A started container with a command runs it as a host process (see {@link Builder#containerProcesses(boolean)}):
 * its output goes to its log file in the CRI log format and to attached clients, its exit is the container's
 * exit. A container without one stays RUNNING until stopped, or until {@link FakeRuntime#exitContainer(String,
 * int)}. {@code ContainerStatus} reports the CRI config as requested; what hooks changed shows in the OCI spec of
 * its verbose {@code info} (read it with {@link io.cri4j.testing.conformance.ContainerInfo}), as on containerd.
 * {@code ListMetricDescriptors} and {@code ListPodSandboxMetrics} answer kubelet's cAdvisor metric names with
 * values from the fake's own accounting. {@code ExecSync} runs the command through the configured
 * {@link ExecHandler} (by default as a host process). {@code Exec}, {@code Attach} and {@code PortForward}
 * answer URLs of a built-in streaming-core server (see {@link Builder#streamingAddress(String, int)}).
 *
 * <p>The fake is also an NRI host for in-process lifecycle hooks ({@link Builder#addHook(Hook)}): their
 * adjustments change the fake's pods and containers (visible in the verbose {@code ContainerStatus}'s OCI spec,
 * {@code ExecSync}'s environment and {@link FakeRuntime#containerConfig}), their updates and evictions change other containers, and
 * a failing hook under {@code FailurePolicy.FAIL} fails the CRI call with a status naming it. Hooks that come and
 * go, such as external NRI plugins on an {@code NriHost}'s socket, join through {@link
 * Builder#addHookProvider(HookProvider)}.
 */
public final class FakeCriServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FakeCriServer.class);

    private final CriEndpoint endpoint;
    private final String inProcessName;
    private final String socketMode;
    private final FakeState state;
    private final FakeContent content;
    private final FakeRuntime runtime;
    private final CallLog calls = new CallLog();
    private final Faults faults = new Faults();
    private final FakeRuntimeService runtimeService;
    private final ThreadPoolExecutor blocking;
    private final ScheduledExecutorService scheduler;
    private final List<ServerServiceDefinition> services;
    private final StreamingServer streamingServer;
    private final ExecutorService streamPumps;
    private final FakeNriHost hooks;
    private final FakeContainerProcesses processes;

    private final Object lock = new Object();
    private final java.util.concurrent.CountDownLatch terminated =
            new java.util.concurrent.CountDownLatch(1);
    private CriServer socketServer;
    private Server inProcessServer;
    private boolean started;
    private boolean closed;

    private FakeCriServer(Builder b) {
        this.endpoint = b.endpoint;
        this.inProcessName =
                b.endpoint == null
                        ? (b.inProcessName != null
                                ? b.inProcessName
                                : "cri4j-fake-" + UUID.randomUUID())
                        : null;
        this.socketMode = b.socketMode;
        this.state = new FakeState(b.clock);
        this.processes = b.containerProcesses ? new FakeContainerProcesses(state, b.clock) : null;
        StreamingUrls streaming = b.streaming;
        if (streaming == null) {
            this.streamPumps = Executors.newCachedThreadPool(daemonThreads("cri4j-fake-stream"));
            this.streamingServer =
                    StreamingServer.builder(
                                    new FakeStreamingRuntime(
                                            state, b.portMap, streamPumps, processes))
                            .bindAddress(new InetSocketAddress(b.streamingHost, b.streamingPort))
                            .build();
            streaming = new StreamingServerUrls(streamingServer);
        } else {
            this.streamPumps = null;
            this.streamingServer = null;
        }
        this.content = new FakeContent(b.clock, b.pullRate);
        this.runtime = new FakeRuntime(state, content);
        this.blocking =
                new ThreadPoolExecutor(
                        b.maxConcurrentExecs,
                        b.maxConcurrentExecs,
                        30,
                        TimeUnit.SECONDS,
                        new ArrayBlockingQueue<>(256),
                        daemonThreads("cri4j-fake-exec"));
        this.blocking.allowCoreThreadTimeOut(true);
        this.scheduler =
                Executors.newSingleThreadScheduledExecutor(daemonThreads("cri4j-fake-faults"));
        this.hooks =
                b.hooks.isEmpty() && b.providers.isEmpty()
                        ? null
                        : new FakeNriHost(
                                state,
                                b.hooks,
                                b.providers,
                                b.runtimeName,
                                b.runtimeVersion,
                                b.meterRegistry);
        this.runtimeService =
                new FakeRuntimeService(
                        state,
                        new FakeRuntimeService.Settings(
                                b.runtimeName,
                                b.runtimeVersion,
                                b.cgroupDriver,
                                b.execHandler,
                                streaming,
                                blocking,
                                hooks,
                                processes));
        ServerServiceDefinition runtimeV1 = runtimeService.bindService();
        ServerServiceDefinition imageV1 = new FakeImageService(state, content).bindService();
        CallInterceptor interceptor = new CallInterceptor(calls, faults, scheduler, b.clock);
        List<ServerServiceDefinition> all =
                new java.util.ArrayList<>(
                        List.of(
                                ServerInterceptors.intercept(runtimeV1, interceptor),
                                ServerInterceptors.intercept(imageV1, interceptor),
                                ServerInterceptors.intercept(
                                        V1alpha2Bridge.bridge(
                                                runtimeV1,
                                                io.cri4j.cri.v1alpha2.RuntimeServiceGrpc
                                                        .getServiceDescriptor()),
                                        interceptor),
                                ServerInterceptors.intercept(
                                        V1alpha2Bridge.bridge(
                                                imageV1,
                                                io.cri4j.cri.v1alpha2.ImageServiceGrpc
                                                        .getServiceDescriptor()),
                                        interceptor)));
        if (b.contentService) {
            // containerd's content service, as containerd serves it beside CRI (not recorded, no
            // faults)
            all.add(new FakeContentService(content).bind());
        }
        this.services = List.copyOf(all);
    }

    /** A builder; without {@link Builder#listen(CriEndpoint)} the fake serves in-process. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts serving. Blocks only while binding.
     *
     * @return this server
     * @throws IOException when the endpoint cannot be bound (e.g. a live server owns the socket)
     * @throws IllegalStateException when already started or closed
     */
    public FakeCriServer start() throws IOException {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("fake CRI server is closed");
            }
            if (started) {
                throw new IllegalStateException("fake CRI server is already started");
            }
            if (hooks != null) {
                hooks.start();
            }
            if (streamingServer != null) {
                streamingServer.start();
            }
            if (endpoint != null) {
                CriServer.Builder b = CriServer.builder(endpoint).socketMode(socketMode);
                services.forEach(b::addService);
                try {
                    socketServer = b.build().start();
                } catch (IOException | RuntimeException e) {
                    if (streamingServer != null) {
                        streamingServer.close();
                    }
                    throw e;
                }
            } else {
                InProcessServerBuilder b = InProcessServerBuilder.forName(inProcessName);
                services.forEach(b::addService);
                inProcessServer = b.build().start();
            }
            started = true;
            log.info("fake CRI runtime serving {}", describe());
            return this;
        }
    }

    private String describe() {
        return endpoint != null
                ? socketServer.endpoint().toString()
                : "in-process:" + inProcessName;
    }

    /**
     * The endpoint served, with the real port when TCP port 0 was asked for.
     *
     * @throws IllegalStateException when serving in-process or not started
     */
    public CriEndpoint endpoint() {
        synchronized (lock) {
            if (endpoint == null) {
                throw new IllegalStateException(
                        "fake CRI server serves in-process ("
                                + inProcessName
                                + "); use newChannel() or inProcessName()");
            }
            if (socketServer == null) {
                throw new IllegalStateException("fake CRI server is not started");
            }
            return socketServer.endpoint();
        }
    }

    /** The in-process server name, empty when serving on a socket. */
    public Optional<String> inProcessName() {
        return Optional.ofNullable(inProcessName);
    }

    /**
     * Opens a client channel to this server (over the socket, or in-process). The caller shuts it down.
     *
     * @throws IllegalStateException when not started
     */
    public ManagedChannel newChannel() {
        synchronized (lock) {
            if (!started || closed) {
                throw new IllegalStateException("fake CRI server is not running");
            }
        }
        return endpoint != null
                ? CriChannels.newChannel(endpoint())
                : InProcessChannelBuilder.forName(inProcessName).build();
    }

    /** The in-memory state, for arranging tests and simulating container exits. */
    public FakeRuntime runtime() {
        return runtime;
    }

    /** Every call received, with assertions. */
    public CallLog calls() {
        return calls;
    }

    /** Fault injection per RPC. */
    public Faults faults() {
        return faults;
    }

    /**
     * The base URL of the built-in streaming server (e.g. {@code http://127.0.0.1:41234/}), empty when
     * {@link Builder#streamingUrls(StreamingUrls)} replaced it.
     *
     * @throws IllegalStateException when not started
     */
    public Optional<java.net.URI> streamingBaseUrl() {
        synchronized (lock) {
            if (!started) {
                throw new IllegalStateException("fake CRI server is not started");
            }
        }
        return streamingServer == null ? Optional.empty() : Optional.of(streamingServer.baseUrl());
    }

    /**
     * Stops serving: releases hanging calls, ends event streams, stops the server (removing its socket) and the
     * exec threads (killing running exec processes). Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        faults.clear();
        content.close(); // pulls still downloading fail with UNAVAILABLE
        for (Runnable delayed : scheduler.shutdownNow()) {
            delayed.run();
        }
        runtimeService.completeEventStreams();
        if (socketServer != null) {
            socketServer.close();
        }
        if (inProcessServer != null) {
            inProcessServer.shutdown();
            try {
                if (!inProcessServer.awaitTermination(5, TimeUnit.SECONDS)) {
                    inProcessServer.shutdownNow();
                }
            } catch (InterruptedException e) {
                inProcessServer.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
        if (streamingServer != null) {
            streamingServer.close();
            streamPumps.shutdownNow();
        }
        if (hooks != null) {
            hooks.close();
        }
        if (processes != null) {
            processes.close();
        }
        blocking.shutdownNow();
        try {
            blocking.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        terminated.countDown();
        log.info("fake CRI runtime stopped");
    }

    /**
     * Blocks until {@link #close()} has finished (from another thread, e.g. a shutdown hook), for a command
     * line that serves until stopped.
     *
     * @throws InterruptedException when interrupted
     */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Configures a {@link FakeCriServer}; every setting has a working default. */
    public static final class Builder {
        private CriEndpoint endpoint;
        private String inProcessName;
        private String socketMode = CriServer.DEFAULT_SOCKET_MODE;
        private String runtimeName = "cri4j-fake";
        private String runtimeVersion = "0.1.0";
        private CgroupDriver cgroupDriver = CgroupDriver.SYSTEMD;
        private ExecHandler execHandler = ExecHandler.hostProcess();
        private StreamingUrls streaming;
        private String streamingHost = "127.0.0.1";
        private int streamingPort;
        private final java.util.Map<Integer, InetSocketAddress> portMap = new java.util.HashMap<>();
        private Clock clock = Clock.systemUTC();
        private int maxConcurrentExecs = 16;
        private final List<Object> hooks = new java.util.ArrayList<>();
        private final List<HookProvider> providers = new java.util.ArrayList<>();
        private long pullRate;
        private boolean contentService = true;
        private boolean containerProcesses = true;

        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional

        private Builder() {}

        /**
         * Whether a started container runs its command (default true): a container whose config has a
         * command or args runs it as a host process (busybox's applet of that name when {@code
         * /bin/busybox} is installed, as in the busybox test images; the host's command otherwise).
         * Its stdout and stderr are written to its log file in the CRI log format ({@code
         * log_directory}/{@code log_path}, what kubelet and {@code crictl logs} read) and to attached
         * clients, attached clients feed its stdin, and its exit is the container's exit. A container
         * without a command, one whose command cannot start on the host, or every container with
         * {@code false} runs no process: it stays running until stopped, attach echoes stdin.
         */
        public Builder containerProcesses(boolean run) {
            this.containerProcesses = run;
            return this;
        }

        /**
         * Hosts a blocking lifecycle hook, as an NRI runtime hosts a plugin: it is called around the CRI calls
         * (RunPodSandbox with AdjustPodSandbox, CreateContainer, Start/Stop/Remove, UpdateContainerResources, ...),
         * runs on a worker, and its adjustments, updates and evictions are applied to the fake's pods and
         * containers. A hook under {@code FailurePolicy.FAIL} that fails fails the CRI call with a status naming
         * it. Hooks are configured and synchronized in {@link FakeCriServer#start()}.
         */
        public Builder addHook(Hook hook) {
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /** Hosts a lifecycle hook that never blocks; see {@link #addHook(Hook)}. */
        public Builder addHook(AsyncHook hook) {
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /**
         * Records the latency and outcome of the hooks the fake hosts ({@code cri4j_hook_duration_seconds},
         * {@code cri4j_hook_chain_duration_seconds}, chain {@code fake-runtime-hooks}) into {@code registry};
         * without one nothing is recorded and Micrometer need not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = java.util.Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Hosts the hooks of a {@link HookProvider}, such as the external NRI plugins connected to an
         * {@code io.cri4j.nri.NriHost} (module {@code cri4j-nri}): {@link FakeCriServer#start()} starts the
         * provider with a {@link io.cri4j.hook.host.HookHost} backed by the fake (runtime name and version as
         * {@link #runtime(String, String)} sets them; its pods and containers, in NRI's model, as the snapshot new
         * plugins are synchronized with; its runtime handle applies updates and evictions to the fake's
         * containers), and the provider's hooks run in one chain with the in-process hooks ({@link #addHook}),
         * ordered by index and then name. A provider hook whose name another hook has already is not run (logged).
         * {@link FakeCriServer#close()} closes the provider.
         */
        public Builder addHookProvider(HookProvider provider) {
            providers.add(Objects.requireNonNull(provider, "provider"));
            return this;
        }

        /** Serve on this endpoint: a unix socket ({@code unix:///path}) or TCP ({@code tcp://host:port}, port 0 picks one). */
        public Builder listen(CriEndpoint endpoint) {
            this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
            this.inProcessName = null;
            return this;
        }

        /** Serve in-process under this name (the default, with a random name, when no endpoint is given). */
        public Builder inProcess(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("in-process name must not be empty");
            }
            this.inProcessName = name;
            this.endpoint = null;
            return this;
        }

        /** Mode of the unix socket file, e.g. {@code rw-rw----} (the default) or {@code rw-rw-rw-}. */
        public Builder socketMode(String mode) {
            this.socketMode = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** The runtime name and version answered by {@code Version} (default {@code cri4j-fake 0.1.0}). */
        public Builder runtime(String name, String version) {
            if (name == null || name.isBlank() || version == null || version.isBlank()) {
                throw new IllegalArgumentException("runtime name and version must not be empty");
            }
            this.runtimeName = name;
            this.runtimeVersion = version;
            return this;
        }

        /** The cgroup driver answered by {@code RuntimeConfig} (default SYSTEMD). */
        public Builder cgroupDriver(CgroupDriver driver) {
            if (driver == null || driver == CgroupDriver.UNRECOGNIZED) {
                throw new IllegalArgumentException("cgroup driver must be SYSTEMD or CGROUPFS");
            }
            this.cgroupDriver = driver;
            return this;
        }

        /** What runs {@code ExecSync} commands (default {@link ExecHandler#hostProcess()}). */
        public Builder execHandler(ExecHandler handler) {
            this.execHandler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** How many ExecSync commands may run at once (default 16). */
        public Builder maxConcurrentExecs(int max) {
            if (max < 1) {
                throw new IllegalArgumentException(
                        "maxConcurrentExecs must be at least 1, was " + max);
            }
            this.maxConcurrentExecs = max;
            return this;
        }

        /**
         * Replaces the built-in streaming server: Exec/Attach/PortForward answer the URLs this gives
         * ({@link StreamingUrls#unavailable()} makes them answer UNIMPLEMENTED).
         */
        public Builder streamingUrls(StreamingUrls urls) {
            this.streaming = Objects.requireNonNull(urls, "urls");
            return this;
        }

        /**
         * Where the built-in streaming server (cri4j streaming-core, SPDY and WebSocket) listens; default
         * {@code 127.0.0.1} on a free port. Its exec sessions run the command as a host process, attach echoes
         * stdin to stdout (as if the container's process were {@code cat}), port-forward connects to
         * {@link #portForward(int, InetSocketAddress)} targets.
         */
        public Builder streamingAddress(String host, int port) {
            if (host == null || host.isBlank()) {
                throw new IllegalArgumentException("streaming host must not be empty");
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("streaming port must be 0..65535, was " + port);
            }
            this.streamingHost = host;
            this.streamingPort = port;
            return this;
        }

        /**
         * Where a port-forward to {@code podPort} (of any pod) connects; unmapped ports connect to
         * {@code 127.0.0.1:<podPort>}, as for a host-network pod.
         */
        public Builder portForward(int podPort, InetSocketAddress target) {
            if (podPort < 1 || podPort > 65535) {
                throw new IllegalArgumentException("pod port must be 1..65535, was " + podPort);
            }
            portMap.put(podPort, Objects.requireNonNull(target, "target"));
            return this;
        }

        /**
         * How fast {@code PullImage} downloads layers, in bytes per second shared by the layers downloading at
         * once (at most three, as containerd); 0 (the default) stores an image at once. While a pull runs, its
         * layers are ingests in the content service ({@code ListStatuses}: offset and total), so a client
         * following progress as on containerd sees bytes move; the call answers when every layer is committed.
         * Each image gets one to three layers summing to its size (2 to 120 MiB, stable per reference).
         */
        public Builder pullRate(long bytesPerSecond) {
            if (bytesPerSecond < 0) {
                throw new IllegalArgumentException(
                        "pull rate must not be negative, was " + bytesPerSecond);
            }
            this.pullRate = bytesPerSecond;
            return this;
        }

        /**
         * Whether the fake also serves containerd's content service ({@code containerd.services.content.v1.Content}:
         * Info, List, Read, ListStatuses in namespace {@code k8s.io}) on its socket, as containerd does (default
         * true). Without it the fake answers those calls UNIMPLEMENTED, like a runtime that is not containerd.
         */
        public Builder contentService(boolean serve) {
            this.contentService = serve;
            return this;
        }

        /** The clock for timestamps (default the system clock). */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Builds the server; call {@link FakeCriServer#start()} to serve. */
        public FakeCriServer build() {
            return new FakeCriServer(this);
        }
    }
}
