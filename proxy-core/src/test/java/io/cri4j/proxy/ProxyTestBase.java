package io.cri4j.proxy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.cri4j.hook.cri.CriInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the proxy ITs share: a {@link TestBackend} started for each test, the proxy a test starts
 * in front of it, and a client channel to the proxy; all closed after the test.
 */
abstract class ProxyTestBase {
    @TempDir Path dir;
    TestBackend backend;
    CriProxy proxy;
    ManagedChannel client;

    @BeforeEach
    void startBackend() throws Exception {
        backend = new TestBackend(dir.resolve("backend.sock"), false).start();
    }

    @AfterEach
    void stopAll() throws Exception {
        if (client != null) {
            client.shutdownNow();
        }
        if (proxy != null) {
            proxy.close();
        }
        backend.close();
    }

    /**
     * Starts {@code b} on {@code proxy.sock} in front of the backend and opens the client channel
     * to it.
     *
     * @return a RuntimeService stub on that channel, with a 10 s deadline
     */
    RuntimeServiceGrpc.RuntimeServiceBlockingStub startProxy(CriProxy.Builder b) throws Exception {
        proxy = b.listen(dir.resolve("proxy.sock")).backend(backend.socket).build().start();
        client = CriChannels.newChannel(proxy.listenEndpoint());
        return RuntimeServiceGrpc.newBlockingStub(client).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    /** The unary link of a {@link #blocking} interceptor. */
    @FunctionalInterface
    interface UnaryLink {
        Object intercept(CriInterceptor.UnaryChain<Object, Object> chain) throws StatusException;
    }

    /** A blocking interceptor of the calls of one method (its bare name). */
    static CriInterceptor blocking(String method, UnaryLink link) {
        return new CriInterceptor() {
            @Override
            public boolean intercepts(MethodDescriptor<?, ?> m) {
                return m.getBareMethodName().equals(method);
            }

            @Override
            @SuppressWarnings("unchecked")
            public <Q, R> R interceptUnary(UnaryChain<Q, R> chain) throws StatusException {
                return (R) link.intercept((UnaryChain<Object, Object>) chain);
            }
        };
    }
}
