package io.cri4j.testing.real;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.cri4j.testing.real.internal.Await;
import io.cri4j.testing.real.internal.Commands;
import io.cri4j.testing.real.internal.Daemon;
import io.cri4j.testing.real.internal.ImageBuilder;
import io.cri4j.testing.real.internal.RegistryHttp;
import io.cri4j.testing.real.internal.Requirements;
import io.cri4j.testing.real.internal.StaleHarnessDirs;
import io.cri4j.testing.real.internal.TempDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private Debian {@code docker-registry} (distribution 2.x) on {@code 127.0.0.1} at a free
 * port, storing blobs in a temp dir, speaking plain HTTP, optionally with htpasswd basic auth.
 *
 * <p>{@link #stop()} and {@link #start()} stop and restart it on the same port with the same
 * storage (to test clients against an unreachable registry); {@link #close()} stops it for good
 * and deletes its temp dir. Test images are pushed on demand with {@link #push(TestImage)}.
 *
 * <p>In JUnit tests use {@link RegistryExtension}; this class is for other lifecycles. Needs the
 * binaries {@code docker-registry}, {@code skopeo} and {@code umoci} (and {@code htpasswd} for
 * basic auth); when one is missing {@link Builder#start()} skips the calling test (fails it when
 * {@code CI=true}).
 */
public final class LocalRegistry implements AutoCloseable {

    /**
     * Basic-auth credentials the registry requires.
     *
     * @param username the user name
     * @param password the password (not shown by {@link #toString()})
     */
    public record BasicAuth(String username, String password) {
        /** Validates the fields. */
        public BasicAuth {
            if (username == null || username.isEmpty() || username.contains(":")) {
                throw new IllegalArgumentException("username must be non-empty and contain no ':'");
            }
            if (password == null || password.isEmpty()) {
                throw new IllegalArgumentException("password must be non-empty");
            }
        }

        @Override
        public String toString() {
            return "BasicAuth[username=" + username + ", password=***]";
        }
    }

    /** Configures a {@link LocalRegistry}. */
    public static final class Builder {
        private BasicAuth basicAuth;
        private int port;
        private Duration startTimeout = Duration.ofSeconds(20);

        private Builder() {}

        /** Require these credentials (htpasswd bcrypt file); default: no auth. */
        public Builder basicAuth(String username, String password) {
            this.basicAuth = new BasicAuth(username, password);
            return this;
        }

        /** A fixed port; default 0 picks a free one (so parallel runs do not clash). */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port out of range: " + port);
            }
            this.port = port;
            return this;
        }

        /** How long start-up may take before it fails; default 20 s. */
        public Builder startTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("startTimeout must be positive");
            }
            this.startTimeout = timeout;
            return this;
        }

        /** Starts the registry and waits until it answers {@code GET /v2/}. */
        public LocalRegistry start() {
            LocalRegistry registry = new LocalRegistry(this);
            try {
                registry.firstStart();
                return registry;
            } catch (RuntimeException | Error e) {
                registry.close();
                throw e;
            }
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(LocalRegistry.class);
    private static final String HOST = "127.0.0.1";

    private final BasicAuth basicAuth;
    private final boolean fixedPort;
    private final Duration startTimeout;
    private final Map<TestImage, PushedImage> pushed = new LinkedHashMap<>();
    private Path dir;
    private Path registryBinary;
    private int port;
    private Daemon daemon;
    private Thread shutdownHook;
    private boolean closed;

    private LocalRegistry(Builder b) {
        this.basicAuth = b.basicAuth;
        this.port = b.port;
        this.fixedPort = b.port != 0;
        this.startTimeout = b.startTimeout;
    }

    /** A new builder with the defaults: free port, no auth. */
    public static Builder builder() {
        return new Builder();
    }

    private void firstStart() {
        registryBinary = Requirements.require("docker-registry", "docker-registry");
        if (basicAuth != null) {
            Requirements.require("htpasswd", "apache2-utils");
        }
        StaleHarnessDirs.reapOnce();
        dir = TempDirs.create(StaleHarnessDirs.REGISTRY_PREFIX);
        StaleHarnessDirs.markOwned(dir);
        shutdownHook = new Thread(this::close, "cri4j-registry-cleanup");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            Files.createDirectories(dir.resolve("storage"));
            if (basicAuth != null) {
                String line =
                        Commands.run(
                                Duration.ofSeconds(30),
                                "htpasswd",
                                "-Bbn",
                                basicAuth.username(),
                                basicAuth.password());
                Files.writeString(dir.resolve("htpasswd"), line.strip() + "\n");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (int attempt = 1; ; attempt++) {
            if (!fixedPort) {
                port = freePort();
            }
            try {
                start();
                return;
            } catch (IllegalStateException e) {
                boolean portTaken =
                        String.valueOf(e.getMessage()).contains("address already in use");
                if (fixedPort || !portTaken || attempt >= 5) {
                    throw e;
                }
                LOG.info("port {} was taken before the registry bound it; trying another", port);
            }
        }
    }

    /**
     * (Re)starts a stopped registry on the same port and storage; returns when it answers.
     * Does nothing when it is running.
     */
    public synchronized void start() {
        checkOpen();
        if (daemon != null && daemon.isAlive()) {
            return;
        }
        try {
            Files.writeString(dir.resolve("config.yml"), config());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long t0 = System.nanoTime();
        daemon =
                Daemon.start(
                        "docker-registry",
                        List.of(
                                registryBinary.toString(),
                                "serve",
                                dir.resolve("config.yml").toString()),
                        dir.resolve("registry.log"));
        RegistryHttp http = new RegistryHttp(hostPort(), null, null);
        try {
            Await.until(
                    "docker-registry answering on " + hostPort(),
                    startTimeout,
                    () -> {
                        daemon.checkAlive();
                        int status = http.ping();
                        return status == 200 || status == 401;
                    });
        } catch (TimeoutException e) {
            daemon.stop(Duration.ofSeconds(5));
            throw new IllegalStateException(
                    e.getMessage() + "; log:\n" + Commands.tail(daemon.logFile(), 4000), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted starting the registry", e);
        }
        LOG.info(
                "docker-registry ready on {} in {} ms",
                hostPort(),
                (System.nanoTime() - t0) / 1_000_000);
    }

    /** Stops the registry process (clients then get "connection refused"); storage is kept. */
    public synchronized void stop() {
        if (daemon != null) {
            daemon.stop(Duration.ofSeconds(5));
        }
    }

    /** Whether the registry process is running. */
    public synchronized boolean isRunning() {
        return daemon != null && daemon.isAlive();
    }

    /** Always {@code 127.0.0.1}. */
    public String host() {
        return HOST;
    }

    /** The TCP port it listens on. */
    public synchronized int port() {
        return port;
    }

    /** {@code 127.0.0.1:PORT}, the registry part of image references. */
    public String hostPort() {
        return HOST + ":" + port();
    }

    /** {@code http://127.0.0.1:PORT}. */
    public String url() {
        return "http://" + hostPort();
    }

    /** The credentials the registry requires, if any. */
    public Optional<BasicAuth> basicAuth() {
        return Optional.ofNullable(basicAuth);
    }

    /** The directory holding configuration, storage and {@code registry.log}. */
    public Path directory() {
        return dir;
    }

    /** The reference {@code image} has (or will have once pushed) in this registry. */
    public String reference(TestImage image) {
        return image.referenceIn(hostPort());
    }

    /**
     * Pushes {@code image} (built offline once per JVM) unless it was pushed before, and returns
     * its digests and sizes as read back from the registry. The registry must be running.
     */
    public synchronized PushedImage push(TestImage image) {
        checkOpen();
        PushedImage done = pushed.get(image);
        if (done != null) {
            return done;
        }
        ImageBuilder.Source source = ImageBuilder.shared().build(image);
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Requirements.require("skopeo", "skopeo").toString(),
                                "copy",
                                "--quiet",
                                "--insecure-policy",
                                "--dest-tls-verify=false"));
        if (image.format() == TestImage.Format.DOCKER_V2S2) {
            command.addAll(List.of("--format", "v2s2"));
        }
        if (source.all()) {
            command.add("--all");
        }
        if (basicAuth != null) {
            command.addAll(
                    List.of("--dest-creds", basicAuth.username() + ":" + basicAuth.password()));
        }
        command.add(source.skopeoReference());
        command.add("docker://" + reference(image));
        Commands.Result result =
                Commands.exec(
                        Duration.ofMinutes(5), null, Map.of("TMPDIR", dir.toString()), command);
        if (!result.ok()) {
            throw new IllegalStateException(
                    "skopeo could not push "
                            + image
                            + " to "
                            + hostPort()
                            + " (exit "
                            + result.exitCode()
                            + "): "
                            + result.output().strip());
        }
        PushedImage image1 = readBack(image);
        pushed.put(image, image1);
        return image1;
    }

    private PushedImage readBack(TestImage image) {
        RegistryHttp http =
                basicAuth == null
                        ? new RegistryHttp(hostPort(), null, null)
                        : new RegistryHttp(hostPort(), basicAuth.username(), basicAuth.password());
        try {
            RegistryHttp.Manifest top = http.manifest(image.repository(), image.tag());
            PushedImage.Blob topBlob =
                    new PushedImage.Blob(top.mediaType(), top.digest(), top.size());
            RegistryHttp.Manifest platform = top;
            List<String> platforms = new ArrayList<>();
            if (top.json().has("manifests")) {
                String want = "linux/" + ImageBuilder.hostArch();
                String chosen = null;
                for (JsonElement e : top.json().getAsJsonArray("manifests")) {
                    JsonObject m = e.getAsJsonObject();
                    JsonObject p = m.getAsJsonObject("platform");
                    String name =
                            p.get("os").getAsString() + "/" + p.get("architecture").getAsString();
                    platforms.add(name);
                    if (name.equals(want) && chosen == null) {
                        chosen = m.get("digest").getAsString();
                    }
                }
                if (chosen == null) {
                    throw new IllegalStateException(image + " has no manifest for " + want);
                }
                platform = http.manifest(image.repository(), chosen);
            } else {
                platforms.add("linux/" + ImageBuilder.hostArch());
            }
            JsonObject cfg = platform.json().getAsJsonObject("config");
            PushedImage.Blob config = blob(cfg);
            List<PushedImage.Blob> layers = new ArrayList<>();
            for (JsonElement e : platform.json().getAsJsonArray("layers")) {
                layers.add(blob(e.getAsJsonObject()));
            }
            return new PushedImage(
                    reference(image),
                    image.repository(),
                    image.tag(),
                    topBlob,
                    new PushedImage.Blob(platform.mediaType(), platform.digest(), platform.size()),
                    config,
                    layers,
                    platforms);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read back " + image + " from " + hostPort(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted reading back " + image, e);
        }
    }

    private static PushedImage.Blob blob(JsonObject descriptor) {
        return new PushedImage.Blob(
                descriptor.get("mediaType").getAsString(),
                descriptor.get("digest").getAsString(),
                descriptor.get("size").getAsLong());
    }

    /** Stops the registry and deletes its directory. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stop();
        } finally {
            TempDirs.deleteRecursively(dir);
            if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException ignored) {
                    // JVM is shutting down already
                }
            }
        }
    }

    @Override
    public String toString() {
        return "LocalRegistry[" + hostPort() + (basicAuth != null ? ", basic auth" : "") + "]";
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("registry " + hostPort() + " is closed");
        }
    }

    private String config() {
        String secret = HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        StringBuilder b = new StringBuilder();
        b.append("version: 0.1\n");
        b.append("log:\n  level: warn\n  accesslog:\n    disabled: true\n");
        b.append("storage:\n  filesystem:\n    rootdirectory: ")
                .append(dir.resolve("storage"))
                .append("\n  delete:\n    enabled: true\n");
        b.append("http:\n  addr: ")
                .append(HOST)
                .append(':')
                .append(port)
                .append("\n  secret: ")
                .append(secret)
                .append('\n');
        if (basicAuth != null) {
            b.append("auth:\n  htpasswd:\n    realm: cri4j\n    path: ")
                    .append(dir.resolve("htpasswd"))
                    .append('\n');
        }
        return b.toString();
    }

    @SuppressWarnings("AddressSelection") // HOST is an IP literal: nothing is looked up
    private static int freePort() {
        // A kernel-chosen free port rather than a fixed 5000, so parallel runs do not clash; the
        // small race until the registry binds it is retried in firstStart().
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port", e);
        }
    }
}
