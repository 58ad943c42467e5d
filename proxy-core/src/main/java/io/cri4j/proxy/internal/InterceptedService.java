package io.cri4j.proxy.internal;

import io.cri4j.hook.AsyncCriInterceptor;
import io.cri4j.hook.CriInterceptor;
import io.cri4j.hook.internal.Statuses;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.netty.util.AsciiString;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;

/**
 * Runs the interceptor chain on the calls some interceptor wants, decoded, and ends the chain
 * with the call to the backend (request headers forwarded). The relay ({@link RelayConnection})
 * runs a chain of interceptors that never block on its event loop ({@link #unaryAsync}), other
 * unary chains on the {@link #executor()} ({@link #unary}); both end in a backend call on the
 * relay's own connection. Server-streaming chains run on the executor and end in a grpc-java
 * call. Everything else the relay forwards as HTTP/2 frames and never decodes.
 */
public final class InterceptedService {
  private final Channel backend;
  private final List<CriInterceptor> interceptors;
  private final Executor executor;
  private final Map<AsciiString, MethodDescriptor<?, ?>> byPath = new HashMap<>();
  /** Unary methods only asynchronous interceptors want: the I/O-thread path. */
  private final Set<MethodDescriptor<?, ?>> asyncOnly = new HashSet<>();

  /** One intercepted unary call: what its chain's links need of it. */
  interface AsyncCall {
    /** The client's request headers as metadata (decoded when first asked for). */
    Metadata metadata();

    /** Sends {@code request} to the backend; completes with its response or fails with status. */
    CompletableFuture<Object> backend(Object request);

    /** The call's I/O thread: keeps the timeouts of hooks that run elsewhere. */
    ScheduledExecutorService loop();
  }

  /**
   * @param backend the channel calls proceed on
   * @param interceptors the chain, outermost first
   * @param executor runs the chains (never an event loop)
   * @param methods the methods that may be intercepted; those no interceptor wants, and
   *     client-streaming or bidirectional ones, stay pass-through
   */
  public InterceptedService(Channel backend, List<CriInterceptor> interceptors,
      Executor executor, List<MethodDescriptor<?, ?>> methods) {
    this.backend = backend;
    this.interceptors = List.copyOf(interceptors);
    this.executor = executor;
    for (MethodDescriptor<?, ?> m : methods) {
      MethodDescriptor.MethodType t = m.getType();
      if (wanted(m) && (t == MethodDescriptor.MethodType.UNARY
          || t == MethodDescriptor.MethodType.SERVER_STREAMING)) {
        byPath.put(AsciiString.of("/" + m.getFullMethodName()), m);
        if (t == MethodDescriptor.MethodType.UNARY && this.interceptors.stream()
            .filter(i -> i.intercepts(m))
            .allMatch(i -> i instanceof AsyncCriInterceptor)) {
          asyncOnly.add(m);
        }
      }
    }
  }

  /**
   * True when a call of {@code m} runs its chain on the I/O thread ({@link #unaryAsync}): every
   * interceptor that wants it never blocks. Otherwise the chain runs on a worker ({@link #unary}).
   */
  public boolean runsOnLoop(MethodDescriptor<?, ?> m) {
    return asyncOnly.contains(m);
  }

  private boolean wanted(MethodDescriptor<?, ?> method) {
    for (CriInterceptor i : interceptors) {
      if (i.intercepts(method)) {
        return true;
      }
    }
    return false;
  }

  /** The intercepted method for an HTTP/2 {@code :path}, or null when it passes through. */
  public MethodDescriptor<?, ?> method(CharSequence path) {
    return path == null ? null : byPath.get(AsciiString.of(path));
  }

  /** Number of intercepted methods. */
  public int size() {
    return byPath.size();
  }

  /** Where chains run. */
  public Executor executor() {
    return executor;
  }

  /**
   * Runs a unary call through the chain, on a worker; the chain's backend call is
   * {@code call.backend}, waited for.
   *
   * @throws StatusException the status to answer with (an interceptor's, the backend's, or
   *     INTERNAL naming the method when an interceptor threw something else)
   */
  public <Q, R> R unary(MethodDescriptor<Q, R> m, Q req, Metadata headers, AsyncCall call)
      throws StatusException {
    try {
      return callFrom(0, m, req, headers, call);
    } catch (RuntimeException e) {
      throw Statuses.of(e, "interceptor failed on " + m.getFullMethodName());
    }
  }

