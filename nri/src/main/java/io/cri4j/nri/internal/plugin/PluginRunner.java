package io.cri4j.nri.internal.plugin;

import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.nri.v1alpha1.ConfigureRequest;
import io.cri4j.nri.internal.NriMeters;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one {@link AsyncHook} registered with a runtime as an NRI plugin: connects (to a socket
 * path, or over a socket the runtime handed down), registers, and after losing the runtime
 * connects again with exponential back-off, so that the runtime registers, configures and
 * synchronizes the plugin again without the hook doing anything. Not API: {@link
 * io.cri4j.nri.NriPlugin} is.
 */
public final class PluginRunner {

    private static final Logger LOG = LoggerFactory.getLogger(PluginRunner.class);
    private static final Duration FRESH_SOCKET_RETRY = Duration.ofMillis(50);

    /** Callbacks of the public listener. */
    public interface Events {
        /** Registered (configured and synchronized). */
        void registered(String runtimeName, String runtimeVersion);

        /** The connection to a runtime ended; {@code cause} is null for a clean close. */
        void disconnected(Throwable cause);
    }

    /**
     * What to run.
     *
     * @param hook the hook
     * @param name the plugin name
     * @param index the plugin index, two digits
     * @param socket the NRI socket, or null with {@code inheritedFd}
     * @param inheritedFd a connected socket's file descriptor, or -1
     * @param reconnect whether to reconnect after losing the runtime
     * @param initialBackoff first reconnection delay
     * @param maxBackoff longest reconnection delay
     * @param waitForRuntime whether {@link #start()} returns at once and connects in the background
     * @param registrationTimeout how long registration may take
     * @param events the public listener
     * @param ownedWorker a worker pool to shut down on close, or null
     */
    public record Settings(
            AsyncHook hook,
            String name,
            String index,
            Path socket,
            int inheritedFd,
            boolean reconnect,
            Duration initialBackoff,
            Duration maxBackoff,
            boolean waitForRuntime,
            Duration registrationTimeout,
            Events events,
            ExecutorService ownedWorker,
            io.cri4j.hook.internal.Tracing tracing,
            NriMeters meters) {}

    private final Settings s;
    private final HookPolicy policy;
    private final Set<HookEvent> events;
    private final EventLoopGroup group;
    private final CountDownLatch terminated = new CountDownLatch(1);
    private final java.util.concurrent.atomic.AtomicBoolean versionSkewLogged =
            new java.util.concurrent.atomic.AtomicBoolean();
    private volatile NriConnection current;
    private volatile boolean closing;
    private volatile boolean registeredOnce;
    private Duration backoff;
    private final StillFailing stillFailing;
    private int failedAttempts;
    // event-loop state of the reconnection: the watch of the socket's directory while the
    // runtime is away, the retry scheduled, whether an attempt is under way
    private SocketWatcher watcher;
    private io.netty.util.concurrent.ScheduledFuture<?> retry;
    private boolean attempting;
    private boolean waitingLogged;
    private boolean hookShutDown;

    /** A runner; nothing happens before {@link #start()}. */
    public PluginRunner(Settings settings) {
        this.s = settings;
        this.policy = settings.hook().policy();
        this.events = settings.hook().events();
        this.backoff = settings.initialBackoff();
        this.stillFailing = new StillFailing(settings.maxBackoff());
        if (!Epoll.isAvailable()) {
            throw new UnsupportedOperationException(
                    "NRI plugins need Netty's epoll transport "
                            + "(Linux): "
                            + Epoll.unavailabilityCause());
        }
        this.group =
                new MultiThreadIoEventLoopGroup(
                        1,
                        new DefaultThreadFactory(
                                "cri4j-nri-" + settings.index() + "-" + settings.name(), true),
                        EpollIoHandler.newFactory());
    }

    /** The plugin's full name, {@code index-name}. */
    public String fullName() {
        return s.index() + "-" + s.name();
    }

