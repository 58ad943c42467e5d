package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.AsyncHook;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.hook.Hook;
import io.cri4j.hook.HookChain;
import io.cri4j.hook.HookEvent;
import io.cri4j.hook.HookPolicy;
import io.cri4j.hook.Hooks;
import io.cri4j.nri.NriPlugin;
import java.io.PrintWriter;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code cri4j nri-plugin}: the hooks found in plugin jars ({@code META-INF/services/io.cri4j.hook.Hook}
 * and {@code io.cri4j.hook.AsyncHook}, the jars {@code cri4j proxy --plugins} loads) served to
 * containerd 2.x or CRI-O as one NRI plugin (several hooks through a {@link HookChain}: in index
 * order, answers merged, conflicts between them failing the event). Says at start which events of
 * a hook NRI cannot deliver. Runs until SIGTERM or SIGINT, then closes the connection (the runtime drops the plugin)
 * and exits 0. Started by the runtime itself from its plugin directory ({@code NRI_PLUGIN_SOCKET}
 * set), it uses the socket, name and index the runtime passed and stops when the runtime closes it.
 */
final class NriPluginCommand implements Callable<Integer> {

    CommandSpec spec;
    CriEndpoint socket;
    Path plugins;
    String name;
    Integer index;
    boolean waitForRuntime;
    MetricsOptions metrics = new MetricsOptions();

