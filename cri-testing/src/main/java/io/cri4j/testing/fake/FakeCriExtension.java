package io.cri4j.testing.fake;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.v1.ImageServiceGrpc;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension running a {@link FakeCriServer} for a test.
 *
 * <pre>{@code
 * @RegisterExtension
 * static FakeCriExtension cri = FakeCriExtension.unixSocket();
 *
 * @Test
 * void agentLabelsItsPods() {
 *     myAgent.connect(cri.endpoint());                       // a real unix socket
 *     ...
 *     cri.calls().assertInOrder("RunPodSandbox", "CreateContainer", "StartContainer");
 *     cri.faults().on("PullImage").failNext(1, Status.UNAVAILABLE);
 * }
 * }</pre>
 *
 * <p>In a {@code static} field the server is started once for the class and its state, recorded calls and faults
 * are reset before each test; in an instance field each test gets a fresh server. Test methods may also take
 * {@link FakeCriServer}, {@link CriEndpoint}, {@link ManagedChannel}, {@link FakeRuntime}, {@link CallLog},
 * {@link Faults} or the v1 blocking stubs as parameters.
 */
public final class FakeCriExtension
        implements BeforeAllCallback,
                AfterAllCallback,
                BeforeEachCallback,
                AfterEachCallback,
                ParameterResolver {

    private final boolean unixSocket;
    private Consumer<FakeCriServer.Builder> customizer = b -> {};
    private final java.util.List<Consumer<FakeCriServer.Builder>> hooks =
            new java.util.ArrayList<>();

    private FakeCriServer server;
    private ManagedChannel channel;
    private Path socketDir;
    private boolean perClass;

    private FakeCriExtension(boolean unixSocket) {
        this.unixSocket = unixSocket;
    }

    /** Serves the fake on a unix socket in a fresh temporary directory. */
    public static FakeCriExtension unixSocket() {
        return new FakeCriExtension(true);
    }

    /** Serves the fake in-process (no socket; {@link #endpoint()} is unavailable). */
    public static FakeCriExtension inProcess() {
        return new FakeCriExtension(false);
    }

    /**
     * Adjusts the server before it starts, e.g. {@code .configure(b -> b.execHandler(myHandler))}.
     * The endpoint is chosen by the extension.
     */
    public FakeCriExtension configure(Consumer<FakeCriServer.Builder> customizer) {
        this.customizer = Objects.requireNonNull(customizer, "customizer");
        return this;
    }

    /**
     * Hosts a lifecycle hook in the fake, as an NRI runtime hosts a plugin ({@link FakeCriServer.Builder#addHook}):
     * a user unit-tests a hook without containerd.
     */
    public FakeCriExtension addHook(io.cri4j.hook.Hook hook) {
        Objects.requireNonNull(hook, "hook");
        hooks.add(b -> b.addHook(hook));
        return this;
    }

    /** Hosts a lifecycle hook that never blocks; see {@link #addHook(io.cri4j.hook.Hook)}. */
    public FakeCriExtension addHook(io.cri4j.hook.AsyncHook hook) {
        Objects.requireNonNull(hook, "hook");
        hooks.add(b -> b.addHook(hook));
        return this;
    }

    /**
     * Hosts the hooks of a {@link io.cri4j.hook.host.HookProvider} (external NRI plugins on an {@code
     * io.cri4j.nri.NriHost}, for one) in each fake this extension starts ({@link
     * FakeCriServer.Builder#addHookProvider}): {@code factory} makes a fresh provider for every fake (once for a
     * {@code static} extension, once per test otherwise), which the fake starts and closes.
     */
    public FakeCriExtension addHookProvider(
            java.util.function.Supplier<? extends io.cri4j.hook.host.HookProvider> factory) {
        Objects.requireNonNull(factory, "factory");
        hooks.add(
                b ->
                        b.addHookProvider(
                                Objects.requireNonNull(
                                        factory.get(), "the factory gave no provider")));
        return this;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        perClass = true;
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        stop();
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        if (perClass && server != null) {
            server.faults().clear();
            server.runtime().reset();
            server.calls().clear();
        } else {
            start();
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (!perClass) {
            stop();
        }
    }

    private void start() throws IOException {
        FakeCriServer.Builder b = FakeCriServer.builder();
        customizer.accept(b);
        hooks.forEach(h -> h.accept(b));
        if (unixSocket) {
            socketDir = Files.createTempDirectory("cri4j-fake");
            b.listen(CriEndpoint.unix(socketDir.resolve("cri.sock")));
        } else {
            b.inProcess("cri4j-fake-" + java.util.UUID.randomUUID());
        }
        server = b.build().start();
        channel = server.newChannel();
    }

    private void stop() {
        if (channel != null) {
            channel.shutdownNow();
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            channel = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
        if (socketDir != null) {
            try {
                Files.deleteIfExists(socketDir.resolve("cri.sock"));
                Files.deleteIfExists(socketDir);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot remove " + socketDir, e);
            }
            socketDir = null;
        }
    }

    private FakeCriServer running() {
        if (server == null) {
            throw new IllegalStateException(
                    "the fake CRI server runs only during a test (register the extension "
                            + "with @RegisterExtension)");
        }
        return server;
    }

    /** The running server. */
    public FakeCriServer server() {
        return running();
    }

    /** The unix socket endpoint (not available with {@link #inProcess()}). */
    public CriEndpoint endpoint() {
        return running().endpoint();
    }

    /** A channel to the fake, shared by the stubs below and closed by the extension. */
    public ManagedChannel channel() {
        running();
        return channel;
    }

    /** The in-memory state, for arranging and simulating. */
    public FakeRuntime fakeRuntime() {
        return running().runtime();
    }

    /** Every call received. */
    public CallLog calls() {
        return running().calls();
    }

    /** Fault injection per RPC. */
    public Faults faults() {
        return running().faults();
    }

    /** A blocking {@code runtime.v1.RuntimeService} stub. */
    public RuntimeServiceGrpc.RuntimeServiceBlockingStub runtimeService() {
        return RuntimeServiceGrpc.newBlockingStub(channel());
    }

    /** An async {@code runtime.v1.RuntimeService} stub. */
    public RuntimeServiceGrpc.RuntimeServiceStub runtimeServiceAsync() {
        return RuntimeServiceGrpc.newStub(channel());
    }

    /** A blocking {@code runtime.v1.ImageService} stub. */
    public ImageServiceGrpc.ImageServiceBlockingStub imageService() {
        return ImageServiceGrpc.newBlockingStub(channel());
    }

    /** An async {@code runtime.v1.ImageService} stub. */
    public ImageServiceGrpc.ImageServiceStub imageServiceAsync() {
        return ImageServiceGrpc.newStub(channel());
    }

    /** A blocking {@code runtime.v1alpha2.RuntimeService} stub. */
    public io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.RuntimeServiceBlockingStub
            runtimeServiceV1alpha2() {
        return io.cri4j.cri.v1alpha2.RuntimeServiceGrpc.newBlockingStub(channel());
    }

    /** A blocking {@code runtime.v1alpha2.ImageService} stub. */
    public io.cri4j.cri.v1alpha2.ImageServiceGrpc.ImageServiceBlockingStub imageServiceV1alpha2() {
        return io.cri4j.cri.v1alpha2.ImageServiceGrpc.newBlockingStub(channel());
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> t = parameter.getParameter().getType();
        return t == FakeCriServer.class
                || t == CriEndpoint.class
                || t == ManagedChannel.class
                || t == FakeRuntime.class
                || t == CallLog.class
                || t == Faults.class
                || t == RuntimeServiceGrpc.RuntimeServiceBlockingStub.class
                || t == ImageServiceGrpc.ImageServiceBlockingStub.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> t = parameter.getParameter().getType();
        if (server == null) {
            throw new ParameterResolutionException(
                    "the fake CRI server is not running for " + parameter);
        }
        if (t == FakeCriServer.class) {
            return server;
        } else if (t == CriEndpoint.class) {
            return endpoint();
        } else if (t == ManagedChannel.class) {
            return channel;
        } else if (t == FakeRuntime.class) {
            return fakeRuntime();
        } else if (t == CallLog.class) {
            return calls();
        } else if (t == Faults.class) {
            return faults();
        } else if (t == RuntimeServiceGrpc.RuntimeServiceBlockingStub.class) {
            return runtimeService();
        } else {
            return imageService();
        }
    }
}