    /** Whether the plugin is registered right now. */
    public boolean isRegistered() {
        NriConnection c = current;
        return c != null
                && c.registered().isDone()
                && !c.registered().isCompletedExceptionally()
                && !c.closed().isDone();
    }

    /**
     * Connects and registers; see {@link io.cri4j.nri.NriPlugin#start()}.
     *
     * @throws IOException when the first registration fails (unless waiting for the runtime)
     */
    public void start() throws IOException {
        if (s.waitForRuntime()) {
            group.execute(this::connect);
            return;
        }
        NriConnection c;
        try {
            c = connect().get();
        } catch (ExecutionException e) {
            closeNow();
            throw new IOException(PluginServiceMessages.describe(e.getCause()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeNow();
            throw new IOException("interrupted while connecting to the runtime", e);
        }
        try {
            c.registered().get(s.registrationTimeout().toMillis() * 3, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            closeNow();
            throw new IOException(
                    "plugin "
                            + fullName()
                            + " could not register with the runtime"
                            + where()
                            + ": "
                            + PluginServiceMessages.describe(e.getCause()),
                    e.getCause());
        } catch (TimeoutException e) {
            closeNow();
            throw new IOException(
                    "plugin "
                            + fullName()
                            + " was not registered by the runtime"
                            + where()
                            + " in time",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeNow();
            throw new IOException("interrupted while registering with the runtime", e);
        }
    }

    private String where() {
        return s.socket() != null ? " on " + s.socket() : " on inherited socket " + s.inheritedFd();
    }

    /** One connection attempt; completes when connected (registration then runs on its own). */
    private CompletableFuture<NriConnection> connect() {
        CompletableFuture<NriConnection> out = new CompletableFuture<>();
        if (closing) {
            out.completeExceptionally(new IllegalStateException("closed"));
            return out;
        }
        attempting = true;
        Channel ch;
        ChannelFuture connected;
        // the connection needs the channel's event loop: added once the channel is registered
        io.netty.channel.ChannelInitializer<Channel> init =
                new io.netty.channel.ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel c) {
                        c.pipeline().addLast(newConnection(c));
                    }
                };
        if (s.socket() != null) {
            Bootstrap b =
                    new Bootstrap()
                            .group(group)
                            .channel(EpollDomainSocketChannel.class)
                            .handler(init);
            connected = b.connect(new DomainSocketAddress(s.socket().toFile()));
            ch = connected.channel();
        } else {
            ch = new EpollDomainSocketChannel(s.inheritedFd());
            ch.pipeline().addLast(init);
            connected = group.register(ch);
        }
        connected.addListener(
                f -> {
                    attempting = false;
                    if (!f.isSuccess()) {
                        out.completeExceptionally(
                                new IOException(connectFailure(f.cause()), f.cause()));
                        onAttemptFailed(connectFailure(f.cause()));
                        return;
                    }
                    NriConnection c = ch.pipeline().get(NriConnection.class);
                    current = c;
                    c.registered().whenComplete((cfg, t) -> onRegistered(cfg, t));
                    c.closed().thenAccept(cause -> onClosed(c, cause));
                    out.complete(c);
                });
        return out;
    }

    private NriConnection newConnection(Channel c) {
        return new NriConnection(
                c,
                s.hook(),
                policy,
                events,
                s.name(),
                s.index(),
                s.registrationTimeout(),
                versionSkewLogged,
                s.tracing(),
                s.meters());
    }

    private String connectFailure(Throwable t) {
        if (s.socket() == null) {
            return "cannot use the inherited NRI socket (file descriptor "
                    + s.inheritedFd()
                    + "): "
                    + t.getMessage();
        }
        if (!Files.exists(s.socket())) {
            return "cannot connect to the NRI socket "
                    + s.socket()
                    + ": it does not exist "
                    + "(is the runtime running, with NRI enabled?)";
        }
        String m = String.valueOf(t.getMessage());
        if (m.contains("Connection refused")) {
            return "cannot connect to the NRI socket "
                    + s.socket()
                    + ": connection refused (no runtime listens there)";
        }
        if (m.contains("Permission denied")) {
            return "cannot connect to the NRI socket " + s.socket() + ": permission denied";
        }
        return "cannot connect to the NRI socket " + s.socket() + ": " + m;
    }

    private void onRegistered(ConfigureRequest cfg, Throwable t) {
        if (t != null) {
            return; // onClosed reports it
        }
        registeredOnce = true;
        backoff = s.initialBackoff();
        failedAttempts = 0;
        waitingLogged = false;
        stopWatching();
        LOG.info(
                "plugin {} registered with {} {}",
                fullName(),
                cfg.getRuntimeName(),
                cfg.getRuntimeVersion());
        safely(() -> s.events().registered(cfg.getRuntimeName(), cfg.getRuntimeVersion()));
    }

    private void onClosed(NriConnection c, Throwable cause) {
        if (current == c) {
            current = null;
        }
        boolean wasRegistered =
                c.registered().isDone() && !c.registered().isCompletedExceptionally();
        if (closing) {
            return;
        }
        String why =
                cause == null
                        ? (c.shutdownRequested()
                                ? "the runtime shut down"
                                : "the runtime closed the connection")
                        : cause.getMessage();
        if (wasRegistered) {
            safely(() -> s.events().disconnected(cause));
        }
        if (!s.reconnect() || s.socket() == null) {
            LOG.warn("plugin {}: {}; stopping (no reconnection)", fullName(), why);
            group.execute(this::terminate);
            return;
        }
        if (wasRegistered) {
            LOG.warn("plugin {}: lost the runtime ({}); reconnecting", fullName(), why);
            watchSocket();
        } else {
            onAttemptFailed(why);
            return;
        }
        scheduleReconnect(s.initialBackoff());
    }

    private void onAttemptFailed(String why) {
        if (closing || (!registeredOnce && !s.waitForRuntime())) {
            return; // start() reports the first failure
        }
        if (!s.reconnect() || s.socket() == null) {
            group.execute(this::terminate);
            return;
        }
        failedAttempts++;
        watchSocket();
        if (!Files.exists(s.socket())) {
            // nothing to back off against: the watch connects as soon as the socket appears; a
            // rare re-check covers a watch that could not be set up
            if (!waitingLogged) {
                waitingLogged = true;
                stillFailing.started();
                LOG.warn(
                        "plugin {}: {}; connecting as soon as it appears{}",
                        fullName(),
                        why,
                        watcher != null ? " (watching " + s.socket().getParent() + ")" : "");
            } else {
                long waitingFor = stillFailing.due();
                if (waitingFor >= 0) {
                    LOG.warn(
                            "plugin {}: still waiting for the NRI socket {} after {} s",
                            fullName(),
                            s.socket(),
                            waitingFor);
                }
            }
            scheduleReconnect(s.maxBackoff());
            return;
        }
        Duration delay = backoff;
        backoff = backoff.multipliedBy(2);
        if (backoff.compareTo(s.maxBackoff()) > 0) {
            backoff = s.maxBackoff();
        }
        long failingFor = failedAttempts == 1 ? -1 : stillFailing.due();
        if (failedAttempts == 1) {
            stillFailing.started();
            LOG.warn(
                    "plugin {}: {}; retrying with back-off up to {} s",
                    fullName(),
                    why,
                    s.maxBackoff().toSeconds());
        } else if (failingFor >= 0) {
            LOG.warn(
                    "plugin {}: still failing after {} attempts over {} s: {}",
                    fullName(),
                    failedAttempts,
                    failingFor,
                    why);
        } else {
            LOG.debug("plugin {}: attempt {}: {}", fullName(), failedAttempts, why);
        }
        scheduleReconnect(delay);
    }

    private void scheduleReconnect(Duration delay) {
        if (closing) {
            return;
        }
        long jittered =
                (long) (delay.toNanos() * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
        try {
            if (retry != null) {
                retry.cancel(false);
            }
            retry =
                    group.schedule(
                            () -> {
                                if (!closing && !attempting && current == null) {
                                    connect();
                                }
                            },
                            jittered,
                            TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("event loop closed; not reconnecting");
        }
    }

    /**
     * Watches the socket's directory while the runtime is away, so that a socket (re)created by a
     * starting runtime is connected to at once, whatever the back-off has grown to. On the event
     * loop.
     */
    private synchronized void watchSocket() {
        // under the lock terminate() takes: a watch started while the plugin closes is closed
        if (watcher != null || closing || s.socket() == null) {
            return;
        }
        try {
            watcher =
                    SocketWatcher.start(
                            s.socket(),
                            () -> {
                                try {
                                    group.execute(this::socketAppeared);
                                } catch (java.util.concurrent.RejectedExecutionException e) {
                                    // closing
                                }
                            },
                            "cri4j-nri-" + fullName() + "-watch");
        } catch (IOException e) {
            LOG.warn(
                    "plugin {}: cannot watch {} ({}); retrying with back-off only",
                    fullName(),
                    s.socket().getParent(),
                    e.toString());
        }
    }

    private synchronized void stopWatching() {
        SocketWatcher w = watcher;
        watcher = null;
        if (w != null) {
            w.close();
        }
    }

    /** The socket's directory changed: connect now, retrying quickly while it starts to listen. */
    private void socketAppeared() {
        if (closing || attempting || current != null || !Files.exists(s.socket())) {
            return;
        }
        LOG.debug("plugin {}: {} appeared; connecting", fullName(), s.socket());
        if (retry != null) {
            retry.cancel(false);
        }
        // a runtime binds before it listens: the next attempts follow closely
        backoff =
                FRESH_SOCKET_RETRY.compareTo(s.initialBackoff()) < 0
                        ? FRESH_SOCKET_RETRY
                        : s.initialBackoff();
        connect();
    }

    /**
     * Closes the connection once the runtime's requests in flight are answered (at most {@code
     * grace}), shuts the hook down, and stops every thread. Idempotent.
     */
    public void close(Duration grace) {
        if (closing) {
            awaitQuietly();
            return;
        }
        closing = true;
        NriConnection c = current;
        if (c != null) {
            try {
                c.closeGracefully(grace).get(grace.toMillis() + 2000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                LOG.debug("closing the connection: {}", e.toString());
                c.channel().close();
            }
        }
        closeNow();
    }

    private void closeNow() {
        closing = true;
        NriConnection c = current;
        if (c != null) {
            c.channel().close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        terminate();
        awaitQuietly();
    }

    private synchronized void terminate() {
        SocketWatcher w0 = watcher;
        if (w0 != null) {
            w0.close();
        }
        if (!hookShutDown) {
            hookShutDown = true;
            try {
                s.hook().shutdown();
            } catch (RuntimeException e) {
                LOG.warn("hook '{}' failed to shut down: {}", s.hook().name(), e.toString());
            }
            ExecutorService w = s.ownedWorker();
            if (w != null) {
                w.shutdown();
            }
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS)
                    .addListener(
                            f -> {
                                if (w != null) {
                                    try {
                                        if (!w.awaitTermination(5, TimeUnit.SECONDS)) {
                                            w.shutdownNow();
                                        }
                                    } catch (InterruptedException e) {
                                        w.shutdownNow();
                                    }
                                }
                                terminated.countDown();
                            });
        }
    }

    private void awaitQuietly() {
        try {
            terminated.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Blocks until the runner has stopped (closed, or the runtime gone with no reconnection). */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    /** Like {@link #awaitTermination()}, at most {@code timeout}; true if terminated. */
    public boolean awaitTermination(Duration timeout) throws InterruptedException {
        return terminated.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void safely(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.warn("plugin {}: listener failed: {}", fullName(), e.toString());
        }
    }
}
