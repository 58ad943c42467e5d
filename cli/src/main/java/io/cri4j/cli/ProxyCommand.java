package io.cri4j.cli;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.hook.FailurePolicy;
import io.cri4j.imagepull.PullObserver;
import io.cri4j.imagepull.PullProgressServer;
import io.cri4j.nri.NriHost;
import io.cri4j.proxy.CriProxy;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code cri4j proxy}: a CRI proxy in front of a runtime and an NRI host for it, with hooks from a watched
 * config directory (remote hook servers speaking Koordinator's protocol), from plugin jars (in-process hooks
 * listed in {@code META-INF/services/io.cri4j.hook.Hook} or {@code io.cri4j.hook.AsyncHook}) and, with
 * {@code --nri-socket}, from the NRI plugins that connect to that socket. It follows every
 * image pull passing through (byte progress where the runtime is containerd), answers
 * {@code cri4j.imagepull.v1.PullProgress} on its socket and, with {@code --progress-address}, serves the
 * progress over HTTP in KEP-5334's shape with a page of live bars. Runs until interrupted (SIGINT/SIGTERM).
 */
final class ProxyCommand implements Callable<Integer> {

    CommandSpec spec;
    CriEndpoint listen;
    CriEndpoint backend;
    Path hookConfigDir;
    Path plugins;
    CriEndpoint nriSocket;
    FailurePolicy nriFailurePolicy;
    Duration nriRequestTimeout;
    List<String> nriPluginTimeouts = new ArrayList<>();
    int nriMaxMissedDeadlines;
    List<String> nriRequiredPlugins = new ArrayList<>();
    boolean observePulls;
    InetSocketAddress progressAddress;
    boolean progressAllowRemote;
    int maxFollowedPulls;
    MetricsOptions metrics = new MetricsOptions();

