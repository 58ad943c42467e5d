package io.cri4j.testing.real;

import java.nio.file.Path;
import java.time.Duration;

/**
 * JUnit 5 extension running a {@link LocalDockerd}: a private Docker Engine (dockerd 20.10)
 * serving its API on a unix socket in a temp dir. It pulls from any {@link LocalRegistry} on
 * loopback over plain HTTP (dockerd treats {@code 127.0.0.0/8} registries as insecure).
 *
 * <p>Lifecycle: on a {@code static} field with {@code @RegisterExtension} (or with
 * {@code @ExtendWith(DockerdExtension.class)}) one dockerd serves all tests of the class, about
 * 1 s to start, and it is stopped and removed after them, also when they fail; on an instance
 * field each test gets its own.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final DockerdExtension DOCKERD = new DockerdExtension();
 *
 * @Test
 * void pull() {
 *   DockerImagePullBackend backend = DockerImagePullBackend.create(DOCKERD.socket());
 *   ...
 * }
 * }</pre>
 *
 * <p>Test methods may declare a {@link LocalDockerd} parameter. Skips the tests when
 * {@code dockerd} or root is missing, fails them instead when {@code CI=true}.
 */
public final class DockerdExtension extends ScopedExtension<LocalDockerd> {

    private final Duration startTimeout;

    /** A dockerd with the default start timeout (the constructor {@code @ExtendWith} uses). */
    public DockerdExtension() {
        this(Duration.ofSeconds(30));
    }

    private DockerdExtension(Duration startTimeout) {
        super(LocalDockerd.class, "dockerd");
        this.startTimeout = startTimeout;
    }

    /** A dockerd that may take up to {@code startTimeout} to answer. */
    public static DockerdExtension withStartTimeout(Duration startTimeout) {
        LocalDockerd.builder().startTimeout(startTimeout); // validates
        return new DockerdExtension(startTimeout);
    }

    /** The running dockerd; fails outside the tests it serves. */
    public LocalDockerd dockerd() {
        return resource();
    }

    /** The Docker Engine API socket. */
    public Path socket() {
        return dockerd().socket();
    }

    @Override
    LocalDockerd start(String owner) {
        return LocalDockerd.builder().startTimeout(startTimeout).start();
    }
}
