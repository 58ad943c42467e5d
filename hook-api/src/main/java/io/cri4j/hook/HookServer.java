package io.cri4j.hook;

import io.cri4j.cri.CriEndpoint;
import io.cri4j.cri.CriServer;
import io.cri4j.hook.extended.v1alpha1.ExtendedRuntimeHookServiceGrpc;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.ContainerResourceHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookRequest;
import io.cri4j.hook.koordinator.v1alpha1.PodSandboxHookResponse;
import io.cri4j.hook.koordinator.v1alpha1.RuntimeHookServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.StatusException;
import io.grpc.stub.ServerCalls;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Serves Java {@link RuntimeHook}s over a unix socket speaking Koordinator's
 * {@code runtime.v1alpha1.RuntimeHookService} (so Koordinator's Go runtime proxy can call them)
 * and cri4j's {@code ExtendedRuntimeHookService}. With several hooks, their answers are merged
 * as the proxy does ({@link HookDispatcher}); at a pre point, a hook that fails or exceeds its
 * timeout makes the RPC fail with INTERNAL naming the hook and its error (the calling proxy
 * applies its own failure policy). At post points the hooks are called and an empty response is
 * returned (errors are logged), as the proxy does. Owns the server socket: close it.
 */
public final class HookServer implements AutoCloseable {
  private final Path socket;
  private final HookDispatcher dispatcher;
  private final CriServer server;
  private boolean closed;

  private HookServer(Path socket, List<RuntimeHook> hooks) throws IOException {
    this.socket = socket;
    // the caller applies its own failure policy: a served hook's error always reaches it
    this.dispatcher = HookDispatcher.builder()
        .hooks(hooks.stream().map(HookServer::failing).toList()).build();
    List<ServerServiceDefinition> defs = List.of(
        bind(RuntimeHookServiceGrpc.getServiceDescriptor()),
        bind(ExtendedRuntimeHookServiceGrpc.getServiceDescriptor()));
    try {
      CriServer.Builder sb = CriServer.builder(CriEndpoint.unix(socket));
      defs.forEach(sb::addService);
      this.server = sb.build().start();
    } catch (IOException | RuntimeException e) {
      dispatcher.close();
      throw e;
    }
  }

  /** Starts serving {@code hooks} on the unix socket {@code socket}. */
  public static HookServer start(Path socket, List<? extends RuntimeHook> hooks)
      throws IOException {
    Objects.requireNonNull(socket, "socket");
    if (hooks.isEmpty()) {
      throw new IllegalArgumentException("no hooks to serve");
    }
    return new HookServer(socket, new ArrayList<>(hooks));
  }

  private static RuntimeHook failing(RuntimeHook h) {
    return new RuntimeHook() {
      @Override public String name() { return h.name(); }

      @Override public java.util.Set<HookPoint> points() { return h.points(); }

      @Override public int index() { return h.index(); }

      @Override public FailurePolicy failurePolicy() { return FailurePolicy.FAIL; }

      @Override public java.time.Duration timeout() { return h.timeout(); }

      @Override
      public PodSandboxHookResponse onPodSandbox(HookPoint p, PodSandboxHookRequest r)
          throws Exception {
        return h.onPodSandbox(p, r);
      }

      @Override
      public ContainerHookResult onContainer(HookPoint p, ContainerResourceHookRequest r)
          throws Exception {
        return h.onContainer(p, r);
      }
    };
  }

  /** The socket served on. */
  public Path socket() {
    return socket;
  }

  @SuppressWarnings("unchecked")
  private ServerServiceDefinition bind(ServiceDescriptor svc) {
    ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(svc);
    for (MethodDescriptor<?, ?> m : svc.getMethods()) {
      String rpc = m.getBareMethodName();
      HookPoint point = java.util.Arrays.stream(HookPoint.values())
          .filter(p -> p.rpcName().equals(rpc)).findFirst().orElseThrow();
      if (point.kind() == HookPoint.Kind.POD) {
        b.addMethod((MethodDescriptor<PodSandboxHookRequest, PodSandboxHookResponse>) m,
            ServerCalls.asyncUnaryCall((req, obs) -> {
              try {
                obs.onNext(dispatcher.dispatchPod(point, req));
                obs.onCompleted();
              } catch (StatusException e) {
                obs.onError(e);
              }
            }));
      } else {
        b.addMethod(
            (MethodDescriptor<ContainerResourceHookRequest, ContainerResourceHookResponse>) m,
            ServerCalls.asyncUnaryCall((req, obs) -> {
              try {
                obs.onNext(dispatcher.dispatchContainer(point, req)
                    .response());
                obs.onCompleted();
              } catch (StatusException e) {
                obs.onError(e);
              }
            }));
      }
    }
    return b.build();
  }

  /** Stops serving and removes the socket; idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    server.close();
    dispatcher.close();
  }
}
