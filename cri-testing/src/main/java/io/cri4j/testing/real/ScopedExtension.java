package io.cri4j.testing.real;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * What the harness extensions share: one resource (a daemon) per scope. Registered on a
 * {@code static} field (or with {@code @ExtendWith}) it starts before all tests of the class and
 * is closed after them; on an instance field it starts per test. It is closed only by the scope
 * that started it, also when tests fail, and test methods may take it as a parameter.
 *
 * @param <T> the resource
 */
abstract class ScopedExtension<T extends AutoCloseable>
        implements BeforeAllCallback,
                AfterAllCallback,
                BeforeEachCallback,
                AfterEachCallback,
                ParameterResolver {

    private final Class<T> type;
    private final String what;
    private T resource;
    private String startedBy;

    /**
     * @param type the resource type test methods may declare as a parameter
     * @param what how error messages name the resource, e.g. {@code containerd}
     */
    ScopedExtension(Class<T> type, String what) {
        this.type = type;
        this.what = what;
    }

    /** Starts the resource for the scope {@code owner}. */
    abstract T start(String owner);

    /** Runs after the resource of {@code owner} was closed, or failed to start. */
    void afterClose(String owner) {}

    /** Runs before each test with the running resource. */
    void beforeEachTest(T running) {}

    /** The running resource; fails outside the tests it serves. */
    final synchronized T resource() {
        if (resource == null) {
            throw new IllegalStateException(
                    what
                            + " runs only while the tests of the class that registered this "
                            + getClass().getSimpleName()
                            + " run");
        }
        return resource;
    }

    @Override
    public final void beforeAll(ExtensionContext context) {
        startFor(context.getUniqueId());
    }

    @Override
    public final void beforeEach(ExtensionContext context) {
        beforeEachTest(startFor(context.getUniqueId()));
    }

    @Override
    public final void afterEach(ExtensionContext context) {
        closeIfStartedBy(context.getUniqueId());
    }

    @Override
    public final void afterAll(ExtensionContext context) {
        closeIfStartedBy(context.getUniqueId());
    }

    @Override
    public final boolean supportsParameter(
            ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == type;
    }

    @Override
    public final Object resolveParameter(
            ParameterContext parameterContext, ExtensionContext extensionContext) {
        return resource();
    }

    /** Starts the resource unless running; remembers {@code owner} as the scope to close it in. */
    final synchronized T startFor(String owner) {
        if (resource == null) {
            try {
                resource = start(owner);
            } catch (RuntimeException | Error e) {
                afterClose(owner);
                throw e;
            }
            startedBy = owner;
        }
        return resource;
    }

    /** Closes the resource when it was started for {@code owner}. */
    final synchronized void closeIfStartedBy(String owner) {
        if (resource != null && owner.equals(startedBy)) {
            try {
                resource.close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(
                        "closing " + what + " failed: " + e.getMessage(), e);
            } finally {
                resource = null;
                startedBy = null;
                afterClose(owner);
            }
        }
    }
}
