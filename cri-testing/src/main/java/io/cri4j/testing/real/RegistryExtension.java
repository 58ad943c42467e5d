package io.cri4j.testing.real;

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
public final class RegistryExtension extends ScopedExtension<LocalRegistry> {

    private final LocalRegistry.Builder builder;

    /** A registry without auth (the constructor {@code @ExtendWith} uses). */
    public RegistryExtension() {
        this(LocalRegistry.builder());
    }

    private RegistryExtension(LocalRegistry.Builder builder) {
        super(LocalRegistry.class, "the registry");
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
    public LocalRegistry registry() {
        return resource();
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
    LocalRegistry start(String owner) {
        return builder.start();
    }

    @Override
    void beforeEachTest(LocalRegistry running) {
        if (!running.isRunning()) {
            running.start(); // a previous test stopped it
        }
    }
}
