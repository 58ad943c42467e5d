package io.cri4j.testing.real;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

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
public final class DockerdExtension implements BeforeAllCallback, AfterAllCallback,
        BeforeEachCallback, AfterEachCallback, ParameterResolver {

    private final Duration startTimeout;
    private LocalDockerd dockerd;
    private String startedBy;

    /** A dockerd with the default start timeout (the constructor {@code @ExtendWith} uses). */
    public DockerdExtension() {
        this(Duration.ofSeconds(30));
    }

    private DockerdExtension(Duration startTimeout) {
        this.startTimeout = startTimeout;
    }

    /** A dockerd that may take up to {@code startTimeout} to answer. */
    public static DockerdExtension withStartTimeout(Duration startTimeout) {
        LocalDockerd.builder().startTimeout(startTimeout); // validates
        return new DockerdExtension(startTimeout);
    }

    /** The running dockerd; fails outside the tests it serves. */
    public synchronized LocalDockerd dockerd() {
        if (dockerd == null) {
            throw new IllegalStateException("dockerd runs only while the tests of the class that"
                    + " registered this DockerdExtension run");
        }
        return dockerd;
    }

    /** The Docker Engine API socket. */
    public Path socket() {
        return dockerd().socket();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        startFor(context.getUniqueId());
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        startFor(context.getUniqueId());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeIfStartedBy(context.getUniqueId());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        closeIfStartedBy(context.getUniqueId());
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext,
            ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == LocalDockerd.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext,
            ExtensionContext extensionContext) {
        return dockerd();
    }

    private synchronized void startFor(String owner) {
        if (dockerd == null) {
            dockerd = LocalDockerd.builder().startTimeout(startTimeout).start();
            startedBy = owner;
        }
    }

    private synchronized void closeIfStartedBy(String owner) {
        if (dockerd != null && owner.equals(startedBy)) {
            try {
                dockerd.close();
            } finally {
                dockerd = null;
                startedBy = null;
            }
        }
    }
}
