package io.cri4j.nri;

import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.Hooks;
import io.cri4j.nri.internal.NriMeters;
import io.cri4j.nri.internal.PluginNames;
import io.cri4j.nri.internal.plugin.PluginRunner;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cri4j hook served as an NRI plugin (Node Resource Interface, {@code containerd/nri}): the
 * runtime (containerd 2.x, CRI-O 1.26+) calls the hook at every pod and container event it
 * subscribed to, and applies the hook's adjustments, updates and evictions. The plugin connects to
 * the runtime's NRI socket, registers under a name and a two-digit index (the order among
 * plugins), is configured and synchronized with every existing pod and container, then serves
 * events. When the runtime goes away (containerd restarted), the plugin connects again with
 * exponential back-off and the runtime registers, configures and synchronizes it again: the hook
 * sees another {@link Hook#configure configure} and {@link Hook#synchronize synchronize}, nothing
 * else.
 *
 * <pre>{@code
 * try (NriPlugin plugin = NriPlugin.builder(new MyHook()).name("my-agent").index(10).build()) {
 *     plugin.start();                 // registered once this returns
 *     plugin.awaitTermination();
 * }
 * }</pre>
 *
 * <p>The subscription is the hook's {@link Hook#events() events}; {@link
 * HookEvent#ADJUST_POD_SANDBOX} has no NRI event and is not served ({@link #unservedEvents()}),
 * and a runtime speaking NRI v0.8 (containerd 2.0, 2.1) has no {@code UpdatePodSandbox}, {@code
 * PostUpdatePodSandbox} or {@code ValidateContainerAdjustment}: the plugin logs which events it
 * loses at registration. Each call is bounded by the hook's {@link io.cri4j.hook.HookPolicy#timeout()}
 * and by the runtime's request timeout (2 s by default): the answer goes out before the runtime
 * gives up, without the hook's result under {@link io.cri4j.hook.FailurePolicy#IGNORE}, as an
 * error naming the hook under {@link io.cri4j.hook.FailurePolicy#FAIL}, and the lateness is logged.
 * A blocking {@link Hook} runs on the plugin's own worker threads; an {@link AsyncHook} is called
 * on the plugin's I/O thread and must not block. {@link #close()} waits for the answers the
 * runtime is waiting for, closes the connection (the runtime then drops the plugin: NRI has no
 * unregister call), calls {@link Hook#shutdown()} and stops every thread.
 *
 * <p>Several hooks are served as one plugin through a {@link io.cri4j.hook.HookChain} (built with
 * {@code validateAdjustments(false)}: the runtime validates); a {@link
 * io.cri4j.hook.HookException} it fails an event with (a conflict between two of its hooks, a
 * hook failing under {@code FAIL}) fails the event whatever the chain's own policy.
 */
public final class NriPlugin implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(NriPlugin.class);

    /** Where containerd and CRI-O serve NRI by default. */
    public static final Path DEFAULT_SOCKET = Path.of("/var/run/nri/nri.sock");

    /** Set by a runtime that launched the plugin itself: the connected socket's file descriptor. */
    public static final String ENV_SOCKET = "NRI_PLUGIN_SOCKET";

    /** Set by a runtime that launched the plugin itself: the plugin's name. */
    public static final String ENV_NAME = "NRI_PLUGIN_NAME";

    /** Set by a runtime that launched the plugin itself: the plugin's index. */
    public static final String ENV_INDEX = "NRI_PLUGIN_IDX";

    /** Told about the plugin's connection to the runtime; called on the plugin's I/O thread. */
    public interface Listener {
        /** The runtime registered, configured and synchronized the plugin (again). */
        default void registered(String runtimeName, String runtimeVersion) {}

        /**
         * The connection to the runtime ended after registration (not called for {@link
         * NriPlugin#close()}).
         *
         * @param cause why, or {@code null} when the runtime closed it without an error
         */
        default void disconnected(Throwable cause) {}
    }

    /** Configures an {@link NriPlugin}. */
    public static final class Builder {
        private final AsyncHook hook;
        private final ExecutorService worker;
        private Path socket = DEFAULT_SOCKET;
        private int inheritedFd = -1;
        private String name;
        private Integer index;
        private boolean reconnect = true;
        private Duration initialBackoff = Duration.ofMillis(500);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private boolean waitForRuntime;
        private Duration registrationTimeout = Duration.ofSeconds(5);
        private Listener listener = new Listener() {};
        private Map<String, String> env = System.getenv();
        private Object meterRegistry; // a MeterRegistry; typed Object so Micrometer stays optional
        private Object openTelemetry; // an OpenTelemetry; typed Object so the API stays optional

        private java.util.concurrent.atomic.AtomicReference<java.util.concurrent.Executor>
                workerDispatch;

        private Builder(AsyncHook hook, ExecutorService worker) {
            this.hook = hook;
            this.worker = worker;
        }

        /** The runtime's NRI socket; default {@code /var/run/nri/nri.sock}. */
        public Builder socket(Path path) {
            this.socket = Objects.requireNonNull(path, "socket");
            this.inheritedFd = -1;
            return this;
        }

        /**
         * For a plugin the runtime launched itself (from its plugin directory): use the connected
         * socket, name and index the runtime passed in {@value NriPlugin#ENV_SOCKET}, {@value NriPlugin#ENV_NAME}
         * and {@value NriPlugin#ENV_INDEX}. There is nothing to reconnect to: when that socket closes, the
         * plugin stops.
         *
         * @throws IllegalStateException when {@value NriPlugin#ENV_SOCKET} is not set or not a number
         */
        public Builder inheritedFromEnvironment() {
            String fd = env.get(ENV_SOCKET);
            if (fd == null || !fd.trim().matches("\\d+")) {
                throw new IllegalStateException(
                        ENV_SOCKET
                                + " is "
                                + (fd == null
                                        ? "not set"
                                        : "'" + fd + "', not a file descriptor number")
                                + ": the plugin was not launched by the runtime");
            }
            this.inheritedFd = Integer.parseInt(fd.trim());
            this.socket = null;
            if (env.get(ENV_NAME) != null && name == null) {
                name(env.get(ENV_NAME));
            }
            if (env.get(ENV_INDEX) != null && index == null) {
                index(parseIndex(env.get(ENV_INDEX)));
            }
            return this;
        }

        /**
         * The plugin name the runtime logs and reports conflicts with; default the hook's {@link
         * Hook#name() name}. Letters, digits and {@code - _ . +} only, as NRI requires.
         */
        public Builder name(String name) {
            checkName(name);
            this.name = name;
            return this;
        }

        /**
         * The plugin index, 0..99: the runtime calls plugins in index order; default the hook's
         * {@link io.cri4j.hook.HookPolicy#index() policy index}.
         */
        public Builder index(int index) {
            if (index < 0 || index > 99) {
                throw new IllegalArgumentException("NRI plugin index must be 0..99, got " + index);
            }
            this.index = index;
            return this;
        }

        /**
         * Reconnect after losing the runtime. While it is away the plugin watches the socket's
         * directory and connects as soon as the socket is (re)created, whatever the back-off; a
         * missing socket is just waited for. A socket that exists but refuses connections (a
         * runtime killed, its socket file left) is retried after {@code initialDelay}, doubling
         * the wait after each failed attempt up to {@code maxDelay}; default 0.5 s up to 30 s.
         */
        public Builder reconnect(Duration initialDelay, Duration maxDelay) {
            if (initialDelay.isNegative()
                    || initialDelay.isZero()
                    || maxDelay.compareTo(initialDelay) < 0) {
                throw new IllegalArgumentException(
                        "reconnect delays must be positive, max >= initial");
            }
            this.reconnect = true;
            this.initialBackoff = initialDelay;
            this.maxBackoff = maxDelay;
            return this;
        }

        /** Stop (see {@link #awaitTermination()}) instead of reconnecting when the runtime goes away. */
        public Builder noReconnect() {
            this.reconnect = false;
            return this;
        }

        /**
         * Make {@link #start()} return at once and connect in the background, retrying with the
         * reconnection back-off until the runtime's socket answers (for a plugin started before
         * the runtime). Default: {@link #start()} fails when the runtime cannot be reached.
         */
        public Builder waitForRuntime() {
            this.waitForRuntime = true;
            return this;
        }

        /** How long the runtime may take to register and configure the plugin; default 5 s. */
        public Builder registrationTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("registrationTimeout must be positive");
            }
            this.registrationTimeout = timeout;
            return this;
        }

        /**
         * Records {@code cri4j_nri_plugin_registered}, {@code cri4j_nri_plugin_registrations_total},
         * {@code cri4j_nri_plugin_disconnections_total}, each request's time by method and outcome
         * ({@code cri4j_nri_plugin_request_duration_seconds}) and the pods and containers of each
         * {@code Synchronize} request ({@code cri4j_nri_plugin_synchronize_size_objects}, tag
         * {@code kind}), tagged {@code plugin} with the full name, into {@code registry}; without
         * one nothing is recorded and Micrometer need not be on the class path.
         */
        // Micrometer is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Records a {@code SERVER} span of each request of the runtime ({@code
         * nri.pkg.api.v1alpha1.Plugin/CreateContainer}, ...; attributes {@code rpc.method}, {@code
         * cri4j.nri.plugin}, {@code cri4j.nri.outcome}), continuing the W3C trace context
         * ({@code traceparent}) in the request's ttrpc metadata when the runtime sends one. The
         * hook runs in that span, so a {@link io.cri4j.hook.HookChain} given the same
         * OpenTelemetry records its events under it. Without one nothing is recorded and the
         * OpenTelemetry API need not be on the class path.
         */
        // the OpenTelemetry API is an optional module (requires static): whoever calls this has it
        @SuppressWarnings("exports")
        public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
            return this;
        }

        /** Told about registrations and lost connections. */
        public Builder listener(Listener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        Builder environment(Map<String, String> env) {
            this.env = env;
            return this;
        }

        /**
         * The plugin, not yet connected.
         *
         * @throws IllegalArgumentException when the hook subscribes to no event NRI can deliver,
         *     or its name is not a valid NRI plugin name
         */
        public NriPlugin build() {
            String n = name != null ? name : hook.name();
            checkName(n);
            int i = index != null ? index : hook.policy().index();
            Set<HookEvent> events = hook.events();
            if (HookEvent.nriMask(events) == 0) {
                throw new IllegalArgumentException(
                        "hook '"
                                + hook.name()
                                + "' subscribes to no "
                                + "event NRI can deliver (its events: "
                                + events
                                + ")");
            }
            return new NriPlugin(this, n, String.format("%02d", i));
        }
    }

    private final PluginRunner runner;
    private final Set<HookEvent> unserved;
    private final String fullName;
    private boolean started;

    private NriPlugin(Builder b, String name, String index) {
        this.fullName = index + "-" + name;
        Set<HookEvent> u = EnumSet.noneOf(HookEvent.class);
        for (HookEvent e : b.hook.events()) {
            if (e.nriEvent().isEmpty()) {
                u.add(e);
            }
        }
        this.unserved = Set.copyOf(u);
        Listener l = b.listener;
        NriMeters meters = NriMeters.plugin(b.meterRegistry, fullName);
        io.cri4j.hook.internal.Tracing tracing =
                io.cri4j.hook.internal.Tracing.of(b.openTelemetry, "io.cri4j.nri");
        if (b.workerDispatch != null) {
            b.workerDispatch.set(tracing.wrap(b.worker));
        }
        this.runner =
                new PluginRunner(
                        new PluginRunner.Settings(
                                b.hook,
                                name,
                                index,
                                b.socket,
                                b.inheritedFd,
                                b.reconnect && b.socket != null,
                                b.initialBackoff,
                                b.maxBackoff,
                                b.waitForRuntime,
                                b.registrationTimeout,
                                new PluginRunner.Events() {
                                    @Override
                                    public void registered(
                                            String runtimeName, String runtimeVersion) {
                                        meters.registered();
                                        l.registered(runtimeName, runtimeVersion);
                                    }

                                    @Override
                                    public void disconnected(Throwable cause) {
                                        meters.disconnected();
                                        l.disconnected(cause);
                                    }
                                },
                                b.worker,
                                tracing,
                                meters));
    }

    /**
     * A builder for a hook that never blocks; it is called on the plugin's I/O thread.
     */
    public static Builder builder(AsyncHook hook) {
        return new Builder(Objects.requireNonNull(hook, "hook"), null);
    }

    /**
     * A builder for a blocking hook; the plugin runs its calls on worker threads of its own,
     * stopped by {@link #close()}.
     */
    public static Builder builder(Hook hook) {
        Objects.requireNonNull(hook, "hook");
        AtomicInteger n = new AtomicInteger();
        ExecutorService worker =
                Executors.newCachedThreadPool(
                        r -> {
                            Thread t =
                                    new Thread(
                                            r,
                                            "cri4j-nri-hook-"
                                                    + hook.name()
                                                    + "-"
                                                    + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        // the plugin runs the hook's calls in its span of the request when it records spans
        java.util.concurrent.atomic.AtomicReference<java.util.concurrent.Executor> run =
                new java.util.concurrent.atomic.AtomicReference<>(worker);
        Builder b = new Builder(Hooks.async(hook, task -> run.get().execute(task)), worker);
        b.workerDispatch = run;
        return b;
    }

    /**
     * Connects to the runtime and registers; returns once the plugin has answered the runtime's
     * {@code Synchronize} (at once with {@link Builder#waitForRuntime()}). The runtime adds the
     * plugin to the ones it calls right after that answer.
     *
     * @return this
     * @throws IOException with a one-line reason when the socket cannot be reached or the runtime
     *     does not register the plugin (the hook's {@code configure} failing, for one); the plugin
     *     is then closed
     * @throws IllegalStateException when called a second time
     */
    public synchronized NriPlugin start() throws IOException {
        if (started) {
            throw new IllegalStateException(this + " was started already");
        }
        started = true;
        if (!unserved.isEmpty()) {
            LOG.warn(
                    "plugin {}: NRI has no event for {} of this hook; those are not served in NRI "
                            + "mode (the cri4j proxy serves them)",
                    fullName,
                    unserved);
        }
        runner.start();
        return this;
    }

    /** The name the runtime knows the plugin by: {@code index-name}, e.g. {@code 10-my-agent}. */
    public String fullName() {
        return fullName;
    }

    /** The hook's events NRI cannot deliver at all (today: {@link HookEvent#ADJUST_POD_SANDBOX}). */
    public Set<HookEvent> unservedEvents() {
        return unserved;
    }

    /** Whether the runtime has registered the plugin and the connection is up. */
    public boolean isRegistered() {
        return runner.isRegistered();
    }

    /** Blocks until the plugin stops: after {@link #close()}, or when the runtime went away and the plugin does not reconnect. */
    public void awaitTermination() throws InterruptedException {
        runner.awaitTermination();
    }

    /** Like {@link #awaitTermination()}, at most {@code timeout}; true if the plugin stopped. */
    public boolean awaitTermination(Duration timeout) throws InterruptedException {
        return runner.awaitTermination(timeout);
    }

    /**
     * Answers the requests the runtime waits for (at most 2 s), closes the connection, shuts the
     * hook down and stops every thread of the plugin. Idempotent.
     */
    @Override
    public void close() {
        runner.close(Duration.ofSeconds(2));
    }

    @Override
    public String toString() {
        return "NriPlugin[" + fullName + "]";
    }

    static int parseIndex(String idx) {
        String t = idx.trim();
        if (!t.matches("\\d{1,2}")) {
            throw new IllegalStateException(
                    ENV_INDEX + " is '" + idx + "', not a plugin index 0..99");
        }
        return Integer.parseInt(t);
    }

    static void checkName(String name) {
        String bad = name == null ? "the plugin name is empty" : PluginNames.checkName(name);
        if (bad != null) {
            throw new IllegalArgumentException("NRI plugin: " + bad);
        }
    }
}
