package io.cri4j.proxy.internal;

import io.cri4j.hook.CriInterceptor;
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
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;

/**
 * Runs the interceptor chain on the calls some interceptor wants, decoded, and ends the chain
 * with the call to the backend (request headers forwarded). The relay ({@link RelayConnection})
 * hands such calls here on the {@link #executor()} (interceptors may block); everything else it
 * forwards as HTTP/2 frames and never decodes.
 */
public final class InterceptedService {
  private final Channel backend;
  private final List<CriInterceptor> interceptors;
  private final Executor executor;
  private final Map<AsciiString, MethodDescriptor<?, ?>> byPath = new HashMap<>();
  private final InlineHooks inlineHooks;
  /** Methods no interceptor but the hooks' wants: candidates for the I/O-thread path. */
  private final java.util.Set<MethodDescriptor<?, ?>> hooksOnly = new java.util.HashSet<>();

  /**
   * The runtime hooks in the chain, for calls handled without leaving the I/O thread.
   *
   * @param gate the hooks' entry in the chain
   * @param hooks the hook interceptor behind it
   * @param apply whether the hooks apply to a method right now (false: the chain decides)
   */
  public record InlineHooks(CriInterceptor gate,
      io.cri4j.hook.internal.CriHookInterceptor hooks,
      java.util.function.Predicate<MethodDescriptor<?, ?>> apply) {}

  /**
   * @param backend the channel calls proceed on
   * @param interceptors the chain, outermost first
   * @param executor runs the chains (never an event loop)
   * @param methods the methods that may be intercepted; those no interceptor wants, and
   *     client-streaming or bidirectional ones, stay pass-through
   */
  public InterceptedService(Channel backend, List<CriInterceptor> interceptors,
      Executor executor, List<MethodDescriptor<?, ?>> methods, InlineHooks inlineHooks) {
    this.backend = backend;
    this.interceptors = List.copyOf(interceptors);
    this.executor = executor;
    this.inlineHooks = inlineHooks;
    for (MethodDescriptor<?, ?> m : methods) {
      MethodDescriptor.MethodType t = m.getType();
      if (wanted(m) && (t == MethodDescriptor.MethodType.UNARY
          || t == MethodDescriptor.MethodType.SERVER_STREAMING)) {
        byPath.put(AsciiString.of("/" + m.getFullMethodName()), m);
        if (inlineHooks != null && t == MethodDescriptor.MethodType.UNARY
            && this.interceptors.stream().filter(i -> i.intercepts(m))
                .allMatch(i -> i == inlineHooks.gate())) {
          hooksOnly.add(m);
        }
      }
    }
  }

  /**
   * The hooks, when this call of {@code m} may be handled in two phases around a backend call on
   * the relay's connection: only the hooks want the method and they apply to it now; else null
   * (the call runs through the chain on a worker).
   */
  public io.cri4j.hook.internal.CriHookInterceptor phasedHooks(MethodDescriptor<?, ?> m) {
    if (!hooksOnly.contains(m) || !inlineHooks.apply().test(m)) {
      return null;
    }
    return inlineHooks.hooks();
  }

  /** True when the post phase of {@code m} may run on the I/O thread (no post hook blocks). */
  public boolean postPhaseInline(MethodDescriptor<?, ?> m) {
    return inlineHooks != null && inlineHooks.hooks().inlineAfter(m);
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
   * Runs a unary call through the chain.
   *
   * @throws StatusException the status to answer with (an interceptor's, the backend's, or
   *     INTERNAL naming the method when an interceptor threw something else)
   */
  public <Q, R> R unary(MethodDescriptor<Q, R> m, Q req, Metadata headers)
      throws StatusException {
    try {
      return callFrom(0, m, req, headers);
    } catch (StatusRuntimeException e) {
      throw new StatusException(e.getStatus(), e.getTrailers());
    } catch (RuntimeException e) {
      throw Status.INTERNAL.withDescription("interceptor failed on " + m.getFullMethodName()
          + ": " + e).withCause(e).asException();
    }
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
    return headers == null || headers.keys().isEmpty() ? backend
        : ClientInterceptors.intercept(backend, MetadataUtils.newAttachHeadersInterceptor(headers));
  }
}
