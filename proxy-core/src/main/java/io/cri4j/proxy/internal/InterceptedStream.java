package io.cri4j.proxy.internal;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A client stream of an intercepted method, answered by the proxy itself: collects the request
 * message on the event loop, runs the interceptor chain on the executor, and writes the response
 * (headers, messages, trailers with the status) back on the event loop. A reset or a closed client
 * connection cancels the chain's context, which cancels the backend call.
 */
final class InterceptedStream {
  private static final StatusException CLIENT_CANCELLED = Status.CANCELLED
      .withDescription("the client cancelled the call or went away").asException();
  private final RelayConnection conn;
  private final int streamId;
  private final MethodDescriptor<?, ?> method;
  private final Http2Headers headers;
  private final InterceptedService service;
  private final int maxMessageSize;
  private ByteBuf body;
  private boolean ended;
  private volatile Context.CancellableContext context;
  private volatile boolean cancelled;

  InterceptedStream(RelayConnection conn, int streamId, MethodDescriptor<?, ?> method,
      Http2Headers headers, InterceptedService service, int maxMessageSize) {
    this.conn = conn;
    this.streamId = streamId;
    this.method = method;
    this.headers = headers;
    this.service = service;
    this.maxMessageSize = maxMessageSize;
  }

  /** Request bytes (on the event loop). */
  void onData(ByteBuf data, boolean endOfStream) {
    if (ended) {
      return;
    }
    if (body == null) {
      body = Unpooled.buffer(Math.min(data.readableBytes() + 64, maxMessageSize + 5));
    }
    if (body.readableBytes() + data.readableBytes() > maxMessageSize + 5L) {
      ended = true;
      body.release();
      body = null;
      answer(Status.RESOURCE_EXHAUSTED.withDescription("request of "
          + method.getFullMethodName() + " is larger than " + maxMessageSize + " bytes"), null);
      return;
    }
    body.writeBytes(data);
    if (endOfStream) {
      onEnd();
    }
  }

  /** The client half-closed (on the event loop): decode the request and run the chain. */
  void onEnd() {
    if (ended) {
      return;
    }
    ended = true;
    ByteBuf b = body;
    body = null;
    byte[] message;
    try {
      message = unframe(b);
    } catch (StatusException e) {
      answer(e.getStatus(), null);
      return;
    } finally {
      if (b != null) {
        b.release();
      }
    }
    io.cri4j.hook.internal.CriHookInterceptor hooks = service.phasedHooks(method);
    if (hooks != null) {
      runPhased(hooks, message, !hooks.inline(method));
      return;
    }
    long timeout;
    try {
      timeout = GrpcWire.timeoutNanos(headers.get(GrpcWire.GRPC_TIMEOUT));
    } catch (IllegalArgumentException e) {
      answer(Status.INTERNAL.withDescription(e.getMessage()), null);
      return;
    }
    Metadata md = GrpcWire.metadata(headers);
    Context.CancellableContext ctx = timeout >= 0
        ? Context.ROOT.withDeadline(Deadline.after(timeout, TimeUnit.NANOSECONDS),
            conn.eventLoop())
        : Context.ROOT.withCancellation();
    context = ctx;
    if (cancelled) {
      ctx.cancel(CLIENT_CANCELLED);
      return;
    }
    try {
      service.executor().execute(ctx.wrap(() -> run(message, md)));
    } catch (RejectedExecutionException e) {
      ctx.cancel(e);
      answer(Status.UNAVAILABLE.withDescription("the proxy is shutting down"), null);
    }
  }