    /** This command's picocli model, its options bound to the fields ({@link Specs}). */
    CommandSpec commandSpec() {
        CommandSpec s =
                Specs.command(
                        this,
                        "nri-plugin",
                        "Serve the hooks of plugin jars as an NRI plugin of containerd 2.x or CRI-O.");
        s.addOption(
                Specs.option("--socket", CriEndpoint.class, "socket", () -> socket, v -> socket = v)
                        .converters(new EndpointConverter())
                        .defaultValue("unix:///var/run/nri/nri.sock")
                        .description("the runtime's NRI socket (default: ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.option("--plugins", Path.class, "plugins", () -> plugins, v -> plugins = v)
                        .required(true)
                        .description("directory of jars with hooks")
                        .build());
        s.addOption(
                Specs.option("--name", String.class, "name", () -> name, v -> name = v)
                        .defaultValue("cri4j")
                        .description("plugin name the runtime shows (default: ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.option("--index", Integer.class, "index", () -> index, v -> index = v)
                        .description(
                                "plugin index 0..99, the runtime calls plugins in index order"
                                        + " (default: the hook's own index)")
                        .build());
        s.addOption(
                Specs.option(
                                "--wait",
                                boolean.class,
                                "waitForRuntime",
                                () -> waitForRuntime,
                                v -> waitForRuntime = v)
                        .description(
                                "wait for the socket instead of failing when it cannot be reached")
                        .build());
        metrics.addTo(s);
        spec = s;
        return s;
    }

    private volatile NriPlugin running;

    /** Stops the plugin as SIGTERM would. For tests. */
    void stopForTest() {
        NriPlugin p = running;
        if (p != null) {
            p.close();
        }
    }

    /** Whether the plugin is registered with the runtime now (for /readyz). */
    private volatile boolean registered;

    /** Counted down once the plugin is registered (or waiting for the runtime). For tests. */
    final CountDownLatch started = new CountDownLatch(1);

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        metrics.registry(spec.commandLine());
        if (!socket.isUnix()) {
            throw new IllegalArgumentException("--socket must be a unix socket, got " + socket);
        }
        try (URLClassLoader loader = PluginJars.loader(plugins)) {
            List<Loaded> hooks = load(loader);
            if (hooks.isEmpty()) {
                throw new IllegalArgumentException(
                        "no hooks in the jars of "
                                + plugins
                                + " (a jar lists "
                                + "its hooks in META-INF/services/io.cri4j.hook.Hook or io.cri4j.hook.AsyncHook)");
            }
            hooks.sort(
                    Comparator.<Loaded>comparingInt(h -> h.policy().index())
                            .thenComparing(Loaded::name));
            for (Loaded h : hooks) {
                out.println(
                        "cri4j nri-plugin: hook '"
                                + h.name()
                                + "' (hook index "
                                + h.policy().index()
                                + "): "
                                + names(h.events()));
                Set<HookEvent> unserved =
                        h.events().stream()
                                .filter(e -> e.nriEvent().isEmpty())
                                .collect(Collectors.toSet());
                if (!unserved.isEmpty()) {
                    out.println(
                            "cri4j nri-plugin: hook '"
                                    + h.name()
                                    + "': NRI has no "
                                    + names(unserved)
                                    + " event; not served here (the cri4j proxy serves it)");
                }
            }
            HookChain chain = null;
            Loaded hook = hooks.get(0);
            if (hooks.size() > 1) {
                // one NRI plugin for all: the chain orders them, merges their answers and reports
                // conflicts between them; the runtime validates the merged adjustment
                // when the runtime's deadline comes first, the strictest hook's failure policy
                // answers
                boolean anyFail =
                        hooks.stream()
                                .anyMatch(h -> h.policy().failurePolicy() == FailurePolicy.FAIL);
                HookChain.Builder cb =
                        HookChain.builder()
                                .name(name)
                                .validateAdjustments(false)
                                .policy(
                                        new HookPolicy(
                                                index != null
                                                        ? index
                                                        : hooks.get(0).policy().index(),
                                                HookPolicy.MAX_TIMEOUT,
                                                anyFail
                                                        ? FailurePolicy.FAIL
                                                        : FailurePolicy.IGNORE));
                if (metrics.registry != null) {
                    cb.meterRegistry(metrics.registry); // each hook's latency per event
                }
                hooks.forEach(
                        h -> cb.addAll(List.of(h.async() != null ? h.async() : h.blocking())));
                chain = cb.build();
                hook = new Loaded(chain, null);
                out.println(
                        "cri4j nri-plugin: "
                                + hooks.size()
                                + " hooks served as one NRI plugin, in this order: "
                                + hooks.stream()
                                        .map(h -> h.name() + " (" + h.policy().index() + ")")
                                        .collect(Collectors.joining(", ")));
            }
            out.flush();
            try {
                return serve(out, hook);
            } finally {
                if (chain != null) {
                    chain.close();
                }
            }
        }
    }

    private Integer serve(PrintWriter out, Loaded hook) throws Exception {
        boolean launched = System.getenv(NriPlugin.ENV_SOCKET) != null;
        NriPlugin.Builder b = hook.builder();
        if (launched) {
            b.inheritedFromEnvironment(); // the runtime started us: its name and index win
        } else {
            b.socket(socket.path()).name(name);
        }
        String where =
                launched
                        ? "the socket the runtime passed (" + NriPlugin.ENV_SOCKET + ")"
                        : socket.path().toString();
        b.listener(
                new NriPlugin.Listener() {
                    @Override
                    public void registered(String runtimeName, String runtimeVersion) {
                        registered = true;
                        out.println(
                                "cri4j nri-plugin: registered as "
                                        + running.fullName()
                                        + " with "
                                        + runtimeName
                                        + " "
                                        + runtimeVersion
                                        + " on "
                                        + where
                                        + " ("
                                        + java.lang.management.ManagementFactory.getRuntimeMXBean()
                                                .getUptime()
                                        + " ms after the JVM started)");
                        out.flush();
                    }

                    @Override
                    public void disconnected(Throwable cause) {
                        registered = false;
                        out.println(
                                "cri4j nri-plugin: lost the runtime"
                                        + (cause == null ? "" : " (" + cause.getMessage() + ")")
                                        + "; reconnecting");
                        out.flush();
                    }
                });
        if (index != null) {
            b.index(index);
        }
        if (metrics.registry != null) {
            b.meterRegistry(metrics.registry);
        }
        if (waitForRuntime) {
            b.waitForRuntime();
            out.println("cri4j nri-plugin: waiting for " + socket.path());
            out.flush();
        }
        try (NriPlugin plugin = b.build()) {
            running = plugin;
            TermSignals.onTermination(plugin::close);
            try (MetricsServer m =
                    metrics.serve(() -> registered ? null : "not registered with the runtime")) {
                if (m != null) {
                    out.println(
                            "cri4j nri-plugin: metrics on "
                                    + m.baseUrl()
                                    + "metrics, health on /healthz and /readyz");
                    out.flush();
                }
                plugin.start();
                started.countDown();
                plugin.awaitTermination();
            }
            out.println("cri4j nri-plugin: " + plugin.fullName() + " stopped");
            out.flush();
        }
        return 0;
    }

    private static List<Loaded> load(ClassLoader loader) {
        List<Loaded> all = new ArrayList<>();
        Hooks.loadAsync(loader).forEach(h -> all.add(new Loaded(h, null)));
        Hooks.loadBlocking(loader).forEach(h -> all.add(new Loaded(null, h)));
        return all;
    }

    /** A hook found in a jar: one that never blocks, or a blocking one the plugin runs on its workers. */
    private record Loaded(AsyncHook async, Hook blocking) {
        String name() {
            return async != null ? async.name() : blocking.name();
        }

        io.cri4j.hook.HookPolicy policy() {
            return async != null ? async.policy() : blocking.policy();
        }

        Set<HookEvent> events() {
            return async != null ? async.events() : blocking.events();
        }

        NriPlugin.Builder builder() {
            return async != null ? NriPlugin.builder(async) : NriPlugin.builder(blocking);
        }
    }

    private static String names(Set<HookEvent> events) {
        return events.stream()
                .sorted()
                .map(HookEvent::displayName)
                .collect(Collectors.joining(", "));
    }
}
