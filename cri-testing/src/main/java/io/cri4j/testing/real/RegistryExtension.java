package io.cri4j.testing.real;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension running a {@link LocalRegistry} (private Debian {@code docker-registry} on
 * {@code 127.0.0.1} at a free port).
 *
 * <p>Lifecycle: registered on a {@code static} field with {@code @RegisterExtension} (or with
 * {@code @ExtendWith(RegistryExtension.class)}), one registry serves all tests of the class and
 * is closed after them, also when they fail; on an instance field, each test gets its own. A
 * test may {@link LocalRegistry#stop() stop} the registry to see clients fail; the next test
 * finds it running again (same port, same storage).
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RegistryExtension REGISTRY = RegistryExtension.withBasicAuth("alice", "s3cret");
 *
 * @Test
 * void pulls() {
 *   PushedImage image = REGISTRY.push(TestImage.busybox());
 *   ...
 * }
 * }</pre>
 *
 * <p>Test methods may also declare a {@link LocalRegistry} parameter. Skips the tests when
 * {@code docker-registry} is missing, fails them instead when {@code CI=true}.
 */
public final class RegistryExtension implements BeforeAllCallback, AfterAllCallback,
        BeforeEachCallback, AfterEachCallback, ParameterResolver {

    private final LocalRegistry.Builder builder;
    private LocalRegistry registry;
    private String startedBy;

    /** A registry without auth (the constructor {@code @ExtendWith} uses). */
    public RegistryExtension() {
        this(LocalRegistry.builder());
    }

    private RegistryExtension(LocalRegistry.Builder builder) {
        this.builder = builder;
    }

    /** A registry configured by {@code builder} (e.g. a fixed port or a start timeout). */
    public static RegistryExtension of(LocalRegistry.Builder builder) {
        return new RegistryExtension(builder);
    }

    /** A registry that requires these basic-auth credentials. */
    public static RegistryExtension withBasicAuth(String username, String password) {
        return new RegistryExtension(LocalRegistry.builder().basicAuth(username, password));
    }

    /** The running registry; fails outside the tests it serves. */
    public synchronized LocalRegistry registry() {
        if (registry == null) {
            throw new IllegalStateException("the registry runs only while the tests of the class that"
                    + " registered this RegistryExtension run");
        }
        return registry;
    }

    /** Shortcut for {@code registry().hostPort()}: {@code 127.0.0.1:PORT}. */
    public String hostPort() {
        return registry().hostPort();
    }

    /** Shortcut for {@code registry().push(image)}. */
    public PushedImage push(TestImage image) {
        return registry().push(image);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        startFor(context.getUniqueId());
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        LocalRegistry r = startFor(context.getUniqueId());
        if (!r.isRunning()) {
            r.start(); // a previous test stopped it
        }
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
        return parameterContext.getParameter().getType() == LocalRegistry.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext,
            ExtensionContext extensionContext) {
        return registry();
    }

    /** Starts the registry unless running; remembers {@code owner} as the scope to close it in. */
    synchronized LocalRegistry startFor(String owner) {
        if (registry == null) {
            registry = builder.start();
            startedBy = owner;
        }
        return registry;
    }

    /** Closes the registry when it was started for {@code owner}. */
    synchronized void closeIfStartedBy(String owner) {
        if (registry != null && owner.equals(startedBy)) {
            try {
                registry.close();
            } finally {
                registry = null;
                startedBy = null;
            }
        }
    }
}
