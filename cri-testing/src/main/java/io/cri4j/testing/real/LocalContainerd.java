package io.cri4j.testing.real;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.AuthConfig;
import io.cri4j.cri.v1.ContainerFilter;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.ImageSpec;
import io.cri4j.cri.v1.ListContainersRequest;
import io.cri4j.cri.v1.ListPodSandboxRequest;
import io.cri4j.cri.v1.PodSandbox;
import io.cri4j.cri.v1.PullImageRequest;
import io.cri4j.cri.v1.RemoveContainerRequest;
import io.cri4j.cri.v1.RemovePodSandboxRequest;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.cri.v1.StopPodSandboxRequest;
import io.cri4j.cri.v1.VersionRequest;
import io.cri4j.cri.v1.VersionResponse;
import io.cri4j.testing.real.internal.Await;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.ContainerdLeftovers;
import io.cri4j.testing.real.internal.Daemon;
import io.cri4j.testing.real.internal.Requirements;
import io.cri4j.testing.real.internal.StaleHarnessDirs;
import io.cri4j.testing.real.internal.TempDirs;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private Debian {@code containerd} (1.6, CRI plugin enabled) with {@code runc}, everything
 * under one temp dir: root, state, temp, the gRPC socket, runc's root, CNI config and IPAM data,
 * and {@code certs.d} trusting a {@link LocalRegistry} over plain HTTP. The sandbox (pause) image
 * is {@link TestImage#pause()} pushed to that registry and pulled through CRI before
 * {@link Builder#start()} returns, so pods start without further pulls.
 *
 * <p>Pods may use the host network ({@code NamespaceOption.network = NODE}, leave the hostname
 * empty) or their own network namespace on a private CNI bridge (no gateway, no masquerading,
 * {@code 10.254.254.0/24}); tests must not connect to pod IPs.
 *
 * <p>{@link #close()} stops and removes every pod sandbox and container, stops containerd, kills
 * anything it left running (runc containers under its runc root, shims serving its socket),
 * unmounts what it mounted under its temp dir and deletes the temp dir. Only the shim sockets in
 * {@code /run/containerd/s} and the CNI results cache live outside it; both are removed too.
 *
 * <p>With {@link Builder#containerd2WithNri()} it is containerd 2.1.4 instead (configuration version
 * 3, CRI {@code runtime.v1} only, its own CNI bridge on {@code 10.254.253.0/24}), with {@link
 * Builder#containerd23WithNri()} containerd 2.3.4 (NRI v0.12, bridge on {@code 10.254.252.0/24}), with NRI enabled
 * on a private socket ({@link #nriSocket()}) for external NRI plugins; {@link #restart()} kills and
 * restarts it as a crash would, and {@link #awaitNriPluginRegistrations} waits for containerd to
 * have added a plugin. NRI's own Go plugins run with {@link NriGoPlugin}.
 *
 * <p>In JUnit tests use {@link ContainerdExtension}. Needs root and the binaries
 * {@code containerd}, {@code containerd-shim-runc-v2}, {@code runc}, the CNI plugins in
 * {@code /usr/lib/cni} and what {@link LocalRegistry} needs; when one is missing
 * {@link Builder#start()} skips the calling test (fails it when {@code CI=true}).
 */
public final class LocalContainerd implements AutoCloseable {

    /** The containerd namespace the CRI plugin keeps its pods, containers and images in. */
    public static final String NAMESPACE = "k8s.io";

    /** Configures a {@link LocalContainerd}. */
    public static final class Builder {
        private LocalRegistry registry;
        private String snapshotter = "overlayfs";
        private Duration startTimeout = Duration.ofSeconds(30);
        private boolean nri;
        private boolean nri012;
        private Duration nriRequestTimeout = Duration.ofSeconds(2);

        private Builder() {}

        /**
         * Run containerd 2.1.4 with NRI (v0.8.0) enabled on a private socket ({@link
         * LocalContainerd#nriSocket()}) instead of Debian's containerd 1.6. Its binaries come from
         * {@value LocalContainerd#CONTAINERD2_BIN_DEFAULT}, or the directory named by the
         * environment variable {@value LocalContainerd#CONTAINERD2_BIN_ENV};
         * {@code bash ../shared/peers/install-containerd2.sh} installs them (CI runs it). CRI
         * {@code runtime.v1} only.
         */
        public Builder containerd2WithNri() {
            this.nri = true;
            this.nri012 = false;
            return this;
        }

        /**
         * Run containerd 2.3.4 (the long-term-support line) with NRI v0.12.0 enabled on a private
         * socket instead of Debian's containerd 1.6: plugins and runtime exchange NRI versions at
         * registration and the runtime calls one RPC per event. Its binaries come from {@value
         * LocalContainerd#CONTAINERD23_BIN_DEFAULT}, or the directory named by the environment
         * variable {@value LocalContainerd#CONTAINERD23_BIN_ENV}; {@code bash
         * ../shared/peers/install-containerd23.sh} installs them (CI runs it). Its CNI bridge is on
         * {@code 10.254.252.0/24}, so it runs beside a 2.1.4 harness. CRI {@code runtime.v1} only.
         */
        public Builder containerd23WithNri() {
            this.nri = true;
            this.nri012 = true;
            return this;
        }

        /** With {@link #containerd2WithNri()}: NRI's {@code plugin_request_timeout}, default 2 s. */
        public Builder nriRequestTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("nriRequestTimeout must be positive");
            }
            this.nriRequestTimeout = timeout;
            return this;
        }

        /**
         * Use this (already started) registry for the pause image and trust it over plain HTTP. It
         * stays owned by the caller. Default: containerd starts and owns a registry without auth.
         */
        public Builder registry(LocalRegistry registry) {
            this.registry = registry;
            return this;
        }

        /** The snapshotter, default {@code overlayfs}; {@code native} works on any filesystem. */
        public Builder snapshotter(String snapshotter) {
            if (snapshotter == null || !snapshotter.matches("[a-z0-9_.-]+")) {
                throw new IllegalArgumentException("invalid snapshotter name: " + snapshotter);
            }
            this.snapshotter = snapshotter;
            return this;
        }

        /** How long start-up (including the pause image pull) may take; default 30 s. */
        public Builder startTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("startTimeout must be positive");
            }
            this.startTimeout = timeout;
            return this;
        }

        /** Starts containerd and returns once it answers CRI and has the pause image. */
        public LocalContainerd start() {
            LocalContainerd containerd = new LocalContainerd(this);
            try {
                containerd.startUp();
                return containerd;
            } catch (RuntimeException | Error e) {
                containerd.close();
                throw e;
            }
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(LocalContainerd.class);
    private static final Path CNI_BIN_DIR = Path.of("/usr/lib/cni");
    private static final String CNI_SUBNET = "10.254.254.0/24";
    private static final String CNI_SUBNET_2 = "10.254.253.0/24";
    private static final String CNI_SUBNET_23 = "10.254.252.0/24";

    /** Where {@link Builder#containerd2WithNri()} finds containerd 2.1.4 unless told otherwise. */
    public static final String CONTAINERD2_BIN_DEFAULT = "/opt/cri4j/containerd-2.1.4/bin";

    /** Environment variable naming another directory of the containerd 2.1.4 binaries. */
    public static final String CONTAINERD2_BIN_ENV = "CRI4J_CONTAINERD2_BIN";

    /** Where {@link Builder#containerd23WithNri()} finds containerd 2.3.4 unless told otherwise. */
    public static final String CONTAINERD23_BIN_DEFAULT = "/opt/cri4j/containerd-2.3.4/bin";

    /** Environment variable naming another directory of the containerd 2.3.4 binaries. */
    public static final String CONTAINERD23_BIN_ENV = "CRI4J_CONTAINERD23_BIN";

    private final Duration startTimeout;
    private final String snapshotter;
    private final boolean ownsRegistry;
    private final boolean nri;
    private boolean killed;
    private final boolean nri012;
    private final Duration nriRequestTimeout;
    private Path containerdBinary;
    private LocalRegistry registry;
    private final String suffix = HexFormat.of().formatHex(new SecureRandom().generateSeed(3));
    private Path dir;
    private Daemon daemon;
    private ManagedChannel channel;
    private Thread shutdownHook;
    private boolean closed;
    private String sandboxImage;

    private LocalContainerd(Builder b) {
        this.startTimeout = b.startTimeout;
        this.snapshotter = b.snapshotter;
        this.registry = b.registry;
        this.ownsRegistry = b.registry == null;
        this.nri = b.nri;
        this.nri012 = b.nri012;
        this.nriRequestTimeout = b.nriRequestTimeout;
    }

    /** A new builder with the defaults (own registry without auth, overlayfs). */
    public static Builder builder() {
        return new Builder();
    }

    private void startUp() {
        Requirements.requireRoot("a private containerd");
        StaleHarnessDirs.reapOnce();
        if (nri) {
            String env = nri012 ? CONTAINERD23_BIN_ENV : CONTAINERD2_BIN_ENV;
            String version = nri012 ? "2.3.4" : "2.1.4";
            Path bin =
                    Path.of(
                            System.getenv()
                                    .getOrDefault(
                                            env,
                                            nri012
                                                    ? CONTAINERD23_BIN_DEFAULT
                                                    : CONTAINERD2_BIN_DEFAULT));
            containerdBinary = bin.resolve("containerd");
            if (!Files.isExecutable(containerdBinary)
                    || !Files.isExecutable(bin.resolve("containerd-shim-runc-v2"))) {
                Requirements.unavailable(
                        "containerd "
                                + version
                                + " with NRI is not installed in "
                                + bin
                                + " (bash ../shared/peers/install-containerd"
                                + (nri012 ? "23" : "2")
                                + ".sh installs it, .ci/install-test-deps.sh runs that; "
                                + env
                                + " names another directory)");
            }
        } else {
            containerdBinary = Requirements.require("containerd", "containerd");
            Requirements.require("containerd-shim-runc-v2", "containerd");
        }
        Requirements.require("runc", "runc");
        for (String plugin : List.of("bridge", "host-local", "loopback")) {
            if (!Files.isExecutable(CNI_BIN_DIR.resolve(plugin))) {
                Requirements.unavailable(
                        "CNI plugin "
                                + CNI_BIN_DIR.resolve(plugin)
                                + " is missing (Debian package containernetworking-plugins)");
            }
        }
        long t0 = System.nanoTime();
        if (registry == null) {
            registry = LocalRegistry.builder().start();
        } else if (!registry.isRunning()) {
            throw new IllegalStateException(
                    registry + " is not running; start it before containerd");
        }
        PushedImage pause = registry.push(TestImage.pause());
        sandboxImage = pause.reference();

        dir = TempDirs.create(StaleHarnessDirs.CONTAINERD_PREFIX);
        StaleHarnessDirs.markOwned(dir);
        shutdownHook = new Thread(this::close, "cri4j-containerd-cleanup");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        writeConfig();
        startDaemon();
        long ready = System.nanoTime();
        PullImageRequest.Builder pull =
                PullImageRequest.newBuilder()
                        .setImage(ImageSpec.newBuilder().setImage(sandboxImage));
        registry.basicAuth()
                .ifPresent(
                        a ->
                                pull.setAuth(
                                        AuthConfig.newBuilder()
                                                .setUsername(a.username())
                                                .setPassword(a.password())));
        ImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(startTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .pullImage(pull.build());
        LOG.info(
                "containerd ready on {} in {} ms (pause image pulled in {} ms more)",
                socketPath(),
                (ready - t0) / 1_000_000,
                (System.nanoTime() - ready) / 1_000_000);
    }

    private void startDaemon() {
        java.util.Map<String, String> env = java.util.Map.of();
        if (nri) {
            // the 2.x shim must come before Debian's 1.6 shim in /usr/bin
            env = java.util.Map.of("PATH", dir.resolve("shimbin") + ":" + System.getenv("PATH"));
        }
        daemon =
                Daemon.start(
                        "containerd",
                        List.of(
                                containerdBinary.toString(),
                                "--config",
                                dir.resolve("config.toml").toString()),
                        env,
                        dir.resolve("containerd.log"));
        Path socket = socketPath();
        try {
            Await.until(
                    "containerd creating " + socket,
                    startTimeout,
                    () -> {
                        daemon.checkAlive();
                        return Files.exists(socket) && (!nri || Files.exists(nriSocket()));
                    });
            if (channel == null) {
                channel = CriChannels.newChannel(CriEndpoint.unix(socket));
            }
            RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime =
                    RuntimeServiceGrpc.newBlockingStub(channel);
            Await.until(
                    "containerd answering CRI Version on " + socket,
                    startTimeout,
                    () -> {
                        daemon.checkAlive();
                        channel.resetConnectBackoff();
                        VersionResponse v =
                                runtime.withDeadlineAfter(2, TimeUnit.SECONDS)
                                        .version(
                                                VersionRequest.newBuilder()
                                                        .setVersion("v1")
                                                        .build());
                        return !v.getRuntimeVersion().isEmpty();
                    });
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    e.getMessage() + "; log:\n" + Commands.tail(daemon.logFile(), 4000), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted starting containerd", e);
        }
    }

    /**
     * Kills containerd with SIGKILL, as a crash would, and starts it again with the same
     * configuration and state; returns once it answers CRI again. Its shims, pods and containers
     * live on, as on a node; NRI plugins lose their connection and have to reconnect.
     */
    public synchronized void restart() {
        kill();
        startAgain();
    }

    /**
     * Kills containerd with SIGKILL, as a crash would, and leaves it down (its sockets stay as
     * files nobody listens on) until {@link #startAgain()}. Its shims, pods and containers live on.
     */
    public synchronized void kill() {
        if (closed || daemon == null || killed) {
            throw new IllegalStateException(this + " is not running");
        }
        daemon.kill();
        killed = true;
        LOG.info("containerd {} killed", socketPath());
    }

    /**
     * Starts containerd again after {@link #kill()}, with the same configuration and state;
     * returns once it answers CRI again.
     */
    public synchronized void startAgain() {
        if (closed || !killed) {
            throw new IllegalStateException(this + " was not killed");
        }
        killed = false;
        LOG.info("starting containerd {} again", socketPath());
        startDaemon();
    }

    /**
     * The NRI socket external plugins connect to.
     *
     * @throws IllegalStateException unless built with {@link Builder#containerd2WithNri()}
     */
    public Path nriSocket() {
        if (!nri) {
            throw new IllegalStateException(
                    this + " runs without NRI; build it with containerd2WithNri()");
        }
        return dir.resolve("nri.sock");
    }

    /**
     * Whether this is containerd 2.x with NRI ({@link Builder#containerd2WithNri()}, {@link
     * Builder#containerd23WithNri()}).
     */
    public boolean hasNri() {
        return nri;
    }

    /**
     * Whether this containerd speaks NRI v0.12 (containerd 2.3.4, {@link
     * Builder#containerd23WithNri()}): version exchange at registration, one RPC per event, and Go
     * plugins that take a socket flag.
     */
    public boolean hasNri012() {
        return nri012;
    }

    /** The directory of this containerd's binaries (and, for 2.x, of NRI's Go example plugins). */
    public Path binDirectory() {
        return containerdBinary.getParent();
    }

    /**
     * How many times containerd has logged NRI plugin {@code fullName} (e.g. {@code 20-nri-logger})
     * as "connected and synchronized" (or, for a plugin it launched itself from its plugin directory,
     * "synchronization success"), i.e. added to the plugins it calls, since it first started.
     */
    public int nriPluginRegistrations(String fullName) {
        // external plugins, and plugins containerd launched from its plugin directory
        List<String> needles =
                List.of(
                        "plugin \\\"" + fullName + "\\\" connected and synchronized",
                        "pre-installed NRI plugin \\\""
                                + fullName
                                + "\\\" synchronization success");
        try {
            String log = Files.readString(logFile(), java.nio.charset.StandardCharsets.UTF_8);
            int n = 0;
            for (String needle : needles) {
                for (int at = log.indexOf(needle); at >= 0; at = log.indexOf(needle, at + 1)) {
                    n++;
                }
            }
            return n;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + logFile(), e);
        }
    }

    /**
     * Waits until containerd has registered NRI plugin {@code fullName} at least {@code count}
     * times in all ({@link #nriPluginRegistrations}); after that it calls the plugin for every
     * event the plugin subscribed to.
     */
    public void awaitNriPluginRegistrations(String fullName, int count, Duration timeout) {
        try {
            Await.until(
                    "containerd registering NRI plugin " + fullName + " (" + count + " times)",
                    timeout,
                    () -> {
                        daemon.checkAlive();
                        return nriPluginRegistrations(fullName) >= count;
                    });
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    e.getMessage() + "; log:\n" + Commands.tail(daemon.logFile(), 4000), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The containerd gRPC socket (CRI and containerd's own API). */
    public Path socketPath() {
        return dir.resolve("containerd.sock");
    }

    /** The CRI endpoint, {@code unix:///tmp/cri4j-ctrd-.../containerd.sock}. */
    public CriEndpoint endpoint() {
        return CriEndpoint.unix(socketPath());
    }

    /** {@value #NAMESPACE}, the containerd namespace CRI objects live in. */
    public String namespace() {
        return NAMESPACE;
    }

    /** The registry containerd trusts over plain HTTP and took the pause image from. */
    public LocalRegistry registry() {
        return registry;
    }

    /** The sandbox (pause) image reference containerd is configured with. */
    public String sandboxImage() {
        return sandboxImage;
    }

    /** The temp dir holding everything of this containerd. */
    public Path directory() {
        return dir;
    }

    /** containerd's log file (stdout and stderr), for diagnostics. */
    public Path logFile() {
        return dir.resolve("containerd.log");
    }

    /** The process id of containerd. */
    public long pid() {
        return daemon.pid();
    }

    /**
     * Stops and removes every pod sandbox and container, stops containerd, kills what it left
     * behind and deletes its temp dir; then closes the registry if containerd started it.
     * Idempotent; also runs from a JVM shutdown hook if never called.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (daemon != null) {
                removeAllPods();
                closeChannel();
                daemon.stop(Duration.ofSeconds(10));
                ContainerdLeftovers.clean(dir, NAMESPACE, networkName(), bridgeName());
            } else {
                closeChannel();
            }
            if (dir != null) {
                TempDirs.deleteRecursively(dir);
            }
        } finally {
            if (ownsRegistry && registry != null) {
                registry.close();
            }
            if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException ignored) {
                    // JVM is shutting down already
                }
            }
        }
    }

    private void closeChannel() {
        if (channel != null) {
            channel.shutdownNow();
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "LocalContainerd[" + (dir == null ? "not started" : socketPath()) + "]";
    }

    private void removeAllPods() {
        if (channel == null || !daemon.isAlive()) {
            return;
        }
        RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime =
                RuntimeServiceGrpc.newBlockingStub(channel);
        try {
            for (PodSandbox pod :
                    runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                            .listPodSandbox(ListPodSandboxRequest.getDefaultInstance())
                            .getItemsList()) {
                try {
                    runtime.withDeadlineAfter(20, TimeUnit.SECONDS)
                            .stopPodSandbox(
                                    StopPodSandboxRequest.newBuilder()
                                            .setPodSandboxId(pod.getId())
                                            .build());
                    runtime.withDeadlineAfter(20, TimeUnit.SECONDS)
                            .removePodSandbox(
                                    RemovePodSandboxRequest.newBuilder()
                                            .setPodSandboxId(pod.getId())
                                            .build());
                } catch (RuntimeException e) {
                    LOG.warn("cannot remove pod sandbox {}: {}", pod.getId(), e.toString());
                }
            }
            for (var c :
                    runtime.withDeadlineAfter(5, TimeUnit.SECONDS)
                            .listContainers(
                                    ListContainersRequest.newBuilder()
                                            .setFilter(ContainerFilter.getDefaultInstance())
                                            .build())
                            .getContainersList()) {
                try {
                    runtime.withDeadlineAfter(20, TimeUnit.SECONDS)
                            .removeContainer(
                                    RemoveContainerRequest.newBuilder()
                                            .setContainerId(c.getId())
                                            .build());
                } catch (RuntimeException e) {
                    LOG.warn("cannot remove container {}: {}", c.getId(), e.toString());
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("cannot list pods of {} for cleanup: {}", this, e.toString());
        }
    }

    private String networkName() {
        return "cri4j-" + suffix;
    }

    private String bridgeName() {
        return "cri4j" + suffix; // at most 15 characters for a Linux interface name
    }

    private void writeConfig() {
        String hostPort = registry.hostPort();
        String d = dir.toString();
        String config =
                nri
                        ? configV3()
                        : """
                version = 2
                root = "%1$s/root"
                state = "%1$s/state"
                temp = "%1$s/tmp"
                disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", \
                "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

                [grpc]
                    address = "%1$s/containerd.sock"

                [ttrpc]
                    address = "%1$s/containerd.sock.ttrpc"

                [debug]
                    address = ""

                [metrics]
                    address = ""

                [plugins]
                    [plugins."io.containerd.internal.v1.opt"]
                        path = "%1$s/opt"
                    [plugins."io.containerd.grpc.v1.cri"]
                        stream_server_address = "127.0.0.1"
                        stream_server_port = "0"
                        sandbox_image = "%2$s"
                        restrict_oom_score_adj = true
                        netns_mounts_under_state_dir = true
                        disable_apparmor = true
                        enable_selinux = false
                        [plugins."io.containerd.grpc.v1.cri".containerd]
                            snapshotter = "%3$s"
                            default_runtime_name = "runc"
                            [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
                                runtime_type = "io.containerd.runc.v2"
                                [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
                                    Root = "%1$s/runc"
                                    SystemdCgroup = false
                        [plugins."io.containerd.grpc.v1.cri".cni]
                            bin_dir = "%4$s"
                            conf_dir = "%1$s/cni/net.d"
                        [plugins."io.containerd.grpc.v1.cri".registry]
                            config_path = "%1$s/certs.d"
                """
                                .formatted(d, sandboxImage, snapshotter, CNI_BIN_DIR);
        String hosts =
                """
                server = "http://%1$s"

                [host."http://%1$s"]
                    capabilities = ["pull", "resolve", "push"]
                """
                        .formatted(hostPort);
        String cni =
                """
                {
                    "cniVersion": "0.4.0",
                    "name": "%1$s",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": "%2$s",
                            "isGateway": false,
                            "ipMasq": false,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": "%3$s"}]],
                                "dataDir": "%4$s/cni/ipam"
                            }
                        }
                    ]
                }
                """
                        .formatted(
                                networkName(),
                                bridgeName(),
                                nri ? (nri012 ? CNI_SUBNET_23 : CNI_SUBNET_2) : CNI_SUBNET,
                                d);
        try {
            Files.writeString(dir.resolve("config.toml"), config);
            Path certs = Files.createDirectories(dir.resolve("certs.d").resolve(hostPort));
            Files.writeString(certs.resolve("hosts.toml"), hosts);
            Path netd = Files.createDirectories(dir.resolve("cni").resolve("net.d"));
            Files.writeString(netd.resolve("10-cri4j.conflist"), cni);
            Files.createDirectories(dir.resolve("runc"));
            if (nri) {
                Files.createDirectories(dir.resolve("nri").resolve("plugins"));
                Files.createDirectories(dir.resolve("nri").resolve("conf.d"));
                Path shims = Files.createDirectories(dir.resolve("shimbin"));
                Files.createSymbolicLink(
                        shims.resolve("containerd-shim-runc-v2"),
                        containerdBinary.resolveSibling("containerd-shim-runc-v2"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write containerd's configuration", e);
        }
    }

    /** containerd 2.x configuration (version 3) with NRI on a private socket. */
    private String configV3() {
        return """
                version = 3
                root = "%1$s/root"
                state = "%1$s/state"
                temp = "%1$s/tmp"
                disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", \
                "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

                [grpc]
                  address = "%1$s/containerd.sock"

                [ttrpc]
                  address = "%1$s/containerd.sock.ttrpc"

                [debug]
                  address = ""

                [metrics]
                  address = ""

                [plugins]
                  [plugins.'io.containerd.internal.v1.opt']
                    path = "%1$s/opt"
                  [plugins.'io.containerd.grpc.v1.cri']
                    stream_server_address = "127.0.0.1"
                    stream_server_port = "0"
                  [plugins.'io.containerd.cri.v1.images']
                    snapshotter = "%3$s"
                    [plugins.'io.containerd.cri.v1.images'.pinned_images]
                      sandbox = "%2$s"
                    [plugins.'io.containerd.cri.v1.images'.registry]
                      config_path = "%1$s/certs.d"
                  [plugins.'io.containerd.cri.v1.runtime']
                    disable_apparmor = true
                    enable_selinux = false
                    restrict_oom_score_adj = true
                    netns_mounts_under_state_dir = true
                    [plugins.'io.containerd.cri.v1.runtime'.containerd]
                      default_runtime_name = "runc"
                      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
                        runtime_type = "io.containerd.runc.v2"
                        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
                          Root = "%1$s/runc"
                          SystemdCgroup = false
                    [plugins.'io.containerd.cri.v1.runtime'.cni]
                      bin_dirs = ["%4$s"]
                      conf_dir = "%1$s/cni/net.d"
                  [plugins.'io.containerd.nri.v1.nri']
                    disable = false
                    disable_connections = false
                    socket_path = "%1$s/nri.sock"
                    plugin_path = "%1$s/nri/plugins"
                    plugin_config_path = "%1$s/nri/conf.d"
                    plugin_registration_timeout = "5s"
                    plugin_request_timeout = "%5$dms"
                """
                .formatted(
                        dir, sandboxImage, snapshotter, CNI_BIN_DIR, nriRequestTimeout.toMillis());
    }
}