  /**
   * A call only the hooks want, in two phases around the backend call (on the event loop). The
   * pre phase runs here when every hook of the method never blocks; with {@code offLoop}, the
   * hooks that may block run on hook threads, bounded by timeouts the event loop keeps, and the
   * call goes on from the thread that finished the last one. The changed request goes out on the
   * paired backend connection with the client's headers (so the backend sees the client's
   * deadline); the answer is collected on the event loop, given to the post phase (there, or on a
   * worker when a post hook may block) and written back. A failed call's answer goes back as it
   * came.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private void runPhased(io.cri4j.hook.internal.CriHookInterceptor hooks, byte[] message,
      boolean offLoop) {
    MethodDescriptor m = method;
    Object request = parse(message);
    if (request == null) {
      return;
    }
    if (offLoop) {
      hooks.beginAsync(m, request, conn.eventLoop()).whenComplete((phase, failure) -> {
        if (failure != null) {
          hooksFailed(failure instanceof java.util.concurrent.CompletionException
              && failure.getCause() != null ? failure.getCause() : failure);
        } else {
          try {
            forward(phase, request, message);
          } catch (RuntimeException e) {
            hooksFailed(e); // the changed request could not be encoded
          }
        }
      });
      return;
    }
    io.cri4j.hook.internal.CriHookInterceptor.Phase phase;
    try {
      phase = hooks.begin(m, request);
    } catch (StatusException | RuntimeException e) {
      hooksFailed(e);
      return;
    }
    forward(phase, request, message);
  }

  private void hooksFailed(Throwable e) {
    if (e instanceof StatusException se) {
      answer(se.getStatus(), se.getTrailers());
    } else {
      answer(Status.INTERNAL.withDescription("hooks failed on " + method.getFullMethodName()
          + ": " + e), null);
    }
  }

  /** Sends the phase's request (the original bytes if the hooks changed nothing). */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private void forward(io.cri4j.hook.internal.CriHookInterceptor.Phase phase, Object request,
      byte[] message) {
    MethodDescriptor m = method;
    ByteBuf body;
    if (phase == null || phase.request() == request) {
      body = Unpooled.buffer(5 + message.length).writeByte(0).writeInt(message.length)
          .writeBytes(message);
    } else {
      body = frame(m.streamRequest(phase.request()));
    }
    onLoop(() -> {
      RelayConnection.Pair p = conn.pair(streamId);
      if (p == null || cancelled) {
        body.release();
        return;
      }
      conn.forwardCaptured(p, headers, body, new RelayConnection.Capture(maxMessageSize + 5,
          answer -> onBackendAnswer(p, phase, answer)));
    });
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private void onBackendAnswer(RelayConnection.Pair p,
      io.cri4j.hook.internal.CriHookInterceptor.Phase phase, RelayConnection.Capture answer) {
    if (cancelled) {
      answer.release();
      return;
    }
    if (answer.tooLarge) {
      answer.release();
      conn.finish(p, Status.RESOURCE_EXHAUSTED.withDescription("response of "
          + method.getFullMethodName() + " is larger than " + maxMessageSize + " bytes"), null);
      return;
    }
    Http2Headers end = answer.trailers != null ? answer.trailers : answer.headers;
    CharSequence status = end == null ? null : end.get(GrpcWire.GRPC_STATUS);
    ByteBuf body = answer.body;
    answer.body = null;
    boolean ok = status != null && "0".contentEquals(status);
    if (phase == null || !ok || body == null || body.readableBytes() < 5
        || body.getByte(body.readerIndex()) != 0) {
      // an error, or nothing the post phase can read: the backend's answer as it is
      conn.answerCaptured(p, answer, body);
      return;
    }
    Object response;
    try {
      byte[] bytes = new byte[body.readableBytes() - 5];
      body.getBytes(body.readerIndex() + 5, bytes);
      response = method.parseResponse(new ByteArrayInputStream(bytes));
    } catch (RuntimeException e) {
      conn.answerCaptured(p, answer, body);
      return;
    }
    if (!service.postPhaseInline(method)) {
      // a post hook may block: the post phase leaves the event loop
      try {
        service.executor().execute(() -> complete(p, phase, response, body, answer));
      } catch (RejectedExecutionException e) {
        body.release();
        answer.release();
        conn.finish(p, Status.UNAVAILABLE.withDescription("the proxy is shutting down"), null);
      }
      return;
    }
    complete(p, phase, response, body, answer);
  }

  /** The post phase and the answer (on the event loop, or on a worker then the event loop). */
  @SuppressWarnings("rawtypes")
  private void complete(RelayConnection.Pair p,
      io.cri4j.hook.internal.CriHookInterceptor.Phase phase, Object response, ByteBuf body,
      RelayConnection.Capture answer) {
    Object out;
    try {
      out = phase.complete(response);
    } catch (StatusException e) {
      body.release();
      answer.release();
      onLoop(() -> conn.finish(p, e.getStatus(), e.getTrailers()));
      return;
    } catch (RuntimeException e) {
      body.release();
      answer.release();
      onLoop(() -> conn.finish(p, Status.INTERNAL.withDescription(
          "hooks failed after " + method.getFullMethodName() + ": " + e), null));
      return;
    }
    ByteBuf message;
    if (out == response) {
      message = body;
    } else {
      body.release();
      message = frame(((MethodDescriptor) method).streamResponse(out));
    }
    onLoop(() -> conn.answerCaptured(p, answer, message));
  }

  /** Runs {@code task} on the event loop: now if this is it, else as a task there. */
  private void onLoop(Runnable task) {
    if (conn.eventLoop().inEventLoop()) {
      task.run();
    } else {
      conn.execute(task);
    }
  }

  /** A message with gRPC's 5-byte prefix, from a marshaller's stream. */
  private static ByteBuf frame(InputStream in) {
    byte[] bytes;
    try (in) {
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new StatusRuntimeException(Status.INTERNAL.withCause(e));
    }
    return Unpooled.buffer(5 + bytes.length).writeByte(0).writeInt(bytes.length)
        .writeBytes(bytes);
  }

  /** The client reset the stream or went away. */
  void cancel() {
    cancelled = true;
    ended = true;
    if (body != null) {
      body.release();
      body = null;
    }
    Context.CancellableContext ctx = context;
    if (ctx != null) {
      ctx.cancel(CLIENT_CANCELLED);
    }
  }

  private byte[] unframe(ByteBuf b) throws StatusException {
    if (b == null || b.readableBytes() < 5) {
      throw Status.INTERNAL.withDescription("no request message for "
          + method.getFullMethodName()).asException();
    }
    int flags = b.readUnsignedByte();
    long length = b.readUnsignedInt();
    if (flags != 0) {
      throw Status.UNIMPLEMENTED.withDescription("compressed requests are not accepted for "
          + method.getFullMethodName() + " (the proxy decodes it for its interceptors)")
          .asException();
    }
    if (length != b.readableBytes()) {
      throw Status.INTERNAL.withDescription("expected one request message for "
          + method.getFullMethodName() + " of " + length + " bytes, got "
          + b.readableBytes()).asException();
    }
    byte[] message = new byte[(int) length];
    b.readBytes(message);
    return message;
  }

  /** The request message, or null once the call was answered with INTERNAL (unparsable). */
  private Object parse(byte[] message) {
    try {
      return method.parseRequest(new ByteArrayInputStream(message));
    } catch (RuntimeException e) {
      answer(Status.INTERNAL.withDescription("cannot parse the request of "
          + method.getFullMethodName() + ": " + e.getMessage()), null);
      return null;
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private void run(byte[] message, Metadata md) {
    MethodDescriptor m = method;
    Object request = parse(message);
    if (request == null) {
      return;
    }
    if (m.getType() == MethodDescriptor.MethodType.UNARY) {
      try {
        // message and trailers in one event-loop task: one wake-up, one flush
        send(m, service.unary(m, request, md), true);
      } catch (StatusException e) {
        answer(e.getStatus(), e.getTrailers());
      }
      return;
    }
    service.serverStreaming(m, request, md, new StreamObserver<Object>() {
      @Override
      public void onNext(Object value) {
        send(m, value, false);
      }

      @Override
      public void onError(Throwable t) {
        Status s = Status.fromThrowable(t);
        answer(s, Status.trailersFromThrowable(t));
      }

      @Override
      public void onCompleted() {
        answer(Status.OK, null);
      }
    });
  }

  /** A response message with gRPC's 5-byte prefix (uncompressed, length). */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static ByteBuf frame(MethodDescriptor m, Object response) {
    return frame(m.streamResponse(response));
  }

  /** Writes a message on the event loop; with {@code last}, the OK trailers in the same task. */
  @SuppressWarnings("rawtypes")
  private void send(MethodDescriptor m, Object response, boolean last) {
    ByteBuf framed = frame(m, response);
    conn.execute(() -> {
      RelayConnection.Pair p = conn.pair(streamId);
      if (p == null || cancelled) {
        framed.release();
        return;
      }
      conn.sendMessage(p, framed);
      if (last) {
        conn.finish(p, Status.OK, null);
      }
    });
  }

  /**
   * Ends the stream with {@code status}, from any thread. Always a task on the event loop, even
   * from the loop itself: queued behind the messages {@link #send} queued before it.
   */
  private void answer(Status status, Metadata trailers) {
    conn.execute(() -> {
      RelayConnection.Pair p = conn.pair(streamId);
      if (p != null && !cancelled) {
        conn.finish(p, status, trailers);
      }
    });
  }
}
