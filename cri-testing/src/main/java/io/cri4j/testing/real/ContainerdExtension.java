package io.cri4j.testing.real;

import io.cri4j.cri.CriEndpoint;
import java.nio.file.Path;
import java.time.Duration;

/**
 * JUnit 5 extension running a {@link LocalContainerd}: a private Debian containerd with runc,
 * serving CRI ({@code runtime.v1} and {@code runtime.v1alpha2}) on a unix socket in a temp dir,
 * pulling from a private {@link LocalRegistry} over plain HTTP.
 *
 * <p>Lifecycle: registered on a {@code static} field with {@code @RegisterExtension} (or with
 * {@code @ExtendWith(ContainerdExtension.class)}), one containerd (and its registry) serves all
 * tests of the class, about 0.3 s to start, and everything is stopped and removed after them,
 * also when they fail; on an instance field each test gets its own. Not shared across classes,
 * so one class's pods and images never leak into another's.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final ContainerdExtension CONTAINERD = new ContainerdExtension();
 *
 * @Test
 * void version() {
 *   ManagedChannel channel = CriChannels.newChannel(CONTAINERD.endpoint());
 *   ...
 * }
 * }</pre>
 *
 * <p>To use a registry with basic auth (or one the test stops and restarts), register a
 * {@link RegistryExtension} first and hand it to {@link Builder#registry(RegistryExtension)}.
 * Test methods may declare a {@link LocalContainerd} parameter. Skips the tests when a binary or
 * root is missing, fails them instead when {@code CI=true}.
 */
public final class ContainerdExtension extends ScopedExtension<LocalContainerd> {

    /** Configures a {@link ContainerdExtension}. */
    public static final class Builder {
        private RegistryExtension registry;
        private String snapshotter = "overlayfs";
        private Duration startTimeout = Duration.ofSeconds(30);
        private boolean nri;
        private boolean nri012;
        private Duration nriRequestTimeout;

        private Builder() {}

        /** See {@link LocalContainerd.Builder#containerd2WithNri()}. */
        public Builder containerd2WithNri() {
            this.nri = true;
            this.nri012 = false;
            return this;
        }

        /** See {@link LocalContainerd.Builder#containerd23WithNri()}. */
        public Builder containerd23WithNri() {
            this.nri = true;
            this.nri012 = true;
            return this;
        }

        /** See {@link LocalContainerd.Builder#nriRequestTimeout(Duration)}. */
        public Builder nriRequestTimeout(Duration timeout) {
            LocalContainerd.builder().nriRequestTimeout(timeout); // validates
            this.nriRequestTimeout = timeout;
            return this;
        }

        /** Use the registry of this extension (started first if it is not yet running). */
        public Builder registry(RegistryExtension registry) {
            this.registry = registry;
            return this;
        }

        /** See {@link LocalContainerd.Builder#snapshotter(String)}. */
        public Builder snapshotter(String snapshotter) {
            LocalContainerd.builder().snapshotter(snapshotter); // validates
            this.snapshotter = snapshotter;
            return this;
        }

        /** See {@link LocalContainerd.Builder#startTimeout(Duration)}. */
        public Builder startTimeout(Duration timeout) {
            LocalContainerd.builder().startTimeout(timeout); // validates
            this.startTimeout = timeout;
            return this;
        }

        /** The extension. */
        public ContainerdExtension build() {
            return new ContainerdExtension(this);
        }
    }

    private final RegistryExtension registryExtension;
    private final String snapshotter;
    private final Duration startTimeout;
    private final boolean nri;
    private final boolean nri012;
    private final Duration nriRequestTimeout;

    /** A containerd with its own registry without auth (the constructor {@code @ExtendWith} uses). */
    public ContainerdExtension() {
        this(new Builder());
    }

    private ContainerdExtension(Builder b) {
        super(LocalContainerd.class, "containerd");
        this.registryExtension = b.registry;
        this.snapshotter = b.snapshotter;
        this.startTimeout = b.startTimeout;
        this.nri = b.nri;
        this.nri012 = b.nri012;
        this.nriRequestTimeout = b.nriRequestTimeout;
    }

    /** A new builder. */
    public static Builder builder() {
        return new Builder();
    }

    /** The running containerd; fails outside the tests it serves. */
    public LocalContainerd containerd() {
        return resource();
    }

    /** The CRI endpoint: containerd's gRPC socket as {@code unix:///...}. */
    public CriEndpoint endpoint() {
        return containerd().endpoint();
    }

    /** containerd's gRPC socket. */
    public Path socketPath() {
        return containerd().socketPath();
    }

    /** The NRI socket, with {@link Builder#containerd2WithNri()} or {@link Builder#containerd23WithNri()}. */
    public Path nriSocket() {
        return containerd().nriSocket();
    }

    /** {@value LocalContainerd#NAMESPACE}, the containerd namespace CRI objects live in. */
    public String namespace() {
        return LocalContainerd.NAMESPACE;
    }

    /** The registry containerd pulls from over plain HTTP. */
    public LocalRegistry registry() {
        return containerd().registry();
    }

    @Override
    LocalContainerd start(String owner) {
        LocalContainerd.Builder b =
                LocalContainerd.builder().snapshotter(snapshotter).startTimeout(startTimeout);
        if (nri012) {
            b.containerd23WithNri();
        } else if (nri) {
            b.containerd2WithNri();
        }
        if (nriRequestTimeout != null) {
            b.nriRequestTimeout(nriRequestTimeout);
        }
        if (registryExtension != null) {
            LocalRegistry registry = registryExtension.startFor(owner);
            if (!registry.isRunning()) {
                registry.start();
            }
            b.registry(registry);
        }
        return b.start();
    }

    /** A shared registry extension is closed with containerd by the scope that started both. */
    @Override
    void afterClose(String owner) {
        if (registryExtension != null) {
            registryExtension.closeIfStartedBy(owner);
        }
    }
}