    /** This command's picocli model, its options bound to the fields ({@link Specs}). */
    CommandSpec commandSpec() {
        CommandSpec s =
                Specs.command(this, "proxy", "Serve a CRI proxy with hooks in front of a runtime.");
        s.addOption(
                Specs.option("--listen", CriEndpoint.class, "listen", () -> listen, v -> listen = v)
                        .required(true)
                        .converters(new EndpointConverter())
                        .description("where the proxy serves, e.g. unix:///run/cri4j/proxy.sock")
                        .build());
        s.addOption(
                Specs.option(
                                "--backend",
                                CriEndpoint.class,
                                "backend",
                                () -> backend,
                                v -> backend = v)
                        .converters(new EndpointConverter())
                        .defaultValue(EndpointConverter.DEFAULT_RUNTIME_ENDPOINT)
                        .description("the runtime behind the proxy (default: ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.option(
                                "--hook-config-dir",
                                Path.class,
                                "hookConfigDir",
                                () -> hookConfigDir,
                                v -> hookConfigDir = v)
                        .description(
                                "watched directory of hook configs (*.json), e.g."
                                        + " /etc/runtime/hookserver.d")
                        .build());
        s.addOption(
                Specs.option("--plugins", Path.class, "plugins", () -> plugins, v -> plugins = v)
                        .description("directory of jars with in-process hooks")
                        .build());
        s.addOption(
                Specs.nriSocket(
                        () -> nriSocket,
                        v -> nriSocket = v,
                        "serve NRI's runtime side here: external NRI plugins (NRI's Go plugins"
                                + " unchanged) connect and run with the other hooks, e.g."
                                + " unix:///var/run/cri4j/nri.sock"));
        s.addOption(
                Specs.nriFailurePolicy(
                        () -> nriFailurePolicy,
                        v -> nriFailurePolicy = v,
                        "what an NRI plugin's failure (an error, a missed deadline, a"
                                + " disconnection mid-call) does to the CRI call: Fail or"
                                + " Ignore (default: ${DEFAULT-VALUE}, as containerd)"));
        s.addOption(
                Specs.option(
                                "--nri-request-timeout",
                                Duration.class,
                                "nriRequestTimeout",
                                () -> nriRequestTimeout,
                                v -> nriRequestTimeout = v)
                        .defaultValue("2s")
                        .converters(new DurationConverter())
                        .description(
                                "how long an NRI plugin may take to answer one call, e.g. 2s or 500ms"
                                        + " (default: ${DEFAULT-VALUE}, containerd's"
                                        + " plugin_request_timeout)")
                        .build());
        s.addOption(
                Specs.strings(
                                "--nri-plugin-timeout",
                                "PLUGIN=DURATION",
                                () -> nriPluginTimeouts,
                                v -> nriPluginTimeouts = v)
                        .description(
                                "the request timeout of one NRI plugin, by name (nri-logger=5s) or"
                                        + " two-digit index (10=5s); the name wins; repeatable")
                        .build());
        s.addOption(
                Specs.option(
                                "--nri-max-missed-deadlines",
                                int.class,
                                "nriMaxMissedDeadlines",
                                () -> nriMaxMissedDeadlines,
                                v -> nriMaxMissedDeadlines = v)
                        .defaultValue("" + NriHost.DEFAULT_MAX_MISSED_DEADLINES)
                        .description(
                                "an NRI plugin that misses this many deadlines in a row is"
                                        + " disconnected; each miss fails its call under"
                                        + " --nri-failure-policy (default: ${DEFAULT-VALUE}; 1 is"
                                        + " containerd's rule)")
                        .build());
        s.addOption(
                Specs.strings(
                                "--nri-required-plugin",
                                "NAME",
                                () -> nriRequiredPlugins,
                                v -> nriRequiredPlugins = v)
                        .description(
                                "an NRI plugin (NAME or NN-NAME) without which no container is"
                                        + " created: while it is not connected CreateContainer fails"
                                        + " naming it, and its failures fail the call whatever"
                                        + " --nri-failure-policy says; repeatable")
                        .build());
        s.addOption(
                Specs.option(
                                "--observe-pulls",
                                boolean.class,
                                "observePulls",
                                () -> observePulls,
                                v -> observePulls = v)
                        .negatable(true)
                        .defaultValue("true")
                        .fallbackValue("true")
                        .description(
                                "follow the image pulls passing through and answer"
                                        + " cri4j.imagepull.v1.PullProgress on the socket (default:"
                                        + " ${DEFAULT-VALUE})")
                        .build());
        s.addOption(
                Specs.option(
                                "--progress-address",
                                InetSocketAddress.class,
                                "progressAddress",
                                () -> progressAddress,
                                v -> progressAddress = v)
                        .converters(new AddressConverter())
                        .description(
                                "serve image pull progress over HTTP here (GET /imagePullProgress, a"
                                        + " page at /), e.g. 127.0.0.1:10251; loopback only unless"
                                        + " --progress-allow-remote")
                        .build());
        s.addOption(
                Specs.option(
                                "--progress-allow-remote",
                                boolean.class,
                                "progressAllowRemote",
                                () -> progressAllowRemote,
                                v -> progressAllowRemote = v)
                        .description("allow --progress-address on a non-loopback address")
                        .build());
        s.addOption(
                Specs.option(
                                "--max-followed-pulls",
                                int.class,
                                "maxFollowedPulls",
                                () -> maxFollowedPulls,
                                v -> maxFollowedPulls = v)
                        .defaultValue("" + PullObserver.DEFAULT_MAX_FOLLOWED)
                        .description(
                                "pulls whose bytes are followed at once; more show unknown progress"
                                        + " (default: ${DEFAULT-VALUE})")
                        .build());
        metrics.addTo(s);
        spec = s;
        return s;
    }

    /** Set once the proxy serves; counted down when it has stopped. For tests. */
    final CountDownLatch started = new CountDownLatch(1);

    volatile CriProxy proxy;
    volatile PullProgressServer progress;
    volatile PullObserver pulls;

    private PullObserver newObserver() {
        PullObserver.Builder o = PullObserver.builder(backend).maxFollowed(maxFollowedPulls);
        if (metrics.registry != null) {
            o.meterRegistry(metrics.registry);
        }
        return o.build();
    }

