package io.cri4j.proxy.internal;

import io.cri4j.hook.CriInterceptor;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;

/**
 * Serves the methods some interceptor wants, decoded: runs the interceptor chain on an executor
 * (interceptors may block) and ends it with the backend call. Request headers are forwarded.
 */
public final class InterceptedService {
  private static final Context.Key<Metadata> HEADERS = Context.key("cri4j-request-headers");

  private final Channel backend;
  private final List<CriInterceptor> interceptors;
  private final Executor executor;

  public InterceptedService(Channel backend, List<CriInterceptor> interceptors,
      Executor executor) {
    this.backend = backend;
    this.interceptors = List.copyOf(interceptors);
    this.executor = executor;
  }

  /** True if any interceptor wants this method. */
  public boolean wanted(MethodDescriptor<?, ?> method) {
    for (CriInterceptor i : interceptors) {
      if (i.intercepts(method)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Service definitions for the wanted methods among {@code methods}, grouped by service (only
   * unary and server-streaming methods are served decoded; others stay raw).
   */
  public List<ServerServiceDefinition> definitions(List<MethodDescriptor<?, ?>> methods) {
    Map<String, ServerServiceDefinition.Builder> byService = new LinkedHashMap<>();
    for (MethodDescriptor<?, ?> m : methods) {
      if (!wanted(m)) {
        continue;
      }
      MethodDescriptor.MethodType t = m.getType();
      if (t != MethodDescriptor.MethodType.UNARY
          && t != MethodDescriptor.MethodType.SERVER_STREAMING) {
        continue;
      }
      ServerServiceDefinition.Builder b = byService.computeIfAbsent(m.getServiceName(),
          ServerServiceDefinition::builder);
      add(b, m);
    }
    ServerInterceptor capture = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        return Contexts.interceptCall(Context.current().withValue(HEADERS, headers), call,
            headers, next);
      }
    };
    return byService.values().stream()
        .map(b -> ServerInterceptors.intercept(b.build(), capture)).toList();
  }

  @SuppressWarnings("unchecked")
  private <Q, R> void add(ServerServiceDefinition.Builder b, MethodDescriptor<?, ?> raw) {
    MethodDescriptor<Q, R> m = (MethodDescriptor<Q, R>) raw;
    if (m.getType() == MethodDescriptor.MethodType.UNARY) {
      b.addMethod(m, ServerCalls.asyncUnaryCall((req, obs) -> {
        Metadata headers = HEADERS.get();
        executor.execute(Context.current().wrap(() -> {
          try {
            R resp = callFrom(0, m, req, headers);
            obs.onNext(resp);
            obs.onCompleted();
          } catch (StatusException | StatusRuntimeException e) {
            fail(obs, e);
          } catch (RuntimeException e) {
            fail(obs, Status.INTERNAL.withDescription("interceptor failed on "
                + m.getFullMethodName() + ": " + e).withCause(e).asException());
          }
        }));
      }));
    } else {
      b.addMethod(m, ServerCalls.asyncServerStreamingCall((req, obs) -> {
        Metadata headers = HEADERS.get();
        executor.execute(Context.current().wrap(() -> {
          try {
            streamFrom(0, m, req, headers, obs);
          } catch (RuntimeException e) {
            fail(obs, Status.INTERNAL.withDescription("interceptor failed on "
                + m.getFullMethodName() + ": " + e).withCause(e).asException());
          }
        }));
      }));
    }
  }

  /** Fails the call; a call the client already cancelled has nobody to tell. */
  private static void fail(StreamObserver<?> obs, Throwable error) {
    try {
      obs.onError(error);
    } catch (RuntimeException alreadyCancelled) {
      // the client went away (CANCELLED): nothing to report to
    }
  }

  private <Q, R> R callFrom(int from, MethodDescriptor<Q, R> m, Q req, Metadata headers)
      throws StatusException {
    for (int i = from; i < interceptors.size(); i++) {
      CriInterceptor ic = interceptors.get(i);
      if (ic.intercepts(m)) {
        int index = i;
        return ic.interceptUnary(new CriInterceptor.UnaryChain<Q, R>() {
          @Override public MethodDescriptor<Q, R> method() { return m; }

          @Override public Q request() { return req; }

          @Override public Metadata metadata() { return headers; }

          @Override public R proceed(Q request) throws StatusException {
            return callFrom(index + 1, m, request, headers);
          }
        });
      }
    }
    try {
      return ClientCalls.blockingUnaryCall(withHeaders(headers), m, CallOptions.DEFAULT, req);
    } catch (StatusRuntimeException e) {
      throw new StatusException(BackendStatus.forClient(e.getStatus()), e.getTrailers());
    }
  }

  private <Q, R> void streamFrom(int from, MethodDescriptor<Q, R> m, Q req, Metadata headers,
      StreamObserver<R> out) {
    for (int i = from; i < interceptors.size(); i++) {
      CriInterceptor ic = interceptors.get(i);
      if (ic.intercepts(m)) {
        int index = i;
        ic.interceptServerStreaming(new CriInterceptor.StreamingChain<Q, R>() {
          @Override public MethodDescriptor<Q, R> method() { return m; }

          @Override public Q request() { return req; }

          @Override public Metadata metadata() { return headers; }

          @Override public StreamObserver<R> responses() { return out; }

          @Override public void proceed(Q request, StreamObserver<R> responses) {
            streamFrom(index + 1, m, request, headers, responses);
          }
        });
        return;
      }
    }
    ClientCalls.asyncServerStreamingCall(withHeaders(headers).newCall(m, CallOptions.DEFAULT),
        req, new StreamObserver<R>() {
          @Override public void onNext(R value) { out.onNext(value); }

          @Override public void onError(Throwable t) {
            out.onError(t instanceof StatusRuntimeException e
                ? BackendStatus.forClient(e.getStatus()).asRuntimeException(e.getTrailers()) : t);
          }

          @Override public void onCompleted() { out.onCompleted(); }
        });
  }

  private Channel withHeaders(Metadata headers) {
    return headers == null ? backend
        : ClientInterceptors.intercept(backend, MetadataUtils.newAttachHeadersInterceptor(headers));
  }
}
