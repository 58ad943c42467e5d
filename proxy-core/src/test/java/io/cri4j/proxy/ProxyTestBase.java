package io.cri4j.proxy;

import io.cri4j.cri.CriChannels;
import io.cri4j.cri.v1.RuntimeServiceGrpc;
import io.grpc.ManagedChannel;
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
}