  /**
   * Runs a unary call through the chain without blocking (see {@link #runsOnLoop}). The outcome
   * completes on whichever thread finished the last link: the I/O thread when nothing left it.
   */
  CompletableFuture<Object> unaryAsync(MethodDescriptor<?, ?> m, Object req, AsyncCall call) {
    return asyncFrom(0, m, req, call);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private CompletableFuture<Object> asyncFrom(int from, MethodDescriptor m, Object req,
      AsyncCall call) {
    for (int i = from; i < interceptors.size(); i++) {
      CriInterceptor ic = interceptors.get(i);
      if (!ic.intercepts(m)) {
        continue;
      }
      int next = i + 1;
      CompletionStage<Object> stage;
      try {
        stage = ((AsyncCriInterceptor) ic).interceptUnaryAsync(
            new AsyncCriInterceptor.AsyncUnaryChain<Object, Object>() {
              @Override public MethodDescriptor<Object, Object> method() { return m; }

              @Override public Object request() { return req; }

              @Override public Metadata metadata() { return call.metadata(); }

              @Override public CompletionStage<Object> proceed(Object request) {
                return asyncFrom(next, m, request, call);
              }
            });
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      if (stage == null) {
        return CompletableFuture.failedFuture(Statuses.noStage(ic, m));
      }
      if (stage instanceof CompletableFuture<Object> f) {
        return f;
      }
      CompletableFuture<Object> f = new CompletableFuture<>();
      stage.whenComplete((v, e) -> {
        if (e != null) {
          f.completeExceptionally(e);
        } else {
          f.complete(v);
        }
      });
      return f;
    }
    return call.backend(req);
  }

  /**
   * A unary call straight to the backend through grpc-java, with the client's headers and
   * deadline: a chain's second {@code proceed} (its first goes over the relay). Failing the
   * returned future first (the client went away) cancels the call.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  CompletableFuture<Object> callBackend(MethodDescriptor m, Object req, Metadata headers,
      io.grpc.Deadline deadline) {
    CompletableFuture<Object> out = new CompletableFuture<>();
    CallOptions options = deadline == null ? CallOptions.DEFAULT
        : CallOptions.DEFAULT.withDeadline(deadline);
    io.grpc.ClientCall call = withHeaders(headers).newCall(m, options);
    out.whenComplete((v, e) -> {
      if (e != null) {
        call.cancel("the proxy's client cancelled the call", null); // no-op once it ended
      }
    });
    ClientCalls.asyncUnaryCall(call, req,
        new StreamObserver<Object>() {
          @Override public void onNext(Object value) { out.complete(value); }

          @Override public void onError(Throwable t) {
            out.completeExceptionally(t instanceof StatusRuntimeException e
                ? new StatusException(BackendStatus.forClient(e.getStatus()), e.getTrailers())
                : t);
          }

          @Override public void onCompleted() {
            if (!out.isDone()) {
              out.completeExceptionally(Status.INTERNAL.withDescription("the runtime answered "
                  + m.getFullMethodName() + " with no message").asException());
            }
          }
        });
    return out;
  }

  /** Runs a server-streaming call through the chain; the outcome goes to {@code out}. */
  public <Q, R> void serverStreaming(MethodDescriptor<Q, R> m, Q req, Metadata headers,
      StreamObserver<R> out) {
    try {
      streamFrom(0, m, req, headers, out);
    } catch (RuntimeException e) {
      out.onError(Status.INTERNAL.withDescription("interceptor failed on "
          + m.getFullMethodName() + ": " + e).withCause(e).asException());
    }
  }

  private <Q, R> R callFrom(int from, MethodDescriptor<Q, R> m, Q req, Metadata headers,
      AsyncCall call) throws StatusException {
    for (int i = from; i < interceptors.size(); i++) {
      CriInterceptor ic = interceptors.get(i);
      if (ic.intercepts(m)) {
        int index = i;
        return ic.interceptUnary(new CriInterceptor.UnaryChain<Q, R>() {
          @Override public MethodDescriptor<Q, R> method() { return m; }

          @Override public Q request() { return req; }

          @Override public Metadata metadata() { return headers; }

          @Override public R proceed(Q request) throws StatusException {
            return callFrom(index + 1, m, request, headers, call);
          }
        });
      }
    }
    // the client's deadline reaches the runtime with the request headers, and the client's
    // cancellation fails the call: waiting for it needs no bound of its own
    CompletableFuture<Object> answer = call.backend(req);
    try {
      @SuppressWarnings("unchecked")
      R r = (R) answer.get();
      return r;
    } catch (ExecutionException e) {
      throw Statuses.of(e.getCause(), "backend call of " + m.getFullMethodName() + " failed");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted while waiting for the runtime's answer"
          + " to " + m.getFullMethodName()).asException();
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
    return headers == null || headers.keys().isEmpty() ? backend
        : ClientInterceptors.intercept(backend, MetadataUtils.newAttachHeadersInterceptor(headers));
  }
}