    /** The observer of the pulls through the proxy, once it serves. For tests. */
    PullObserver observer() {
        return pulls;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (progressAddress != null && !observePulls) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "--progress-address needs the pulls observed (drop --no-observe-pulls)");
        }
        if (maxFollowedPulls < 1) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--max-followed-pulls must be >= 1");
        }
        metrics.registry(spec.commandLine());
        PullProgressServer.Builder http = null;
        if (progressAddress != null
                && !progressAllowRemote
                && !progressAddress.getAddress().isLoopbackAddress()) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "--progress-address "
                            + progressAddress.getHostString()
                            + ":"
                            + progressAddress.getPort()
                            + " is not a loopback address; add --progress-allow-remote to serve it there");
        }
        try (PullObserver observer = observePulls ? newObserver() : null) {
            pulls = observer;
            if (observer != null && progressAddress != null) {
                http =
                        PullProgressServer.builder(observer)
                                .bindAddress(progressAddress)
                                .allowRemote(progressAllowRemote)
                                .allowHosts(metrics.allowHosts);
            }
            return serve(out, observer, http);
        }
    }

    /** The NRI host's settings from the options; a bad one is a one-line usage error. */
    NriHost.Builder nriHostBuilder(Path socket) {
        try {
            NriHost.Builder nri =
                    NriHost.builder(socket)
                            .failurePolicy(nriFailurePolicy)
                            .requestTimeout(nriRequestTimeout)
                            .maxMissedDeadlines(nriMaxMissedDeadlines);
            for (String t : nriPluginTimeouts) {
                int eq = t.lastIndexOf('=');
                if (eq <= 0 || eq == t.length() - 1) {
                    throw new IllegalArgumentException(
                            "--nri-plugin-timeout takes PLUGIN=DURATION, got \"" + t + "\"");
                }
                String key = t.substring(0, eq);
                Duration d = new DurationConverter().convert(t.substring(eq + 1));
                if (key.matches("\\d\\d")) {
                    nri.requestTimeout(Integer.parseInt(key), d);
                } else {
                    nri.requestTimeout(key, d);
                }
            }
            nriRequiredPlugins.forEach(nri::requirePlugin);
            return nri;
        } catch (IllegalArgumentException | CommandLine.TypeConversionException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private Integer serve(PrintWriter out, PullObserver observer, PullProgressServer.Builder http)
            throws Exception {
        CriProxy.Builder b = CriProxy.builder().listen(listen).backend(backend);
        if (metrics.registry != null) {
            b.meterRegistry(metrics.registry);
        }
        if (observer != null) {
            b.observePulls(observer);
        }
        if (hookConfigDir != null) {
            if (Files.exists(hookConfigDir) && !Files.isDirectory(hookConfigDir)) {
                throw new IOException("--hook-config-dir " + hookConfigDir + " is not a directory");
            }
            b.hookConfigDir(hookConfigDir);
        }
        URLClassLoader pluginLoader = null;
        if (plugins != null) {
            pluginLoader = PluginJars.loader(plugins);
            b.loadHooks(pluginLoader);
        }
        if (nriSocket != null) {
            NriHost.Builder nri =
                    nriHostBuilder(NriHostOutput.socket(spec.commandLine(), nriSocket));
            if (metrics.registry != null) {
                nri.meterRegistry(metrics.registry);
            }
            b.addHookProvider(NriHostOutput.host(nri, out, "cri4j proxy"));
        }
        try (CriProxy p = b.build();
                PullProgressServer s = http == null ? null : http.build()) {
            Thread hook = new Thread(() -> shutDown(p, s), "cri4j-proxy-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            p.start();
            proxy = p;
            out.println(
                    "cri4j proxy: serving "
                            + p.listenEndpoint()
                            + " -> "
                            + backend
                            + " (runtime.v1 and runtime.v1alpha2)");
            if (nriSocket != null) {
                out.println("cri4j proxy: NRI plugins connect to " + nriSocket);
            }
            if (s != null) {
                s.start();
                progress = s;
                out.println(
                        "cri4j proxy: image pull progress on "
                                + s.baseUrl()
                                + "imagePullProgress, live bars on "
                                + s.baseUrl());
            }
            try (BackendProbe probe =
                            metrics.registry == null
                                    ? null
                                    : new BackendProbe(backend, metrics.registry);
                    MetricsServer m = metrics.serve(() -> probe.down())) {
                if (m != null) {
                    out.println(
                            "cri4j proxy: metrics on "
                                    + m.baseUrl()
                                    + "metrics, health on /healthz and /readyz");
                }
                out.flush();
                started.countDown();
                p.awaitTermination();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is what closed us
            }
            return 0;
        } finally {
            if (pluginLoader != null) {
                pluginLoader.close();
            }
        }
    }

    /** What SIGTERM does (a shutdown hook): the proxy and the progress server close. */
    private static void shutDown(CriProxy p, PullProgressServer s) {
        p.close();
        if (s != null) {
            s.close();
        }
    }
}
