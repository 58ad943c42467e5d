package io.cri4j.nri;

import io.cri4j.cri.internal.UnixSockets;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.host.HookHost;
import io.cri4j.hook.host.HookProvider;
import io.cri4j.nri.internal.HostConnection;
import io.cri4j.nri.internal.NriHostMeters;
import io.cri4j.nri.internal.NriMeters;
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
 * by the {@linkplain Builder#requestTimeout request timeout}; a plugin that does not answer in time
 * or disconnects is dropped (it leaves {@link #hooks()}) and the call fails as a failure of its
 * hook, which its {@link FailurePolicy} turns into a failed event or a warning. Events without an
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

    /** The NRI version this host speaks and sends in {@code Configure}. */
    public static final String NRI_VERSION = "v0.12.2";

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
         * Synchronize} message, each event); default 2 s (NRI's). A plugin that misses it is
         * dropped. Plugins learn it in {@code Configure}.
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "requestTimeout");
            if (timeout.compareTo(HookPolicy.MAX_TIMEOUT) > 0) {
                throw new IllegalArgumentException("requestTimeout must be at most 1 h");
            }
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
        this.listener =
                NriHostMeters.listening(
                        b.listener,
                        NriMeters.host(b.meterRegistry, b.socket.toString(), () -> hooks().size()));
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
                            NRI_VERSION);
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

    /** Rebuilds {@link #hooks}; under the lock. */
    private void publish() {
        List<HostConnection> sorted = new ArrayList<>(ready);
        sorted.sort(
                Comparator.comparingInt(HostConnection::index).thenComparing(HostConnection::name));
        List<AsyncHook> out = new ArrayList<>();
        sorted.forEach(c -> out.add(c.hook()));
        hooks = List.copyOf(out);
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
