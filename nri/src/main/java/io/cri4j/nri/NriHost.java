package io.cri4j.nri;

import io.cri4j.cri.internal.UnixSockets;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.nri.internal.NriMeters;
import io.cri4j.nri.internal.NriWire;
import io.cri4j.nri.internal.PluginNames;
import io.cri4j.nri.internal.host.HostConnection;
import io.cri4j.nri.internal.host.NriHostMeters;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NRI's runtime side (containerd's {@code pkg/adaptation}) in Java: a socket that NRI plugins
 * connect to (NRI's own Go plugins, cri4j's {@link NriPlugin}, any plugin built on NRI's stub),
 * each of them served to a host as an {@link AsyncHook}. A host (the cri4j CRI proxy, the fake
 * runtime, a runtime shim of your own) {@link #start starts} it with its {@link HookHost} and
 * takes {@link #hooks()} at every event, for example as a {@code HookChain} source next to its
 * in-process hooks.
 *
 * <pre>{@code
 * try (NriHost nri = NriHost.builder(Path.of("/run/my-runtime/nri.sock")).build();
 *      HookChain chain = HookChain.builder().source(nri::hooks).build()) {
 *     nri.start(myHookHost);          // listens; plugins come and go from now on
 *     chain.createContainer(pod, container).thenAccept(result -> ...);
 * }
 * }</pre>
 *
 * <p>For each connection, as containerd does: the plugin must call {@code RegisterPlugin} within
 * the {@linkplain Builder#registrationTimeout registration timeout} with a valid name and
 * two-digit index (a name already connected is refused); it is sent {@code Configure} (the
 * host's runtime name and version, its {@linkplain Builder#config configuration}, the timeouts)
 * and answers with its events; it is sent {@code Synchronize} with the host's {@link
 * HookHost#snapshot() snapshot}, split into several messages with {@code more = true} where the
 * state exceeds ttrpc's 4 MiB message limit (a plugin that does not handle the split is dropped
 * with an error saying so); the updates it answers go to {@link HookHost#runtime()}; only then
 * does {@link #hooks()} list it: name = the plugin's name, index = its index, events = its
 * subscription, timeout and failure policy from this builder. Each event is one ttrpc call bounded
 * by the plugin's {@linkplain Builder#requestTimeout(String, Duration) request timeout}; a call it
 * does not answer in time fails as a {@link io.cri4j.hook.HookTimeoutException} of its hook, which
 * its {@link FailurePolicy} turns into a failed event or a warning, and a plugin that misses
 * {@linkplain Builder#maxMissedDeadlines several deadlines in a row} or disconnects is dropped (it
 * leaves {@link #hooks()}). {@linkplain Builder#requirePlugin Required plugins} fail closed: while
 * absent, a stand-in hook fails every {@code CreateContainer}; once listed, any failure of theirs
 * fails the event. Events without an
 * answer go to a plugin of NRI v0.8 (containerd 2.0/2.1's stub) as {@code StateChange}, once it
 * has answered the v0.12 call {@code UNIMPLEMENTED}. A plugin's own {@code UpdateContainers}
 * (updates and evictions) go to {@link HookHost#runtime()}; what failed is its answer.
 *
 * <p>A plugin that sends bytes that are not NRI, registers badly or too late, subscribes to
 * unknown events or fails {@code Configure} or {@code Synchronize} is dropped with one log line
 * naming it and the reason; other plugins are not affected. All connections share one I/O
 * thread, owned by this host; {@link #close()} stops listening, tells the plugins the runtime
 * shuts down ({@code Shutdown}), closes their connections, removes the socket and stops the
 * thread.
 */
public final class NriHost implements HookProvider {

    private static final Logger LOG = LoggerFactory.getLogger(NriHost.class);

    /** How many deadlines in a row a plugin may miss before it is dropped, by default. */
    public static final int DEFAULT_MAX_MISSED_DEADLINES = 3;

    /** The NRI version this host speaks and sends in {@code Configure}. */
    public static final String NRI_VERSION = NriWire.NRI_VERSION;

    private static final AtomicInteger HOSTS = new AtomicInteger();

    /** Told about plugins; called on the host's I/O thread, must not block. */
    public interface Listener {
        /** A plugin is configured, synchronized and listed in {@link NriHost#hooks()}. */
        default void registered(String name, int index, Set<HookEvent> events) {}

        /**
         * A registered plugin is gone (it disconnected, missed a deadline, or the host closed).
         *
         * @param cause why, or {@code null} for a clean close
         */
        default void disconnected(String name, Throwable cause) {}

        /**
         * A connection was dropped before its plugin was listed.
         *
         * @param who the plugin ({@code plugin 10-name}) or the connection when it never
         *     registered
         * @param reason why
         */
        default void rejected(String who, String reason) {}
    }

    /** Configures an {@link NriHost}. */
    public static final class Builder {
        private final Path socket;
        private Set<PosixFilePermission> socketMode = UnixSockets.parseMode("rw-------");
        private Duration registrationTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(2);
        private FailurePolicy failurePolicy = FailurePolicy.FAIL;
        private final Map<String, String> configs = new HashMap<>();
        private final Map<String, Duration> timeoutsByName = new HashMap<>();
        private final Map<Integer, Duration> timeoutsByIndex = new HashMap<>();
        private int maxMissedDeadlines = DEFAULT_MAX_MISSED_DEADLINES;
        private final Set<String> required = new java.util.LinkedHashSet<>();
        private Listener listener = new Listener() {};
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional

        private Builder(Path socket) {
            this.socket = socket;
        }

        /**
         * The socket file's mode, e.g. {@code rw-------} (the default: a plugin can change every
         * container, so only the owner may connect) or {@code 0660}.
         */
        public Builder socketMode(String mode) {
            this.socketMode = UnixSockets.parseMode(mode);
            return this;
        }

        /** How long a plugin may take to call {@code RegisterPlugin}; default 5 s (NRI's). */
        public Builder registrationTimeout(Duration timeout) {
            this.registrationTimeout = positive(timeout, "registrationTimeout");
            return this;
        }

        /**
         * How long a plugin may take to answer one call ({@code Configure}, each {@code
         * Synchronize} message, each event); default 2 s (NRI's {@code plugin_request_timeout}),
         * at most 1 h. A call it misses fails as a {@link io.cri4j.hook.HookTimeoutException} of
         * its hook; a plugin that misses {@link #maxMissedDeadlines} in a row is dropped. Plugins
         * learn their timeout in {@code Configure}.
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = bounded(timeout, "requestTimeout");
            return this;
        }

        /**
         * The request timeout of the plugin named {@code pluginName} (its name without the index),
         * instead of {@link #requestTimeout(Duration)}: a plugin known to be slow (one that asks
         * an allocator, say) gets more time without giving every plugin more. Takes precedence
         * over a timeout by index.
         */
        public Builder requestTimeout(String pluginName, Duration timeout) {
            timeoutsByName.put(
                    Objects.requireNonNull(pluginName, "pluginName"),
                    bounded(timeout, "the request timeout of " + pluginName));
            return this;
        }

        /** The request timeout of the plugins registering with {@code index} (0..99). */
        public Builder requestTimeout(int index, Duration timeout) {
            if (index < 0 || index > 99) {
                throw new IllegalArgumentException("plugin index must be 0..99, got " + index);
            }
            timeoutsByIndex.put(index, bounded(timeout, "the request timeout of index " + index));
            return this;
        }

        /**
         * How many deadlines in a row a plugin may miss before it is dropped (default {@value
         * #DEFAULT_MAX_MISSED_DEADLINES}; 1 drops it at its first, as containerd does). Each
         * missed deadline fails its call under the plugin's failure policy; an answer in time
         * starts the count again. A missed {@code Configure} or {@code Synchronize} always drops
         * the plugin, which is not listed yet.
         */
        public Builder maxMissedDeadlines(int count) {
            if (count < 1 || count > 1000) {
                throw new IllegalArgumentException(
                        "maxMissedDeadlines must be 1..1000, got " + count);
            }
            this.maxMissedDeadlines = count;
            return this;
        }

        /**
         * Requires the plugin {@code plugin}: a name ({@code nri-logger}, at any index) or an
         * index and name ({@code 10-nri-logger}), as NRI's default validator takes its {@code
         * required_plugins}. While no such plugin is listed, {@link NriHost#hooks()} holds a
         * stand-in hook under that name which fails every {@code CreateContainer} ("required NRI
         * plugin ... is not connected"), as NRI's validator rejects the container; once it is
         * listed its hook fails the event on any failure (an error, a missed deadline, a
         * disconnection mid-call), whatever {@link #failurePolicy} says: required plugins fail
         * closed instead of being skipped.
         */
        public Builder requirePlugin(String plugin) {
            Objects.requireNonNull(plugin, "plugin");
            String n = plugin.matches("\\d\\d-.+") ? plugin.substring(3) : plugin;
            String bad = PluginNames.checkName(n);
            if (bad != null) {
                throw new IllegalArgumentException("required plugin: " + bad);
            }
            required.add(plugin);
            return this;
        }

        /**
         * The failure policy of every plugin's hook: {@link FailurePolicy#FAIL} (the default, as
         * containerd: a plugin's error, a plugin dropped mid-call, fails the event with an error
         * naming it) or {@link FailurePolicy#IGNORE} (logged; the event goes on without its answer).
         */
        public Builder failurePolicy(FailurePolicy policy) {
            this.failurePolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * The configuration text sent in {@code Configure} to the plugin named {@code pluginName}
         * (its name without the index); plugins without one get an empty text.
         */
        public Builder config(String pluginName, String config) {
            configs.put(
                    Objects.requireNonNull(pluginName, "pluginName"),
                    Objects.requireNonNull(config, "config"));
            return this;
        }

        /**
         * Records {@code cri4j_nri_host_plugins} (registered now), {@code
         * cri4j_nri_host_registrations_total}, {@code cri4j_nri_host_disconnections_total} and {@code
         * cri4j_nri_host_rejections_total} (tag {@code socket}) into {@code registry}; the plugins'
         * latency per event is recorded by the {@link io.cri4j.hook.HookChain} that runs them. Without
         * a registry nothing is recorded and Micrometer need not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /** Told about plugins registering, leaving and being refused. */
        public Builder listener(Listener l) {
            this.listener = Objects.requireNonNull(l, "listener");
            return this;
        }

        /**
         * The host, not yet listening ({@link NriHost#start}).
         *
         * @throws UnsupportedOperationException without Netty's epoll transport (Linux only)
         */
        public NriHost build() {
            if (!Epoll.isAvailable()) {
                throw new UnsupportedOperationException(
                        "an NRI host needs Netty's epoll transport "
                                + "(Linux): "
                                + Epoll.unavailabilityCause());
            }
            return new NriHost(this);
        }

        private static Duration positive(Duration d, String what) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, got " + d);
            }
            return d;
        }

        private static Duration bounded(Duration d, String what) {
            positive(d, what);
            if (d.compareTo(HookPolicy.MAX_TIMEOUT) > 0) {
                throw new IllegalArgumentException(what + " must be at most 1 h, got " + d);
            }
            return d;
        }
    }

    /** A builder of a host listening on {@code socket} (a unix socket path). */
    public static Builder builder(Path socket) {
        return new Builder(Objects.requireNonNull(socket, "socket"));
    }

    private final Path socket;
    private final Set<PosixFilePermission> socketMode;
    private final Duration registrationTimeout;
    private final Duration requestTimeout;
    private final FailurePolicy failurePolicy;
    private final Map<String, String> configs;
    private final Map<String, Duration> timeoutsByName;
    private final Map<Integer, Duration> timeoutsByIndex;
    private final int maxMissedDeadlines;
    private final List<String> required;
    private final Map<String, AsyncHook> standIns = new HashMap<>();
    private final Listener listener;
    private final Object lock = new Object();
    private final Map<String, HostConnection> names = new HashMap<>();
    private final List<HostConnection> ready = new ArrayList<>();
    private final Set<HostConnection> connections = ConcurrentHashMap.newKeySet();
    private final AtomicInteger accepted = new AtomicInteger();
    private volatile List<AsyncHook> hooks = List.of();
    private EventLoopGroup group;
    private Channel server;
    private UnixSockets.Claim claim;
    private boolean started;
    private volatile boolean closed;

    private NriHost(Builder b) {
        this.socket = b.socket;
        this.socketMode = Set.copyOf(b.socketMode);
        this.registrationTimeout = b.registrationTimeout;
        this.requestTimeout = b.requestTimeout;
        this.failurePolicy = b.failurePolicy;
        this.configs = Map.copyOf(b.configs);
        this.timeoutsByName = Map.copyOf(b.timeoutsByName);
        this.timeoutsByIndex = Map.copyOf(b.timeoutsByIndex);
        this.maxMissedDeadlines = b.maxMissedDeadlines;
        this.required = List.copyOf(b.required);
        this.listener =
                NriHostMeters.listening(
                        b.listener,
                        NriMeters.host(b.meterRegistry, b.socket.toString(), () -> hooks().size()));
        synchronized (lock) {
            publish();
        }
    }

    /** The request timeout of a plugin: by name, else by index, else the host's. */
    private Duration timeoutOf(String name, int index) {
        Duration d = timeoutsByName.get(name);
        if (d == null) {
            d = timeoutsByIndex.get(index);
        }
        return d == null ? requestTimeout : d;
    }

    /** Whether {@code key} of {@link Builder#requirePlugin} names the plugin. */
    private static boolean names(String key, String name, int index) {
        return key.equals(name) || key.equals(String.format("%02d-%s", index, name));
    }

    private boolean isRequired(String name, int index) {
        return required.stream().anyMatch(k -> names(k, name, index));
    }

    /**
     * Listens on the socket for {@code host}: replaces a stale socket file, refuses a path owned
     * by another live server (or that is not a socket), creates parent directories, gives the
     * socket its mode. Returns once listening, without waiting for any plugin.
     *
     * @throws IOException naming the socket and the reason when it cannot be served
     * @throws IllegalStateException when started twice or closed
     */
    @Override
    public void start(HookHost host) throws IOException {
        Objects.requireNonNull(host, "host");
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException(this + " is closed");
            }
            if (started) {
                throw new IllegalStateException(this + " was started already");
            }
            started = true;
            HostConnection.Settings settings =
                    new HostConnection.Settings(
                            host,
                            registrationTimeout,
                            requestTimeout,
                            failurePolicy,
                            n -> configs.getOrDefault(n, ""),
                            NRI_VERSION,
                            this::timeoutOf,
                            maxMissedDeadlines,
                            this::isRequired);
            group =
                    new MultiThreadIoEventLoopGroup(
                            1,
                            new DefaultThreadFactory(
                                    "cri4j-nri-host-" + HOSTS.incrementAndGet(), true),
                            EpollIoHandler.newFactory());
            try {
                claim = UnixSockets.claim(socket);
                server =
                        new ServerBootstrap()
                                .group(group)
                                .channel(EpollServerDomainSocketChannel.class)
                                .childHandler(
                                        new ChannelInitializer<Channel>() {
                                            @Override
                                            protected void initChannel(Channel ch) {
                                                HostConnection c =
                                                        new HostConnection(
                                                                ch,
                                                                settings,
                                                                registry,
                                                                describePeer(ch));
                                                connections.add(c);
                                                ch.closeFuture()
                                                        .addListener(f -> connections.remove(c));
                                                ch.pipeline().addLast(c);
                                            }
                                        })
                                .bind(new DomainSocketAddress(claim.bindPath().toFile()))
                                .sync()
                                .channel();
                claim.publish(socketMode);
            } catch (IOException | RuntimeException e) {
                stopNow();
                throw new IOException("cannot serve NRI on " + socket + ": " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopNow();
                throw new IOException("interrupted while binding " + socket, e);
            }
            LOG.info(
                    "NRI host listening on {} for {} {}",
                    socket,
                    host.runtimeName(),
                    host.runtimeVersion());
        }
    }

    private String describePeer(Channel ch) {
        String n = "connection #" + accepted.incrementAndGet();
        if (ch instanceof EpollDomainSocketChannel d) {
            try {
                return n + " from pid " + d.peerCredentials().pid();
            } catch (IOException | RuntimeException e) {
                return n;
            }
        }
        return n;
    }

    /** The socket plugins connect to. */
    public Path socket() {
        return socket;
    }

    /**
     * The plugins ready now, one {@link AsyncHook} each, by index and then name. The same list
     * instance until a plugin comes or goes. Never blocks.
     */
    @Override
    public List<AsyncHook> hooks() {
        return hooks;
    }

    private final HostConnection.Registry registry =
            new HostConnection.Registry() {
                @Override
                public String reserve(HostConnection c, String name) {
                    synchronized (lock) {
                        if (closed) {
                            return "the NRI host is closing";
                        }
                        HostConnection other = names.get(name);
                        if (other != null) {
                            return "a plugin named \""
                                    + name
                                    + "\" is connected already ("
                                    + other.describe()
                                    + ")";
                        }
                        names.put(name, c);
                        return null;
                    }
                }

                @Override
                public void ready(HostConnection c) {
                    synchronized (lock) {
                        if (closed) {
                            c.channel().close();
                            return;
                        }
                        ready.add(c);
                        publish();
                    }
                    safely(() -> listener.registered(c.name(), c.index(), c.events()));
                }

                @Override
                public void gone(HostConnection c, Throwable cause) {
                    boolean wasReady;
                    synchronized (lock) {
                        wasReady = ready.remove(c);
                        if (c.holdsName()) {
                            names.remove(c.name(), c);
                        }
                        if (wasReady) {
                            publish();
                        }
                    }
                    if (wasReady) {
                        safely(() -> listener.disconnected(c.name(), cause));
                    } else if (!closed) {
                        String why =
                                cause == null
                                        ? "it closed the connection before it was registered"
                                        : cause.getMessage();
                        safely(() -> listener.rejected(c.describe(), why));
                    }
                }
            };

    /**
     * Rebuilds {@link #hooks}: the ready plugins, and a stand-in for each required plugin none of
     * them is, by index and then name; under the lock.
     */
    private void publish() {
        List<AsyncHook> out = new ArrayList<>();
        ready.forEach(c -> out.add(c.hook()));
        for (String key : required) {
            if (ready.stream().noneMatch(c -> names(key, c.name(), c.index()))) {
                out.add(standIns.computeIfAbsent(key, RequiredPluginMissing::new));
            }
        }
        out.sort(
                Comparator.<AsyncHook>comparingInt(h -> h.policy().index())
                        .thenComparing(AsyncHook::name));
        hooks = List.copyOf(out);
    }

    /**
     * Stands in for a required plugin that is not listed: fails every {@code CreateContainer}, as
     * NRI's default validator rejects a container whose required plugins are not present.
     */
    private static final class RequiredPluginMissing implements AsyncHook {
        private final String key;
        private final HookPolicy policy;

        RequiredPluginMissing(String key) {
            this.key = key;
            int index = key.matches("\\d\\d-.+") ? Integer.parseInt(key.substring(0, 2)) : 0;
            this.policy = new HookPolicy(index, Duration.ofSeconds(1), FailurePolicy.FAIL);
        }

        @Override
        public String name() {
            return key;
        }

        @Override
        public HookPolicy policy() {
            return policy;
        }

        @Override
        public Set<HookEvent> events() {
            return Set.of(HookEvent.CREATE_CONTAINER);
        }

        @Override
        public java.util.concurrent.CompletionStage<io.cri4j.hook.HookResult> createContainer(
                io.cri4j.hook.nri.v1alpha1.PodSandbox pod,
                io.cri4j.hook.nri.v1alpha1.Container container) {
            return CompletableFuture.failedFuture(
                    new IllegalStateException(
                            "required NRI plugin \""
                                    + key
                                    + "\" is not connected; containers are not created without it"));
        }

        @Override
        public String toString() {
            return "required NRI plugin " + key + " (not connected)";
        }
    }

    /**
     * Stops listening, sends {@code Shutdown} to the registered plugins (waiting at most one
     * second for their answers), closes every connection (calls in flight fail), removes the
     * socket file and stops the I/O thread. Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (server != null) {
            server.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (HostConnection c : List.copyOf(connections)) {
            all.add(c.shutdown(Duration.ofSeconds(1)));
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(3, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.debug("closing plugin connections: {}", e.toString());
        }
        synchronized (lock) {
            hooks = List.of();
            ready.clear();
            names.clear();
        }
        stopNow();
        LOG.info("NRI host on {} stopped", socket);
    }

    private void stopNow() {
        if (server != null) {
            server.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        for (HostConnection c : List.copyOf(connections)) {
            c.channel().close();
        }
        if (group != null) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS)
                    .awaitUninterruptibly(10, TimeUnit.SECONDS);
        }
        if (claim != null) {
            claim.close();
            claim = null;
        }
    }

    private static void safely(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.warn("NRI host listener failed: {}", e.toString());
        }
    }

    @Override
    public String toString() {
        return "NriHost[" + socket + "]";
    }
}
